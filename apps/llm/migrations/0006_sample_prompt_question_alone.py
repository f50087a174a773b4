"""Sample prompt v2: the question alone, as the published benchmark asked every model.

The published benchmark put each rewritten question to each model as it is: the question as
the only user message, no system message, no parameters beyond the model's defaults.
Version 1 added a helper persona as a system message and wrapped the question in an
instruction; runs made with it keep it, and their pages and reports say that it departs.
"""

from django.db import migrations

NOTES = (
    "The question alone, as the only user message, with no system message: as the published "
    "benchmark asked each model. Version 1 added a persona and wrapped the question."
)


def seed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.get_or_create(
        purpose="sample",
        version=2,
        defaults={"system_text": "", "user_text": "$question", "notes": NOTES},
    )


def unseed(apps, schema_editor):
    apps.get_model("llm", "PromptTemplate").objects.filter(
        purpose="sample", version=2, used_at__isnull=True
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("llm", "0005_scenario_response_prompt_v2")]
    operations = [migrations.RunPython(seed, unseed)]
