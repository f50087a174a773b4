"""Values experts' and researchers' browsers send to the grading pages: a NUL, a note past
its limit, a number that is not one. Each is refused on the page (200 for an HTMX fragment,
400 for a page) or taken as not given, never a 500, and nothing of a refused form is saved."""

import html
import re

import pytest
from django.urls import reverse

from apps.grading.models import Calibration, ExpertJudgment, GradingRun
from apps.grading.services.calibration import calibration_create
from apps.rubrics.models import Kind
from tests.grading.calibration_builders import (  # noqa: F401  (fixtures)
    grade,
    graded,
    grader_model,
    set_make,
    world_fixture,
)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
NOTE_MAX_CHARS = 5_000  # a grader's note
NUMBERS = ["abc", "²", "-1", "1.5", "99999999999999999999", "\x00"]
TOO_LONG = f"A note is at most {NOTE_MAX_CHARS:,} characters (this one has 2000000)."
NOTES = {
    "NUL": ("Clear\x00.", "Null characters are not allowed."),
    "2,000,000": ("x" * 2_000_000, TOO_LONG),
}


@pytest.fixture
def site(world, offline_provider_url):
    run = graded(world.run, grader_model(offline_provider_url))
    world.set = set_make(world)
    world.grading = run
    world.calibration = calibration_create(
        calibration_set=world.set, grading_run=run, user=world.researcher
    )
    world.sample = world.set.samples.order_by("question_id").first()
    return world


def criteria(sample) -> list[int]:
    return list(
        sample.judgments.order_by("criterion__order").values_list("criterion_id", flat=True)
    )


def stored(sample) -> list[tuple]:
    return list(sample.judgments.order_by("pk").values_list("first_met", "first_note"))


@pytest.mark.parametrize("kind", list(NOTES))
def test_a_grading_note_that_cannot_be_kept_refuses_the_grade_on_the_page(client, site, kind):
    note, expected = NOTES[kind]
    first, *rest = criteria(site.sample)
    client.force_login(site.author)
    before = stored(site.sample)
    data = {f"met-{pk}": "1" for pk in (first, *rest)} | {f"note-{first}": note}
    page = client.post(reverse("grading:calibration_grade", args=[site.sample.pk]), data)
    assert page.status_code == 400
    assert expected in page.text and 'data-testid="criterion-error"' in page.text
    assert "Nothing was saved" in page.text
    assert page.text.count(" checked") == len(data) - 1  # the labels as they were sent
    assert stored(site.sample) == before
    site.sample.refresh_from_db()
    assert site.sample.first_done_at is None


def test_a_grading_note_of_the_limit_is_kept(client, site):
    first, *_rest = criteria(site.sample)
    client.force_login(site.author)
    url = reverse("grading:calibration_grade", args=[site.sample.pk])
    client.post(url, {f"met-{first}": "1", f"note-{first}": "n" * NOTE_MAX_CHARS})
    row = ExpertJudgment.objects.get(sample=site.sample, criterion_id=first)
    assert (row.first_met, len(row.first_note)) == (True, NOTE_MAX_CHARS)


@pytest.mark.parametrize("value", ["2", "\x00", "yes"])
def test_a_label_that_is_neither_met_nor_not_met_refuses_the_grade(client, site, value):
    first, *_rest = criteria(site.sample)
    client.force_login(site.author)
    url = reverse("grading:calibration_grade", args=[site.sample.pk])
    page = client.post(url, {f"met-{first}": value, f"note-{first}": "kept?"})
    assert page.status_code == 400 and 'data-testid="criterion-error"' in page.text
    assert "kept?" in page.text
    assert stored(site.sample) == [(None, "")] * len(criteria(site.sample))


def disagreement(site):
    factual = site.sample.rubric.criteria.filter(kind=Kind.FACTUAL).order_by("order").first()
    grade(site.sample, site.author, lambda c: True)
    grade(site.sample, site.second, lambda c: c.pk != factual.pk)
    return factual


@pytest.mark.parametrize("kind", list(NOTES))
def test_a_settling_note_that_cannot_be_kept_is_refused_beside_its_criterion(client, site, kind):
    note, expected = NOTES[kind]
    factual = disagreement(site)
    client.force_login(site.author)
    url = reverse("grading:calibration_adjudicate", args=[site.sample.pk])
    data = {f"final-{factual.pk}": "0", f"note-{factual.pk}": note}
    fragment = client.post(url, data, **HX)
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert expected in fragment.text and 'data-testid="criterion-error"' in fragment.text
    assert "Nothing was saved" in fragment.text
    page = client.post(url, data)
    assert page.status_code == 400 and expected in page.text
    row = ExpertJudgment.objects.get(sample=site.sample, criterion=factual)
    assert (row.final_met, row.resolution_note) == (None, "")


