"""A study of answers, taken by a participant and read by a researcher: each page shows its
unit (a question with one answer, or with two to compare) and asks the items of that kind of
unit only; researchers' pages, the console and the API name each unit by its label."""

import csv
import io
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.accounts.roles import Role
from apps.surveys import selectors, services
from apps.surveys.errors import SurveyError
from apps.surveys.models import (
    Answer,
    Assignment,
    ParticipantStatus,
    StudyKind,
    SurveyItem,
    UnitKind,
)
from tests.api.builders import bearer, token_for
from tests.factories import (
    PairUnitFactory,
    StudyAnswerUnitFactory,
    SurveyItemFactory,
    answer_study_make,
    user_with_role,
)
from tests.surveys.flow import answers_for, consent, finish

pytestmark = pytest.mark.django_db
PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'


def started(client, study):
    """A participant past the instructions; their assignments, by position."""
    pid, _ = consent(client, study)
    client.post(f"/s/{study.slug}/instructions/")
    participant = study.participants.get(prolific_pid=pid)
    return participant, list(participant.assignments.select_related("study_scenario"))


def page_of(client, study, assignment) -> str:
    return client.get(f"/s/{study.slug}/scenario/{assignment.pk}/").content.decode()


def test_an_answer_page_shows_the_question_and_the_answer_from_markdown_and_asks_its_items(
    client,
):
    study = answer_study_make(answers=1, pairs=0, scenarios_per_participant=1)
    unit = study.study_scenarios.get()
    unit.question_text = "My account was taken over.\nWhat now? <b>urgent</b>"
    unit.answer_text = f"**Change your password.**\n\n- one\n- two\n\n{PAYLOAD}"
    unit.save()
    _, (assignment,) = started(client, study)
    page = page_of(client, study, assignment)
    assert "<title>Page 1 of 1" in page and "<h1>Rate this answer</h1>" in page
    assert "Scenario" not in page
    assert "My account was taken over.<br>What now? &lt;b&gt;urgent&lt;/b&gt;" in page
    assert "<strong>Change your password.</strong>" in page
    assert "<li>one</li>" in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert "<script>window" not in page and "<img src=x" not in page
    assert {"value_AH", "value_AU"} == set(re.findall(r'name="(value_\w+)"', page)) - {""}
    assert "Answer A" not in page


def test_a_pair_page_shows_both_answers_and_asks_which_helps_more_in_three_choices(client):
    study = answer_study_make(answers=0, pairs=1, scenarios_per_participant=1)
    _, (assignment,) = started(client, study)
    page = page_of(client, study, assignment)
    assert "<h1>Compare two answers</h1>" in page
    assert '<div class="answers-shown answer-pair">' in page
    assert ">Answer A</h2>" in page and ">Answer B</h2>" in page
    assert "<em>wait</em>" in page  # Answer B's Markdown
    assert set(re.findall(r'name="(value_\w+)"', page)) == {"value_PP"}
    assert re.findall(r'name="value_PP" value="(\w+)"', page) == ["a", "b", "equal"]
    assert "They help about the same" in page


def test_a_participant_answers_each_unit_with_its_items_and_gets_the_completion_code(client):
    study = answer_study_make(answers=1, pairs=1, scenarios_per_participant=2)
    participant = finish(client, study)
    assert participant.status == ParticipantStatus.FINISHED
    assert participant.completion_code == study.code_completed
    saved = {
        (a.assignment.study_scenario.kind, a.item.code)
        for a in Answer.objects.filter(assignment__participant=participant).select_related(
            "assignment__study_scenario", "item"
        )
    }
    assert saved == {(UnitKind.ANSWER, "AH"), (UnitKind.ANSWER, "AU"), (UnitKind.PAIR, "PP")}


