"""Calibration's pages: who may open each, blindness, the forms with and without HTMX,
and the report as a researcher reads it."""

import re
from html import unescape

import pytest
from django.urls import reverse

from apps.grading.models import CalibrationSet, ExpertJudgment
from apps.grading.services.calibration import calibration_create
from apps.llm.models import PromptTemplate
from apps.rubrics.models import Kind
from tests.grading.calibration_builders import (  # noqa: F401  (fixtures)
    grade,
    graded,
    grader_model,
    set_make,
    world_fixture,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(world, offline_provider_url):
    run = graded(world.run, grader_model(offline_provider_url))
    calibration_set = set_make(world)
    calibration = calibration_create(
        calibration_set=calibration_set, grading_run=run, user=world.researcher
    )
    world.set, world.grading, world.calibration = calibration_set, run, calibration
    world.sample = calibration_set.samples.order_by("question_id").first()
    return world


def who(site, name):
    return None if name == "anonymous" else getattr(site, name)


def status_as(client, site, name, url, method="get", **data):
    user = who(site, name)
    if user is not None:
        client.force_login(user)
    return getattr(client, method)(url, data)


PEOPLE = ["anonymous", "other_expert", "author", "second", "reviewer", "researcher"]
EXPECTED = {
    # page: the status each person gets (302 to the login page for the anonymous visitor)
    "calibration_sets": [302, 403, 403, 200, 403, 200],
    "calibration_queue": [302, 200, 200, 200, 200, 200],
    "calibration_set": [302, 403, 403, 200, 403, 200],
    "calibration_grade": [302, 403, 200, 200, 403, 403],
    "calibration_adjudicate": [302, 403, 200, 200, 403, 403],
    # The second grader stays blind to the auto-rater until their grades are in.
    "calibration_report": [302, 403, 403, 403, 403, 200],
}


def url_of(site, name):
    if name in ("calibration_sets", "calibration_queue"):
        return reverse(f"grading:{name}")
    pk = {"calibration_set": site.set.pk, "calibration_report": site.calibration.pk}.get(
        name, site.sample.pk
    )
    return reverse(f"grading:{name}", kwargs={"pk": pk})


@pytest.mark.parametrize("page", list(EXPECTED))
def test_each_person_gets_what_the_page_allows(client, site, page):
    for person, expected in zip(PEOPLE, EXPECTED[page], strict=True):
        client.logout()
        response = status_as(client, site, person, url_of(site, page))
        assert response.status_code == expected, (page, person)
        if person == "anonymous":
            assert response["Location"].startswith(reverse("login"))


def test_the_second_grader_reads_the_report_once_every_grade_of_theirs_is_in(client, site):
    for sample in site.set.samples.all():
        grade(sample, site.second, lambda c: True)
    client.force_login(site.second)
    assert client.get(url_of(site, "calibration_report")).status_code == 200


def test_only_researchers_calibrate_a_grading_run(client, site):
    url = reverse("grading:calibration_open", kwargs={"pk": site.set.pk})
    for person in ("other_expert", "author", "reviewer"):
        client.logout()
        assert status_as(client, site, person, url, "post").status_code == 403
    client.logout()
    response = status_as(client, site, "researcher", url, "post", grading_run=site.grading.pk)
    assert response.status_code == 302
    assert response["Location"] == url_of(site, "calibration_report")


def test_the_grading_page_is_blind_to_the_auto_rater_and_to_the_other_grader(client, site):
    explanations = list(
        site.grading.judgments.filter(response=site.sample.response).values_list(
            "explanation", flat=True
        )
    )
    assert explanations and all(explanations)
    grade(site.sample, site.author, lambda c: True, note="The author's own reasoning here.")
    client.force_login(site.second)
    html = client.get(url_of(site, "calibration_grade")).content.decode()
    # The answer's first line (the page sets its paragraphs apart).
    assert site.sample.response.text.splitlines()[0][:60] in unescape(html)
    for explanation in explanations:
        assert explanation not in html
    assert "The author&#x27;s own reasoning" not in html and "own reasoning" not in html
    assert " checked" not in html  # the author's labels are not shown either
    assert html.count('data-testid="criterion"') == 8
    assert 'src="/static/js/expert-grading.js"' in html


def test_the_plain_form_saves_a_part_then_the_whole_grade_and_moves_on(client, site):
    client.force_login(site.author)
    url = url_of(site, "calibration_grade")
    criteria = list(site.sample.judgments.values_list("criterion_id", flat=True))
    response = client.post(url, {f"met-{criteria[0]}": "1", f"note-{criteria[0]}": "Clear."})
    assert response.status_code == 302 and response["Location"] == url
    page = client.get(url).content.decode()
    assert "7 criteria are still to mark" in page and "Clear." in page
    response = client.post(url, {f"met-{pk}": "0" for pk in criteria[1:]})
    following = site.set.samples.order_by("question_id")[1]
    assert response["Location"] == url_of(site, "calibration_grade").replace(
        str(site.sample.pk), str(following.pk)
    )
    row = ExpertJudgment.objects.get(sample=site.sample, criterion_id=criteria[0])
    assert (row.first_met, row.first_note, row.first_by) == (True, "Clear.", site.author)
    site.sample.refresh_from_db()
    assert site.sample.first_done_at is not None


def both_graded_with_one_disagreement(site):
    factual = site.sample.rubric.criteria.filter(kind=Kind.FACTUAL).order_by("order").first()
    grade(site.sample, site.author, lambda c: True, note="author says met")
    grade(site.sample, site.second, lambda c: c.pk != factual.pk, note="second says not")
    return factual


def test_adjudication_shows_both_grades_and_records_the_final_label(client, site):
    client.force_login(site.author)
    waiting = client.get(url_of(site, "calibration_adjudicate")).content.decode()
    assert 'data-testid="waiting"' in waiting
    factual = both_graded_with_one_disagreement(site)
    html = client.get(url_of(site, "calibration_adjudicate")).content.decode()
    assert html.count('data-testid="disagreement"') == 1
    assert "author says met" in html and "second says not" in html
    for explanation in site.grading.judgments.values_list("explanation", flat=True):
        assert explanation not in html
    response = client.post(
        url_of(site, "calibration_adjudicate"),
        {f"final-{factual.pk}": "0", f"note-{factual.pk}": "Agreed: missing."},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    fragment = response.content.decode()
    assert "<html" not in fragment and 'id="settle"' in fragment
    assert "Saved 1 final label." in fragment and "Final: not met" in fragment
    row = ExpertJudgment.objects.get(sample=site.sample, criterion=factual)
    assert (row.first_met, row.second_met, row.final_met) == (True, False, False)
    assert row.resolution_note == "Agreed: missing."
    site.sample.refresh_from_db()
    assert site.sample.resolved_at is not None


def test_adjudication_without_javascript_redirects_with_the_refusal(client, site):
    both_graded_with_one_disagreement(site)
    agreed = site.sample.judgments.exclude(final_met=None).first()
    client.force_login(site.second)
    response = client.post(
        url_of(site, "calibration_adjudicate"), {f"final-{agreed.criterion_id}": "0"}
    )
    # An agreed criterion is not on the form: its value is not read, and nothing changes.
    assert response.status_code == 302
    agreed.refresh_from_db()
    assert agreed.final_met is True


def settle_all(site, final):
    for sample in site.set.samples.all():
        grade(sample, site.author, final)
        grade(sample, site.second, final)


def test_the_report_shows_statistics_disagreements_and_what_changed(client, site):
    rater = {(j.response_id, j.criterion_id): j.met for j in site.grading.judgments.all()}
    first = site.sample
    client.force_login(site.researcher)
    url = url_of(site, "calibration_report")
    before = client.get(url).content.decode()
    assert before.count('data-testid="not-enough"') == 3 + 5  # no final label yet
    assert "24 criteria excluded: not yet settled: the experts&#x27; final label is still" in before
    assert "3 answers left out: not yet settled by the experts" in before
    assert "a label is missing" not in before
    # Both graders agree with the auto-rater except on the first answer's factual criteria.
    for sample in site.set.samples.all():

        def verdict(c, s=sample):
            said = rater[(s.response_id, c.pk)]
            return not said if (s.pk == first.pk and c.kind == Kind.FACTUAL) else said

        grade(sample, site.author, verdict)
        grade(sample, site.second, verdict)
    html = client.get(url).content.decode()
    assert 'data-testid="unchanged"' in html
    assert html.count('data-testid="disagreement"') == 3
    explanation = site.grading.judgments.get(
        response=first.response,
        criterion=first.rubric.criteria.filter(kind=Kind.FACTUAL).order_by("order").first(),
    ).explanation
    assert explanation in html.replace("&#x27;", "'").replace("&quot;", '"')
    accuracy = re.search(r'data-testid="accuracy">([0-9.]+)<', html).group(1)
    assert accuracy == "0.875"  # 21 of 24 labels agree
    assert 'data-testid="excluded">\n\n</div>' in html  # nothing left out now

    fragment = client.get(url, {"kind": Kind.PRESENTATION}, headers={"HX-Request": "true"})
    assert "<html" not in fragment.content.decode()
    assert 'data-testid="disagreement"' not in fragment.content.decode()
    assert "No disagreements with these filters" in fragment.content.decode()
    said_met = client.get(url, {"direction": "rater_met"}).content.decode()
    said_not = client.get(url, {"direction": "rater_not_met"}).content.decode()
    assert (
        said_met.count('data-testid="disagreement"') + said_not.count('data-testid="disagreement"')
        == 3
    )

    PromptTemplate.objects.create(
        purpose=site.grading.prompt.purpose,
        version=site.grading.prompt.version + 1,
        user_text="x $a",
    )
    assert "A newer grading prompt" in client.get(url).content.decode()


def test_two_grading_runs_side_by_side_on_the_same_labels(client, site, offline_provider_url):
    other = graded(site.run, grader_model(offline_provider_url), params={"temperature": 0.5})
    settle_all(site, lambda c: True)
    client.force_login(site.researcher)
    html = client.get(url_of(site, "calibration_report"), {"compare": other.pk}).content.decode()
    table = html.split('data-testid="agreement"')[1].split("</table>")[0]
    assert site.grading.name in table and other.name in table
    row = table.split('data-testid="agreement-row"')[1]
    assert row.count("<td>") == 2


def test_a_researcher_draws_a_set_from_the_form(client, site):
    client.force_login(site.researcher)
    url = reverse("grading:calibration_sets")
    data = {
        "name": "From the page",
        "sampling_run": site.run.pk,
        "models": [m.pk for m in site.models[:2]],
        "seed": "",
        "second_grader": site.second.pk,
    }
    response = client.post(url, data)
    made = CalibrationSet.objects.get(name="From the page")
    assert response.status_code == 302
    assert response["Location"] == reverse("grading:calibration_set", kwargs={"pk": made.pk})
    assert made.samples.count() == 3 and made.seed is not None
    refused = client.post(url, {**data, "second_grader": site.author.pk})
    assert refused.status_code == 422  # the author is no researcher: not in the list
    detail = client.get(response["Location"]).content.decode()
    assert 'data-testid="first-count">0<' in detail


def test_the_queue_and_the_home_panel_list_the_answers_to_grade(client, site):
    client.force_login(site.author)
    html = client.get(reverse("grading:calibration_queue")).content.decode()
    assert 'data-testid="to-grade-count">3<' in html
    home = client.get(reverse("home")).content.decode()
    assert "3 answers to grade for calibration" in home
    client.force_login(site.other_expert)
    home = client.get(reverse("home")).content.decode()
    assert 'id="calibration-work"' not in home  # nothing to grade: no panel
