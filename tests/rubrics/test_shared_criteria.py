"""The shared presentation criteria as published (migration 0003), and who carries which."""

from importlib import import_module

from django.apps import apps

from apps.rubrics import services
from apps.rubrics.models import EventAction, Origin, SharedCriterionSet
from tests.factories import approved_rubric, draft_with_criteria, question_assigned, question_make

V2 = import_module("apps.rubrics.migrations.0003_shared_criteria_v2_as_published")


def shared(rubric):
    return list(
        rubric.criteria.filter(origin=Origin.SHARED)
        .order_by("order")
        .values_list("text", "polarity", "points")
    )


def test_the_shared_criteria_are_the_published_ones(expert):
    current = services.shared_criteria_current()
    assert current.version == 2
    criteria = {c.text: c.polarity for c in current.criteria.all()}
    assert criteria["Is unprofessional in tone or manner."] == "negative"
    imperative = [t for t in criteria if "imperative" in t]
    assert len(imperative) == 1 and criteria[imperative[0]] == "negative"
    assert not any("alarmist" in t or "professional and considerate" in t for t in criteria)
    rubric = services.rubric_start(question=question_assigned(expert), user=expert)
    assert rubric.shared_set == current
    assert shared(rubric) == [(c.text, c.polarity, c.points) for c in current.criteria.all()]
    assert sum(c.points for c in current.criteria.all()) == 12  # v1's points, unchanged


def test_approved_rubrics_keep_version_1_and_open_drafts_take_up_version_2(
    expert, expert2, reviewer
):
    # As before the migration: version 1 only, and rubrics written with it.
    SharedCriterionSet.objects.filter(version__gt=1).delete()
    v1 = SharedCriterionSet.objects.get(version=1)
    approved = approved_rubric(question_make(), expert, reviewer)
    in_review = draft_with_criteria(question_make(), expert2)
    services.rubric_submit_for_review(rubric=in_review, user=expert2)
    draft = draft_with_criteria(question_make(), expert)
    v1_rows = shared(approved)
    assert (
        "The tone is professional and considerate of the person's situation.",
        "positive",
        2,
    ) in v1_rows
    revision = draft.revision

    V2.publish(apps, None)

    v2 = SharedCriterionSet.objects.get(version=2)
    for kept in (approved, in_review):
        kept.refresh_from_db()
        assert kept.shared_set == v1 and shared(kept) == v1_rows
    draft.refresh_from_db()
    assert draft.shared_set == v2 and draft.revision == revision + 1
    assert ("Is unprofessional in tone or manner.", "negative", 2) in shared(draft)
    assert draft.events.filter(action=EventAction.SHARED_UPDATED).exists()
    assert draft.criteria.exclude(origin=Origin.SHARED).count() == 3, "own criteria stay"
    fresh = services.rubric_start(question=question_assigned(expert2), user=expert2)
    assert fresh.shared_set == v2

    V2.publish(apps, None)  # run again (a reseed, a re-applied migration): nothing more
    assert SharedCriterionSet.objects.count() == 2