def test_an_item_of_another_kind_of_unit_is_neither_saved_nor_required(client):
    study = answer_study_make(answers=1, pairs=1, scenarios_per_participant=2)
    participant, assignments = started(client, study)
    for assignment in assignments:  # the pair's item posted on the answer's page and back
        other = "AH" if assignment.study_scenario.kind == UnitKind.PAIR else "PP"
        url = f"/s/{study.slug}/scenario/{assignment.pk}/answer/{other}/"
        value = "4" if other == "AH" else "a"
        for _ in range(2):  # the second time, the process knows the items (one statement)
            response = client.post(url, {f"value_{other}": value}, headers={"HX-Request": "true"})
            assert response.status_code == 404
    assert not Answer.objects.filter(assignment__participant=participant).exists()
    items = list(study.items.all())
    for assignment in assignments:
        response = client.post(f"/s/{study.slug}/scenario/{assignment.pk}/", answers_for(items))
        assert response.status_code == 302
    done = client.post(
        f"/s/{study.slug}/about-you/",
        {"age": "no_say", "gender": "no_say", "education": "no_say", "income": "no_say"},
    )
    assert done["Location"] == f"/s/{study.slug}/done/"
    assert Answer.objects.filter(assignment__participant=participant).count() == 3


def test_a_page_without_its_units_answers_is_reopened_at_the_end_and_named_as_a_page(client):
    study = answer_study_make(answers=1, pairs=1, scenarios_per_participant=2)
    participant, assignments = started(client, study)
    for assignment in assignments:
        client.post(
            f"/s/{study.slug}/scenario/{assignment.pk}/", answers_for(list(study.items.all()))
        )
    pair = next(a for a in assignments if a.study_scenario.kind == UnitKind.PAIR)
    Answer.objects.filter(assignment=pair).delete()  # as if it never arrived
    with pytest.raises(SurveyError, match=rf"^Page {pair.position} has a question"):
        services.participant_finish(
            participant=participant,
            demographics={"age": "no_say", "gender": "no_say", "education": "no_say"}
            | {"income": "no_say"},
        )
    pair.refresh_from_db()
    assert pair.answered_at is None


def test_an_attention_check_goes_on_the_first_page_of_its_kind_from_its_page_on():
    answer, pair = UnitKind.ANSWER, UnitKind.PAIR
    study = answer_study_make(answers=2, pairs=2, scenarios_per_participant=4, live=False)
    SurveyItemFactory(study=study, code="ACA", attention_check=True, expected_value="2", on_page=2)
    SurveyItemFactory(
        study=study,
        code="ACP",
        kind="pair",
        scale_labels=[],
        unit_kind=pair,
        attention_check=True,
        expected_value="b",
        on_page=9,
    )
    study.refresh_from_db()

    def codes(position, kinds):
        return {
            i.code for i in selectors.items_for_page(study=study, position=position, kinds=kinds)
        }

    def pages_with(code, kinds):
        return [
            p
            for p in kinds
            if code
            in {i.code for i in selectors.items_for_page(study=study, position=p, kinds=kinds)}
        ]

    assert pages_with("ACA", {1: answer, 2: answer, 3: pair, 4: pair}) == [2]
    assert pages_with("ACA", {1: answer, 2: pair, 3: answer, 4: pair}) == [3]
    assert pages_with("ACA", {1: answer, 2: pair, 3: pair, 4: pair}) == [1]
    assert pages_with("ACP", {1: pair, 2: answer, 3: pair, 4: answer}) == [3]
    assert pages_with("ACP", {1: pair, 2: pair, 3: pair, 4: pair}) == [4]
    assert pages_with("ACP", {1: answer, 2: answer}) == []


def test_an_answer_units_html_is_made_once_per_process():
    study = answer_study_make(answers=1, pairs=1, live=False)
    units = list(study.study_scenarios.all())
    first = [selectors.scenario_body_html(study_scenario=u) for u in units]
    with CaptureQueriesContext(connection) as queries:
        again = [selectors.scenario_body_html(study_scenario=u) for u in units]
    assert len(queries) == 0
    assert [id(html) for html in again] == [id(html) for html in first]


def test_the_study_page_names_each_unit_by_its_label_and_offers_no_responses_to_generate(
    role_client,
):
    study = answer_study_make(answers=2, pairs=1)
    page = role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/").content.decode()
    labels = sorted(study.study_scenarios.values_list("label", flat=True))
    for label in labels:
        assert f'<th scope="row">{label}</th>' in page
    assert "Answers and pairs" in page and "Question and two answers" in page
    assert "Generate the missing responses" not in page
    assert 'data-testid="missing-responses"' not in page
    assert "0 of 3 units complete" in page


def test_generating_responses_for_a_study_of_answers_is_refused_in_words(role_client, db):
    from tests.factories import offline_model

    model = offline_model("http://127.0.0.1:9")
    study = answer_study_make(answers=2, pairs=0)
    response = role_client(Role.RESEARCHER).post(
        f"/studies/{study.pk}/responses/", {"model": model.pk}
    )
    assert response.status_code == 400
    assert "there are no responses to generate" in response.content.decode()
    assert not study.generations.exists()


