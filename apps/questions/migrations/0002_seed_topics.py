from django.db import migrations

# The nine topics of the question bank (docs/question-bank.md, "Topics"; questions.json's "topics").
TOPICS = [
    ("accounts", "accounts"),
    ("moderation-tools", "moderation tools"),
    ("security-tools", "security tools"),
    ("privacy-tools", "privacy tools"),
    ("compromise", "compromise"),
    ("platform-actions", "platform actions"),
    ("scams", "scams"),
    ("harassment", "harassment"),
    ("data-concerns", "data concerns"),
]


def seed(apps, schema_editor):
    Topic = apps.get_model("questions", "Topic")
    for order, (slug, name) in enumerate(TOPICS, start=1):
        Topic.objects.update_or_create(slug=slug, defaults={"name": name, "order": order})


def unseed(apps, schema_editor):
    apps.get_model("questions", "Topic").objects.filter(
        slug__in=[slug for slug, _ in TOPICS], questions=None
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("questions", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
