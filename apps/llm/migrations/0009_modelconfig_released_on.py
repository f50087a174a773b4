"""A model's release date: reports pick each family's newest model by it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("llm", "0008_embeddings")]
    operations = [
        migrations.AddField(
            model_name="modelconfig",
            name="released_on",
            field=models.DateField(
                blank=True,
                help_text="When the provider released this version. Reports pick a family's "
                "newest model by it (by when the model was added here, when no model of the "
                "family has one).",
                null=True,
                verbose_name="release date",
            ),
        ),
    ]
