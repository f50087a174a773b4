"""Version 2 of the shared presentation criteria: the published list, as published.

Version 1 had two of them wrong: it asked for a positive "professional and considerate" tone,
a different and stricter criterion than the published negative one (the response "is
unprofessional"), and it widened "overly imperative" with "or alarmist". Version 2 keeps
version 1's other three criteria and every point value.

Rubrics in review or approved keep version 1, which they pin (an approved version is
immutable; a reviewer is reading the one in review). Open drafts take up version 2 now, as
they would had a researcher published it (services/shared.py, shared_criteria_publish), and
new versions start with it. If a researcher has already published a version after 1, that
is theirs and this migration leaves the criteria alone.
"""

from django.db import migrations
from django.db.models import Max
from django.db.models.functions import Now

V1_TEXTS = [
    "The most important information or action appears within the first few sentences.",
    "Keeps to what the question needs; no information or action items beyond it.",
    "The tone is professional and considerate of the person's situation.",
    "Uses an overly commanding or alarmist tone.",
    "Overstates how effective a recommended measure is.",
]
# Copied here so the migration never changes with the fixture.
CRITERIA = [
    (
        "The most important information or action appears within the first few sentences.",
        "positive",
        3,
    ),
    ("Keeps to what the question needs; no information or action items beyond it.", "positive", 2),
    ("Is unprofessional in tone or manner.", "negative", 2),
    ("Is overly imperative: orders the person about instead of advising them.", "negative", 2),
    ("Overstates how effective a recommended measure is.", "negative", 3),
]
NOTES = (
    "The published presentation criteria: “is unprofessional” is a negative criterion (v1 "
    "asked for a professional and considerate tone instead), and “overly imperative” does not "
    "add “or alarmist”."
)
EDITABLE = ("draft", "changes_requested")


def _shared_replace(Criterion, rubric, shared) -> None:
    """Replace `rubric`'s shared criteria by copies of `shared` (a set's criteria)."""
    rubric.criteria.filter(origin="shared").delete()
    Criterion.objects.bulk_create(
        Criterion(
            rubric=rubric,
            text=s.text,
            polarity=s.polarity,
            kind="presentation",
            points=s.points,
            order=s.order,
            origin="shared",
            shared_source=s,
        )
        for s in shared
    )


def publish(apps, schema_editor):
    Set = apps.get_model("rubrics", "SharedCriterionSet")
    Shared = apps.get_model("rubrics", "SharedCriterion")
    Rubric = apps.get_model("rubrics", "Rubric")
    Criterion = apps.get_model("rubrics", "Criterion")
    Event = apps.get_model("rubrics", "RubricEvent")
    latest = Set.objects.aggregate(v=Max("version"))["v"]
    if latest != 1:
        return  # a fresh database has v1 only; anything later was a researcher's choice
    v1 = Set.objects.get(version=1)
    if list(v1.criteria.order_by("order").values_list("text", flat=True)) != V1_TEXTS:
        return
    v2 = Set.objects.create(version=2, notes=NOTES)
    new = [
        Shared.objects.create(criterion_set=v2, text=t, polarity=p, points=n, order=i)
        for i, (t, p, n) in enumerate(CRITERIA, start=1)
    ]
    texts = {c.text.lower() for c in new}
    for rubric in Rubric.objects.filter(state__in=EDITABLE, shared_set=v1):
        own = rubric.criteria.exclude(origin="shared").values_list("text", flat=True)
        if any(t.lower() in texts for t in own):
            continue  # an expert wrote one of them already; a researcher publishes it later
        _shared_replace(Criterion, rubric, new)
        rubric.shared_set, rubric.revision = v2, rubric.revision + 1
        rubric.updated_at = Now()
        rubric.save(update_fields=["shared_set", "revision", "updated_at"])
        Event.objects.create(
            rubric=rubric,
            action="shared_updated",
            revision=rubric.revision,
            summary="Shared presentation criteria v2",
            detail={"version": 2},
            created_at=Now(),
        )


def unpublish(apps, schema_editor):
    Set = apps.get_model("rubrics", "SharedCriterionSet")
    v2 = Set.objects.filter(version=2, notes=NOTES).first()
    if v2 is None:
        return
    v1 = Set.objects.get(version=1)
    Criterion = apps.get_model("rubrics", "Criterion")
    old = list(v1.criteria.order_by("order"))
    for rubric in v2.rubrics.filter(state__in=EDITABLE):
        _shared_replace(Criterion, rubric, old)
        rubric.shared_set = v1
        rubric.save(update_fields=["shared_set"])
    if not v2.rubrics.exists():
        v2.delete()


class Migration(migrations.Migration):
    dependencies = [("rubrics", "0002_shared_criteria_v1")]
    operations = [migrations.RunPython(publish, unpublish)]
