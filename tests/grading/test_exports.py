"""The grading run's CSV exports: judgments in long format, scores with the missing ones,
streamed and safe to open in a spreadsheet."""

import csv
import io

import pytest
from django.urls import reverse

from apps.grading.models import Judgment
from tests.factories import offline_model
from tests.grading.builders import answered_run, graded_run, judgment_made_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(people, offline_provider_url):
    answered = answered_run(people, offline_provider_url)
    grader = offline_model(offline_provider_url, name="offline-grader")
    return graded_run(answered, grader)


def rows_of(response) -> list[dict]:
    assert response["Content-Type"].startswith("text/csv")
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_judgments_csv_has_a_row_per_answer_and_criterion(client, researcher, graded):
    client.force_login(researcher)
    rows = rows_of(client.get(reverse("grading:export_judgments", args=[graded.pk])))
    answers = graded.sampling_run.responses.all()
    criteria = answers.first().question.rubrics.get().criteria.count()
    assert len(rows) == len(answers) * criteria == 4 * criteria
    assert {(r["response id"], r["criterion id"]) for r in rows} == {
        (str(j.response_id), str(j.criterion_id))
        for j in Judgment.objects.filter(grading_run=graded)
    }
    first = rows[0]
    judgment = Judgment.objects.select_related("criterion", "rubric", "response__question").get(
        grading_run=graded, response_id=first["response id"], criterion_id=first["criterion id"]
    )
    assert first["question"] == judgment.response.question.external_id
    assert first["rubric version"] == str(judgment.rubric.version)
    assert first["criterion"] == judgment.criterion.text
    assert first["met"] == ("true" if judgment.met else "false")
    assert first["explanation"] == judgment.explanation
    assert first["status"] == "done" and first["reused"] == "false"


def test_an_explanation_that_looks_like_a_formula_is_neutralised(client, researcher, graded):
    client.force_login(researcher)
    first, second = Judgment.objects.filter(grading_run=graded)[:2]
    Judgment.objects.filter(pk=first.pk).update(explanation='=HYPERLINK("http://x.test","click")')
    Judgment.objects.filter(pk=second.pk).update(explanation="+1 because it says so")
    rows = rows_of(client.get(reverse("grading:export_judgments", args=[graded.pk])))
    explanations = {r["explanation"] for r in rows}
    assert '\'=HYPERLINK("http://x.test","click")' in explanations
    assert "'+1 because it says so" in explanations
    assert not any(e.startswith(("=", "+")) for e in explanations)


def test_scores_csv_has_every_answer_and_says_why_one_is_missing(client, researcher, graded):
    client.force_login(researcher)
    broken = judgment_made_error(Judgment.objects.filter(grading_run=graded).first())
    rows = rows_of(client.get(reverse("grading:export_scores", args=[graded.pk])))
    assert len(rows) == graded.sampling_run.responses.count() == 4
    missing = [r for r in rows if r["status"] == "missing"]
    assert [r["response id"] for r in missing] == [str(broken.response_id)]
    assert missing[0]["score"] == "" and "error" in missing[0]["missing reason"]
    for row in rows:
        if row["status"] != "scored":
            continue
        score = graded.scores.get(response_id=row["response id"])
        assert float(row["score"]) == pytest.approx(score.score)
        assert (int(row["earned points"]), int(row["max points"])) == (
            score.earned_points,
            score.max_points,
        )
        earned, total = score.breakdown["positive_factual_met"]
        assert (row["positive_factual_met earned"], row["positive_factual_met total"]) == (
            str(earned),
            str(total),
        )


CONSOLE_MODELS = [
    "gradingrun",
    "checklistcall",
    "judgment",
    "responsescore",
    "calibrationset",
    "calibrationsample",
    "expertjudgment",
    "calibration",
]


def test_the_console_lists_every_grading_table_read_only(client, researcher, graded):
    client.force_login(researcher)
    for name in CONSOLE_MODELS:
        page = client.get(reverse(f"admin:grading_{name}_changelist"))
        assert page.status_code == 200, name
        assert reverse(f"admin:grading_{name}_changelist") + "add/" not in page.content.decode()
    judgment = Judgment.objects.filter(grading_run=graded).first()
    change = client.get(reverse("admin:grading_judgment_change", args=[judgment.pk]))
    assert change.status_code == 200 and 'name="_save"' not in change.content.decode()


def test_the_console_exports_judgments_with_their_explanations(client, researcher, graded):
    client.force_login(researcher)
    judgments = Judgment.objects.filter(grading_run=graded)
    Judgment.objects.filter(pk=judgments.first().pk).update(explanation="@SUM(A1) is cited")
    response = client.post(
        reverse("admin:grading_judgment_changelist"),
        {"action": "export_as_csv", "_selected_action": [j.pk for j in judgments]},
    )
    rows = rows_of(response)
    assert len(rows) == judgments.count()
    assert {"criterion_text", "explanation", "met"} <= set(rows[0])
    assert "'@SUM(A1) is cited" in {r["explanation"] for r in rows}
