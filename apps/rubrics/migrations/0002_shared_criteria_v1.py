from django.db import migrations

# Version 1 of the shared presentation criteria, from questions.json's
# "presentation_criteria" (the published list: key information first; no more information or
# actions than the question needs; professional tone; not overly commanding; not overstating
# how well a measure works). Copied here so the migration never changes with the fixture.
CRITERIA = [
    (
        "The most important information or action appears within the first few sentences.",
        "positive",
        3,
    ),
    ("Keeps to what the question needs; no information or action items beyond it.", "positive", 2),
    ("The tone is professional and considerate of the person's situation.", "positive", 2),
    ("Uses an overly commanding or alarmist tone.", "negative", 2),
    ("Overstates how effective a recommended measure is.", "negative", 3),
]


def seed(apps, schema_editor):
    SharedCriterionSet = apps.get_model("rubrics", "SharedCriterionSet")
    SharedCriterion = apps.get_model("rubrics", "SharedCriterion")
    if SharedCriterionSet.objects.exists():
        return
    first = SharedCriterionSet.objects.create(
        version=1, notes="The published presentation criteria (questions.json)."
    )
    for order, (text, polarity, points) in enumerate(CRITERIA, start=1):
        SharedCriterion.objects.create(
            criterion_set=first, text=text, polarity=polarity, points=points, order=order
        )


def unseed(apps, schema_editor):
    apps.get_model("rubrics", "SharedCriterionSet").objects.filter(version=1, rubrics=None).delete()


class Migration(migrations.Migration):
    dependencies = [("rubrics", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
