"""The researcher's pages of answer studies: the creation page and a study's draw."""

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from apps.accounts.roles import Role
from apps.answer_studies.models import AnswerDraw
from apps.surveys.models import Study, StudyKind
from tests.analysis.benchmark_builders import bench_committed
from tests.answer_studies.factories import bench_for_draw, study_drawn
from tests.conftest import ROLES

pytestmark = pytest.mark.django_db
NEW = reverse("answer_studies:create")


@pytest.fixture(scope="module")
def bench(django_db_setup, django_db_blocker):
    with bench_committed(django_db_blocker, build=bench_for_draw) as made:
        yield made


@pytest.fixture
def researcher_client(role_client):
    return role_client(Role.RESEARCHER)


def form_data(bench, **changes) -> dict:
    return {
        "name": "What people make of the answers",
        "sampling_run": bench.sampling.pk,
        "grading_run": bench.grading.pk,
        "seed": 3,
        "answers_per_stratum": 2,
        "pairs_per_model_pair": 1,
        "ratings_per_unit": 5,
        "units_per_participant": 5,
        "action": "create",
        **changes,
    }


def strata_cells(html: str) -> list[list[str]]:
    table = re.search(r'<table class="data" data-testid="strata">(.*?)</table>', html, re.S)
    rows = re.findall(r"<tr><td>(.*?)</tr>", table.group(1), re.S)
    return [re.findall(r"<td>(.*?)</td>", "<td>" + row) for row in rows]


def test_the_page_shows_how_many_answers_each_stratum_holds_and_what_a_draw_takes(
    researcher_client, bench
):
    query = {"sampling_run": bench.sampling.pk, "grading_run": bench.grading.pk}
    response = researcher_client.get(NEW, {**query, "answers_per_stratum": 2})
    assert response.status_code == 200
    cells = strata_cells(response.content.decode())
    # Alpha's answers in accounts (factories.py): 0.3 (its second to q1 failed), 0.5, 0.7,
    # 0.7 and 0.9; two below the line and three at or above it.
    assert len(cells) == 3 * 2  # a row per model and topic
    assert all(len(row) == 2 + 4 for row in cells)
    for row in cells:
        below, below_taken, above, above_taken = map(int, row[2:])
        assert below_taken == min(2, below) and above_taken == min(2, above)
    alpha_accounts = next(r for r in cells if r[0] == "Alpha" and r[1] == "accounts")
    assert list(map(int, alpha_accounts[2:])) == [2, 2, 3, 2]
    assert "34 scored answers to draw from; 2 per stratum takes 24." in response.content.decode()


def test_a_change_of_run_sends_back_only_the_strata_with_htmx_and_the_page_without(
    researcher_client, bench
):
    data = form_data(bench, action="strata", answers_per_stratum=1)
    partial = researcher_client.post(NEW, data, HTTP_HX_REQUEST="true")
    assert partial.status_code == 200
    html = partial.content.decode()
    assert html.lstrip().startswith('<div id="strata"') and "<html" not in html
    assert "1 per stratum takes 12." in html
    whole = researcher_client.post(NEW, data)
    assert whole.status_code == 200 and "<html" in whole.content.decode()
    assert "1 per stratum takes 12." in whole.content.decode()
    assert not Study.objects.exists()


def test_the_grading_run_offered_is_one_of_the_chosen_runs(researcher_client, bench):
    response = researcher_client.get(NEW, {"sampling_run": bench.sampling.pk})
    html = response.content.decode()
    assert f'<option value="{bench.grading.pk}">' in html
    assert "Choose a grading run" in html


def test_creating_draws_the_study_and_goes_to_its_page(researcher_client, bench):
    response = researcher_client.post(NEW, form_data(bench))
    study = Study.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("surveys:study_detail", args=[study.pk])
    assert study.kind == StudyKind.ANSWERS
    assert study.study_scenarios.count() == 24 + 3
    draw = AnswerDraw.objects.get(study=study)
    assert (draw.seed, draw.answers_per_stratum, draw.pairs_per_model_pair) == (3, 2, 1)


