"""While a calibration set is being graded, its graders see none of an auto-rater's output
for its answers, by any route: the judgments page, the CSV exports, the archive, the API
and the console. Other researchers see it; so do the graders once their grades are in."""

import csv
import io
import re
import zipfile
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from apps.grading.models import CalibrationSet, ChecklistCall, Judgment, ResponseScore
from apps.grading.selectors.runs import WITHHELD
from apps.grading.services.calibration import calibration_create, calibration_set_create
from tests.api.builders import bearer, token_for
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
    world.grading = graded(world.run, grader_model(offline_provider_url))
    world.set = set_make(world)
    world.answers = set(world.set.samples.values_list("response_id", flat=True))
    world.others = set(world.run.responses.values_list("pk", flat=True)) - world.answers
    assert world.answers and world.others
    return world


def grades_in(site) -> None:
    for sample in site.set.samples.all():
        grade(sample, site.second, lambda c: True)


def csv_of(response) -> list[dict]:
    assert response.status_code == 200, response.content[:300]
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


# Each route, read as `user`: the answers of the run whose auto-rater output it shows.


def judgments_page(site, user) -> set[int]:
    client = Client()
    client.force_login(user)
    seen = set()
    for answer in site.answers | site.others:
        url = reverse("grading:judgments", args=[site.grading.pk]) + f"?response={answer}"
        response = client.get(url)
        assert response.status_code == 200
        if 'data-testid="judgment"' in response.content.decode():
            seen.add(answer)
    return seen


def judgments_csv(site, user) -> set[int]:
    client = Client()
    client.force_login(user)
    rows = csv_of(client.get(reverse("grading:export_judgments", args=[site.grading.pk])))
    return {int(row["response id"]) for row in rows}


def scores_csv(site, user) -> set[int]:
    client = Client()
    client.force_login(user)
    rows = csv_of(client.get(reverse("grading:export_scores", args=[site.grading.pk])))
    assert len(rows) == len(site.answers | site.others)  # every answer has its row
    return {int(row["response id"]) for row in rows if row["status"] == "scored"}


def archive(site, user) -> set[int]:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("grading:export_everything", args=[site.grading.pk]))
    assert response.status_code == 200
    members = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    judged = csv.DictReader(io.StringIO(members.read("judgments.csv").decode()))
    scored = csv.DictReader(io.StringIO(members.read("scores.csv").decode()))
    return {int(row["response id"]) for row in judged} | {
        int(row["response id"]) for row in scored if row["status"] == "scored"
    }


def api_client(user) -> Client:
    return Client(**bearer(token_for(user)))


def api_list(site, user) -> set[int]:
    client, seen = api_client(user), set()
    for answer in site.answers | site.others:
        url = f"/api/v1/judgments/?grading_run={site.grading.pk}&response={answer}"
        response = client.get(url)
        assert response.status_code == 200
        seen |= {row["response"] for row in response.json()["results"]}
    return seen


def api_rows(site, user) -> set[int]:
    client, seen = api_client(user), set()
    for path, model in (("judgments", Judgment), ("scores", ResponseScore)):
        for row in (
            model.objects.filter(grading_run=site.grading)
            .order_by("response_id")
            .distinct("response_id")
        ):
            response = client.get(f"/api/v1/{path}/{row.pk}/")
            assert response.status_code in (200, 404)
            if response.status_code == 200:
                seen.add(response.json()["response"])
    return seen


def api_exports(site, user) -> set[int]:
    client, seen = api_client(user), set()
    for path in ("judgments", "scores"):
        rows = csv_of(client.get(f"/api/v1/{path}/export/?grading_run={site.grading.pk}"))
        seen |= {int(row["response"]) for row in rows}
    return seen


def console_rows(site, user) -> set[int]:
    client, seen = Client(), set()
    client.force_login(user)
    for model in (Judgment, ChecklistCall, ResponseScore):
        name = model._meta.model_name
        for row in (
            model.objects.filter(grading_run=site.grading)
            .order_by("response_id")
            .distinct("response_id")
        ):
            response = client.get(reverse(f"admin:grading_{name}_change", args=[row.pk]))
            assert response.status_code in (200, 302)  # 302: "does not exist", to the index
            if response.status_code == 200:
                seen.add(row.response_id)
    return seen


def console_exports(site, user) -> set[int]:
    client, seen = Client(), set()
    client.force_login(user)
    for model in (Judgment, ChecklistCall, ResponseScore):
        name = model._meta.model_name
        every = {"action": "export_as_csv", "select_across": "1", "_selected_action": ["0"]}
        rows = csv_of(client.post(reverse(f"admin:grading_{name}_changelist"), every))
        seen |= {int(row["response_id"]) for row in rows}
    return seen


