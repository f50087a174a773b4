from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations


class Migration(migrations.Migration):
    """pg_trgm: trigram similarity between questions (the rubric editor's consistency panel).

    A trusted extension since PostgreSQL 13: the database owner may create it.
    """

    dependencies = [("questions", "0002_seed_topics")]
    operations = [TrigramExtension()]