def test_a_draw_the_service_refuses_shows_why_and_makes_nothing(researcher_client, bench):
    response = researcher_client.post(NEW, form_data(bench, pairs_per_model_pair=9))
    assert response.status_code == 400
    assert "Alpha and Beta both answered 6 question(s)" in response.content.decode()
    assert not Study.objects.exists()


def test_a_form_with_a_mistake_shows_it_on_its_field(researcher_client, bench):
    response = researcher_client.post(NEW, form_data(bench, ratings_per_unit=0, name=""))
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="id_name-error"' in html and 'id="id_ratings_per_unit-error"' in html
    assert not Study.objects.exists()


def test_the_draw_page_lists_each_unit_with_its_model_topic_band_and_score(
    researcher_client, bench
):
    study = study_drawn(bench, answers_per_stratum=1, pairs_per_model_pair=1)
    response = researcher_client.get(reverse("answer_studies:draw", args=[study.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    units = re.search(r'data-testid="units">(.*?)</table>', html, re.S).group(1)
    rows = re.findall(r"<tr><td>(.*?)</tr>", units, re.S)
    assert len(rows) == 12 + 3
    first = re.findall(r"<td>(.*?)</td>", "<td>" + rows[0])
    answer = study.study_scenarios.get(label="Answer 001").study_answer
    assert first == [
        "Answer 001",
        "Question and answer",
        answer.response.model.display_name,
        answer.response.question.topic.name,
        "Below 65%" if answer.band == "below-65" else "65% or more",
        f"{answer.score:.2f}",
    ]
    assert "Pair 001" in units and "A: " in units
    assert "Seed: 7" in html


def test_a_study_not_drawn_from_answers_has_no_draw_page(researcher_client, make_study):
    study = make_study(count=1, live=False)
    response = researcher_client.get(reverse("answer_studies:draw", args=[study.pk]))
    assert response.status_code == 404


def test_the_studies_list_links_to_the_creation_page(researcher_client, db):
    response = researcher_client.get(reverse("surveys:study_list"))
    assert f'href="{NEW}"' in response.content.decode()


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_only_researchers_reach_the_pages(role_client, bench, role):
    study = study_drawn(bench)
    client = role_client(role)
    for url in (
        NEW,
        reverse("answer_studies:list"),
        reverse("answer_studies:draw", args=[study.pk]),
    ):
        response = client.get(url)
        assert response.status_code == (200 if role == Role.RESEARCHER else 403)
    post = client.post(NEW, form_data(bench))
    assert post.status_code == (302 if role == Role.RESEARCHER else 403)


def test_an_anonymous_visitor_is_sent_to_sign_in(client, bench):
    study = study_drawn(bench)
    for url in (
        NEW,
        reverse("answer_studies:list"),
        reverse("answer_studies:draw", args=[study.pk]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_a_prefilled_item_is_edited_on_the_studys_items_page_and_stays_an_answer_item(
    researcher_client, bench
):
    study = study_drawn(bench)
    item = study.items.get(code="C1")
    url = reverse("surveys:setup_item", args=[study.pk, item.pk])
    assert researcher_client.get(url).status_code == 200
    data = {
        "code": "C1",
        "wording": "Does the answer start with what matters most?",
        "kind": item.kind,
        "scale_labels": "",
        "group": item.group,
        "order": item.order,
        "on_page": 1,
    }
    response = researcher_client.post(url, data)
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.wording == "Does the answer start with what matters most?"
    assert (item.unit_kind, item.group) == ("answer", "presentation")
    assert item.criterion_item.prefilled != item.wording


def test_the_list_shows_each_answer_study_with_its_runs_and_counts_and_pages(role_client, bench):
    study = study_drawn(bench)
    client = role_client(Role.RESEARCHER)

    response = client.get(reverse("answer_studies:list"))

    html = response.content.decode()
    assert response.status_code == 200
    row = html.split('data-testid="answer-studies"')[1].split("</tr>")[1]
    assert escape(study.name) in row and escape(bench.sampling.name) in row
    assert f">{study.study_scenarios.count()}</td>" in row
    assert reverse("answer_studies:draw", args=[study.pk]) in row
    assert client.get(reverse("answer_studies:list"), {"page": "x"}).status_code == 200
