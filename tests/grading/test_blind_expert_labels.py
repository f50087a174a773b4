"""Each calibration grader labels an answer blind to the other, as the grading page keeps
them: the console shows neither grader the other's labels of an answer until both grades of
it are in; other researchers see every label."""

import csv
import io
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from apps.grading.models import ExpertJudgment
from tests.grading.calibration_builders import (  # noqa: F401  (fixtures)
    grade,
    set_make,
    world_fixture,
)

pytestmark = pytest.mark.django_db

NOTE = "The author's own reasoning about this criterion"
CHANGELIST = "admin:grading_expertjudgment_changelist"


@pytest.fixture
def site(world):
    world.set = set_make(world)
    world.sample = world.set.samples.order_by("question_id").first()
    grade(world.sample, world.author, lambda c: True, note=NOTE)
    return world


def seen(user, sample) -> dict[str, bool]:
    """What `user` reads of the author's labels of `sample` through the console."""
    client = Client()
    client.force_login(user)
    row = ExpertJudgment.objects.filter(sample=sample).first()
    searched = client.get(reverse(CHANGELIST), {"q": "own reasoning"}).content.decode()
    page = client.get(reverse("admin:grading_expertjudgment_change", args=[row.pk]))
    assert page.status_code in (200, 302)
    every = {"action": "export_as_csv", "select_across": "1", "_selected_action": ["0"]}
    response = client.post(reverse(CHANGELIST), every)
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    return {
        "search": 'class="field-first_met"' in searched,
        "page": page.status_code == 200 and NOTE in unescape(page.content.decode()),
        "export": any(r["first_note"] == NOTE for r in rows),
    }


def test_the_second_grader_reads_the_authors_labels_only_once_their_own_are_in(site):
    assert not any(seen(site.second, site.sample).values())
    assert all(seen(site.researcher, site.sample).values())
    grade(site.sample, site.second, lambda c: False)
    assert all(seen(site.second, site.sample).values())
