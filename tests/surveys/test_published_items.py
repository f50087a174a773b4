"""The default items carry the published scale labels where the paper quotes them, and the
published groups; the migration that brought them changes no study anyone has answered."""

from importlib import import_module

import pytest
from django.apps import apps

from apps.surveys.models import ItemGroup, SurveyItem
from tests.analysis.builders import person, rate

pytestmark = pytest.mark.django_db

MIGRATION = import_module("apps.surveys.migrations.0008_published_scale_labels")
PUBLISHED_H3 = [
    "Extremely unlikely",
    "Somewhat unlikely",
    "Neither likely nor unlikely",
    "Somewhat likely",
    "Extremely likely",
]


def test_the_default_h3_asks_how_likely_on_the_published_labels():
    h3 = SurveyItem.objects.get(study=None, code="H3")

    assert h3.scale_labels == PUBLISHED_H3 == MIGRATION.LABELS
    assert "how likely" in h3.wording and "use this response" in h3.wording


def test_the_default_items_are_in_the_published_groups():
    groups = dict(SurveyItem.objects.filter(study=None).values_list("code", "group"))

    assert groups == {
        "H1": ItemGroup.HELPFULNESS,
        "H2": ItemGroup.HELPFULNESS,
        "H3": ItemGroup.HELPFULNESS,
        "P1": ItemGroup.PRIVACY,
        "P2": ItemGroup.PRIVACY,
        "P3": ItemGroup.PRIVACY,
        "P4": ItemGroup.PRIVACY,
    }


def test_a_new_study_copies_the_labels_and_groups(make_study):
    study = make_study(live=False, count=1)

    h3 = study.items.get(code="H3")
    assert h3.scale_labels == PUBLISHED_H3 and h3.group == ItemGroup.HELPFULNESS


def test_the_migration_updates_unanswered_studies_and_leaves_answered_ones(make_study):
    fresh, answered = make_study(live=False, count=2), make_study(live=False, count=2)
    old = {"scale_labels": MIGRATION.OLD_LABELS, "wording": MIGRATION.OLD_WORDING}
    SurveyItem.objects.filter(code="H3").update(**old)
    SurveyItem.objects.update(group="")
    rate(person(answered, 1), {0: {"H3": "2"}})

    MIGRATION.items_update(apps, None)

    for items in (SurveyItem.objects.filter(study=None), fresh.items):
        h3 = items.get(code="H3")
        assert (h3.scale_labels, h3.wording) == (MIGRATION.LABELS, MIGRATION.WORDING)
    kept = answered.items.get(code="H3")
    assert (kept.scale_labels, kept.wording) == (old["scale_labels"], old["wording"])
    # Groups are the analysis's label, not what anyone saw: every study gets them.
    assert set(answered.items.values_list("group", flat=True)) == {"helpfulness", "privacy"}
    assert answered.items.get(code="P3").group == ItemGroup.PRIVACY

    MIGRATION.items_restore(apps, None)

    assert fresh.items.get(code="H3").scale_labels == old["scale_labels"]
    assert answered.items.get(code="H3").scale_labels == old["scale_labels"]


def test_a_researchers_own_labels_are_left_as_they_are(make_study):
    study = make_study(live=False, count=1)
    own = ["Never", "Rarely", "Sometimes", "Often", "Always"]
    study.items.filter(code="H3").update(scale_labels=own)

    MIGRATION.items_update(apps, None)

    assert study.items.get(code="H3").scale_labels == own