@pytest.mark.parametrize("value", ["2", "\x00", "yes", "1" * 40])
def test_a_final_label_that_is_neither_met_nor_not_met_is_refused(client, site, value):
    factual = disagreement(site)
    client.force_login(site.author)
    url = reverse("grading:calibration_adjudicate", args=[site.sample.pk])
    fragment = client.post(url, {f"final-{factual.pk}": value}, **HX)
    assert fragment.status_code == 200 and "Nothing was saved" in fragment.text
    page = client.post(url, {f"final-{factual.pk}": value})
    assert page.status_code == 400
    assert ExpertJudgment.objects.get(sample=site.sample, criterion=factual).final_met is None


@pytest.mark.parametrize("value", NUMBERS)
def test_calibrating_a_grading_run_that_is_not_one_is_refused(client, site, value):
    client.force_login(site.researcher)
    url = reverse("grading:calibration_open", args=[site.set.pk])
    page = client.post(url, {"grading_run": value}, follow=True)
    assert page.status_code == 200
    assert "Choose one of this sampling run" in page.text
    assert Calibration.objects.count() == 1


@pytest.mark.parametrize("value", [*NUMBERS, "x" * 100_000])
def test_the_report_takes_odd_filters_as_not_given(client, site, value):
    client.force_login(site.researcher)
    url = reverse("grading:calibration_report", args=[site.calibration.pk])
    query = dict.fromkeys(("compare", "model", "kind", "polarity", "direction", "page"), value)
    for extra in ({}, HX):
        assert client.get(url, query, **extra).status_code == 200


@pytest.mark.parametrize("value", [*NUMBERS, "x" * 100_000])
def test_the_judgments_list_takes_odd_filters_as_not_given(client, site, value):
    client.force_login(site.researcher)
    url = reverse("grading:judgments", args=[site.grading.pk])
    names = ("status", "met", "kind", "polarity", "model", "question", "response", "page")
    page = client.get(url, dict.fromkeys(names, value))
    assert page.status_code == 200 and 'data-testid="judgment"' in page.text


@pytest.mark.parametrize("value", ["\x00", "abc", "x" * 100_000])
def test_retrying_an_unknown_kind_of_error_is_refused(client, site, value):
    client.force_login(site.researcher)
    url = reverse("grading:run_retry", args=[site.grading.pk])
    page = client.post(url, {"error_kind": value}, follow=True)
    assert page.status_code == 200 and "Unknown kind of error" in page.text


@pytest.mark.parametrize("value", ["9" * 30, "1e400", "\x00", "NaN"])
def test_a_budget_past_the_column_is_refused(client, site, value):
    client.force_login(site.researcher)
    url = reverse("grading:run_budget", args=[site.grading.pk])
    page = client.post(url, {"budget_usd": value}, follow=True)
    assert page.status_code == 200 and re.search(r"Budget: (Ensure|Enter)", page.text)
    site.grading.refresh_from_db()
    assert site.grading.budget_usd is None


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ('{"stop": "\\u0000"}', "stop: a NUL character"),
        ('{"stop": "\\udfff"}', "stop: a lone surrogate (\\udfff)"),
        ('{"top_p": 1, "top_p": 0.5}', 'the key "top_p" appears twice'),
        ('{"stop": "' + "x" * 10_000 + '"}', "at most 10000 characters"),
    ],
    ids=["escaped NUL", "lone surrogate", "key twice", "past the limit"],
)
def test_grader_parameters_the_column_cannot_hold_are_refused_on_the_form(
    client, world, offline_provider_url, params, expected
):
    client.force_login(world.researcher)
    data = {
        "sampling_run": world.run.pk,
        "grader": grader_model(offline_provider_url).pk,
        "mode": "checklist",
        "temperature": "0",
        "params": params,
        "name": "Bad",
    }
    page = client.post(reverse("grading:run_new"), data)
    assert page.status_code == 422
    assert expected in html.unescape(page.text)
    assert not GradingRun.objects.filter(name="Bad").exists()