# The benchmark report lists the answers below 65% one by one, each with its score.


def below_65_page(site, user) -> set[int]:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("analysis:benchmark_low_responses", args=[site.grading.pk]))
    assert response.status_code == 200
    return {int(pk) for pk in re.findall(r"\?response=(\d+)", response.content.decode())}


def below_65_csv(site, user) -> set[int]:
    client = Client()
    client.force_login(user)
    url = reverse("analysis:benchmark_table_csv", args=[site.grading.pk, "low-responses"])
    return {int(row["Answer id"]) for row in csv_of(client.get(url))}


def below_65_api(site, user) -> set[int]:
    client = api_client(user)
    url = f"/api/v1/reports/grading-runs/{site.grading.pk}/tables/low-responses"
    rows = client.get(url + "/").json()["rows"]
    listed = {int(row["Answer id"]) for row in csv_of(client.get(url + ".csv"))}
    assert listed == {row["response"] for row in rows}
    return listed


ROUTES = [
    judgments_page,
    judgments_csv,
    scores_csv,
    archive,
    api_list,
    api_rows,
    api_exports,
    console_rows,
    console_exports,
]


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.__name__)
def test_the_second_grader_sees_no_rater_output_for_the_sets_answers_until_graded(site, route):
    everything = site.answers | site.others
    assert route(site, site.researcher) == everything
    assert route(site, site.second) == site.others
    grades_in(site)
    assert route(site, site.second) == everything


@pytest.mark.parametrize(
    "route", [below_65_page, below_65_csv, below_65_api], ids=lambda route: route.__name__
)
def test_the_answers_below_65_leave_out_a_blind_graders_answers(site, route):
    ResponseScore.objects.filter(grading_run=site.grading).update(score=0.1)
    everything = set(site.grading.scores.values_list("response_id", flat=True))
    assert site.answers <= everything
    assert route(site, site.researcher) == everything
    assert route(site, site.second) == everything - site.answers
    grades_in(site)
    assert route(site, site.second) == everything


def test_an_author_who_is_a_researcher_is_blind_until_their_own_grades_are_in(site):
    site.author.groups.add(*site.second.groups.all())  # the researcher's group
    assert judgments_csv(site, site.author) == site.others
    for sample in site.set.samples.all():
        grade(sample, site.author, lambda c: False)
    assert judgments_csv(site, site.author) == site.answers | site.others


def test_the_judgments_page_shows_a_blind_grader_no_verdict_or_explanation(client, site):
    answer = site.set.samples.order_by("question_id").first().response_id
    explanations = set(
        site.grading.judgments.filter(response_id=answer).values_list("explanation", flat=True)
    )
    assert explanations and all(explanations)
    url = reverse("grading:judgments", args=[site.grading.pk]) + f"?response={answer}"
    client.force_login(site.second)
    html = unescape(client.get(url).content.decode())
    assert not any(text in html for text in explanations)
    assert "Met" not in html.split('<ol class="criteria">')[1]
    assert 'data-testid="judgments-withheld"' in html
    client.force_login(site.researcher)
    html = unescape(client.get(url).content.decode())
    assert all(text in html for text in explanations)
    assert 'data-testid="judgments-withheld"' not in html


def test_a_blind_graders_scores_csv_says_why_a_score_is_withheld(client, site):
    client.force_login(site.second)
    rows = csv_of(client.get(reverse("grading:export_scores", args=[site.grading.pk])))
    withheld = [row for row in rows if int(row["response id"]) in site.answers]
    assert withheld and all(row["status"] == "missing" for row in withheld)
    assert {row["missing reason"] for row in withheld} == {WITHHELD}
    assert all(row["score"] == "" and row["earned points"] == "" for row in withheld)


def test_a_report_of_another_set_with_the_same_answers_is_refused_to_a_blind_grader(client, site):
    other = calibration_set_create(
        sampling_run=site.run,
        models=site.models[:2],
        seed=7,
        second_grader=site.researcher,
        user=site.researcher,
        name="Same draw",
    )
    calibration = calibration_create(
        calibration_set=other, grading_run=site.grading, user=site.researcher
    )
    url = reverse("grading:calibration_report", kwargs={"pk": calibration.pk})
    for sample in other.samples.all():
        grade(sample, site.researcher, lambda c: True)
    assert CalibrationSet.objects.count() == 2
    client.force_login(site.second)
    assert client.get(url).status_code == 403
    client.force_login(site.researcher)
    assert client.get(url).status_code == 200
    grades_in(site)
    client.force_login(site.second)
    assert client.get(url).status_code == 200