def test_the_preview_shows_an_answer_and_a_pair_with_their_items(role_client):
    study = answer_study_make(answers=1, pairs=1)
    page = role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/preview/").content.decode()
    assert "Rate this answer" in page and "Compare two answers" in page
    assert page.count('name="value_AH"') == 5 and page.count('name="value_PP"') == 3
    assert "Page 1 of 2" in page and "Scenario" not in page


def test_the_setup_of_a_study_of_answers_is_edited_without_scenarios(role_client):
    study = answer_study_make(answers=2, pairs=0, live=False)
    client = role_client(Role.RESEARCHER)
    url = f"/studies/{study.pk}/edit/"
    assert 'name="scenarios"' not in client.get(url).content.decode()
    form = {
        field: getattr(study, field)
        for field in services.studies.STUDY_FIELDS
        if field not in ("name", "prolific_study_id")
    }
    response = client.post(url, {**form, "name": "Renamed", "prolific_study_id": ""})
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.name == "Renamed" and study.study_scenarios.count() == 2
    with pytest.raises(SurveyError, match="no scenarios to choose"):
        services.study_update(study=study, scenarios=[])


def test_review_console_and_api_name_the_units_a_participant_rated(client, role_client):
    study = answer_study_make(answers=1, pairs=1, scenarios_per_participant=2)
    participant = finish(client, study)
    labels = set(study.study_scenarios.values_list("label", flat=True))

    researcher = role_client(Role.RESEARCHER)
    review = researcher.get(f"/studies/{study.pk}/review/?status=").content.decode()
    for label in labels:
        assert re.search(rf"<h3>\d\. {label} ", review)

    url = reverse("admin:surveys_answer_changelist")
    export = researcher.post(
        url, {"action": "export_as_csv", "select_across": "1", "_selected_action": ["0"]}
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert {(r["unit kind"], r["unit label"]) for r in rows} == {
        ("answer", next(n for n in labels if n.startswith("Answer"))),
        ("pair", next(n for n in labels if n.startswith("Pair"))),
    }

    api = client.__class__(**bearer(token_for(user_with_role(Role.RESEARCHER))))
    body = api.get(f"/api/v1/answers/?study={study.pk}").json()
    rows = body["results"] if isinstance(body, dict) else body
    assert {r["unit_name"] for r in rows} == labels
    assert {r["unit_kind"] for r in rows} == {"answer", "pair"}
    assert all(r["scenario"] is None for r in rows)
    assert Assignment.objects.filter(participant=participant).count() == 2


def test_items_are_kept_per_study_and_read_again_when_a_units_item_changes():
    study = answer_study_make(answers=1, pairs=1, live=False)
    kinds = {1: UnitKind.PAIR}
    assert [i.code for i in selectors.items_for_page(study=study, position=1, kinds=kinds)] == [
        "PP"
    ]
    SurveyItem.objects.filter(study=study, code="AU").update(unit_kind=UnitKind.PAIR)
    study.refresh_from_db()  # the database bumped items_version
    assert [i.code for i in selectors.items_for_page(study=study, position=1, kinds=kinds)] == [
        "AU",
        "PP",
    ]
    assert study.kind == StudyKind.ANSWERS


def test_units_made_by_the_factories_need_nothing_of_the_answer_studies_app():
    unit, pair = StudyAnswerUnitFactory(), PairUnitFactory()
    assert unit.kind == UnitKind.ANSWER and unit.scenario_id is None and unit.name.startswith("A")
    assert pair.kind == UnitKind.PAIR and pair.answer_b_text and pair.name.startswith("Pair")


def test_the_time_estimate_counts_the_explanations_of_one_page_not_of_every_kind_of_unit():
    study = answer_study_make(answers=2, pairs=1, scenarios_per_participant=2, live=False)
    estimate = selectors.study_estimate(study=study)
    assert (estimate.scenarios, estimate.explanations) == (2, 1)  # AH on an answer, PP on a pair
    assert estimate.basis.startswith("2 pages with 1 explanation each; the published study")
    SurveyItemFactory(study=study, code="AX", wording="What would you change?")
    study.refresh_from_db()
    assert selectors.study_estimate(study=study).explanations == 2
