"""Grading runs on the bulk engine: both modes, scores, errors and reuse, against the
offline provider over real HTTP."""

import pytest

from apps.grading.models import CallState, ChecklistCall, GradingMode, Judgment, ResponseScore
from apps.grading.services import (
    CHECKLIST_WORK,
    CRITERION_WORK,
    grading_errors_retry,
    grading_run_create,
    grading_run_launch,
)
from apps.llm import engine
from apps.llm.models import LLMCall, RunStatus
from apps.rubrics import scoring
from apps.runs.services import SAMPLE_WORK, sampling_run_create, sampling_run_launch
from tests.factories import approved_rubric, offline_model, question_make

pytestmark = pytest.mark.django_db


def work_through(work, scope):
    while True:
        outcome = engine.batch_run(work=work.name, scope=scope)
        if outcome.again_in is None or (not outcome.claimed and outcome.again_in > 0):
            return


@pytest.fixture
def answered(people, offline_provider_url):
    """Two questions with approved rubrics, answered twice each by one offline model."""
    questions = []
    for _ in range(2):
        question = question_make()
        approved_rubric(question, people["erin"], people["rosa"])
        questions.append(question)
    model = offline_model(offline_provider_url, name="offline-thorough")
    run = sampling_run_create(name="S", questions=questions, models=[model], samples_per_item=2)
    sampling_run_launch(run=run)
    work_through(SAMPLE_WORK, run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    return run


@pytest.fixture
def grader(offline_provider_url):
    return offline_model(offline_provider_url, name="offline-grader")


@pytest.mark.parametrize("mode", [GradingMode.CHECKLIST, GradingMode.PER_CRITERION])
def test_both_modes_judge_every_criterion_and_scores_follow_the_rule(answered, grader, mode):
    grading = grading_run_create(sampling_run=answered, grader=grader, mode=mode)
    assert grading.params == {"temperature": 0}
    grading_run_launch(run=grading)
    work = CHECKLIST_WORK if mode == GradingMode.CHECKLIST else CRITERION_WORK
    work_through(work, grading.pk)
    grading.refresh_from_db()
    assert grading.status == RunStatus.FINISHED
    judgments = Judgment.objects.filter(grading_run=grading)
    per_answer = judgments.filter(response=answered.responses.first()).count()
    assert per_answer == answered.responses.first().question.rubrics.get().criteria.count()
    assert judgments.count() == 4 * per_answer
    assert judgments.filter(status=CallState.DONE, met__isnull=False).count() == judgments.count()
    assert all(j.explanation for j in judgments)
    calls = LLMCall.objects.filter(caller__startswith=work.name)
    assert calls.count() == (4 if mode == GradingMode.CHECKLIST else 4 * per_answer)
    for score in ResponseScore.objects.filter(grading_run=grading):
        rows = judgments.filter(response=score.response).select_related("criterion")
        expected = scoring.score(
            [
                scoring.ScoredCriterion(
                    j.criterion_id, j.criterion.polarity, j.criterion.kind, j.criterion.points
                )
                for j in rows
            ],
            {j.criterion_id: j.met for j in rows},
        )
        assert (score.earned_points, score.max_points) == (
            expected.earned_points,
            expected.max_points,
        )
    assert ResponseScore.objects.filter(grading_run=grading).count() == 4


def test_a_checklist_answer_recorded_twice_keeps_its_first_judgments(answered, grader):
    grading = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    grading_run_launch(run=grading)
    work_through(CHECKLIST_WORK, grading.pk)
    before = list(grading.judgments.order_by("pk").values_list("pk", "met", "explanation"))
    again = [
        {
            "grading_run_id": j.grading_run_id,
            "response_id": j.response_id,
            "criterion_id": j.criterion_id,
            "rubric_id": j.rubric_id,
            "checklist_id": j.checklist_id,
            "status": CallState.DONE,
            "met": not j.met,
            "explanation": "a second answer",
        }
        for j in grading.judgments.all()
    ]
    assert engine.rows_insert(Judgment, again) == 0
    assert list(grading.judgments.order_by("pk").values_list("pk", "met", "explanation")) == before


def test_a_checklist_call_whose_worker_kept_dying_leaves_an_error_for_every_criterion(
    answered, grader
):
    grading = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    grading_run_launch(run=grading)
    CHECKLIST_WORK.prepare(grading.pk)  # the rows a batch would claim
    lost = ChecklistCall.objects.filter(grading_run=grading).first()
    # What the sweep leaves when a call's worker died on every attempt.
    ChecklistCall.objects.filter(pk=lost.pk).update(
        status=CallState.ERROR, **CHECKLIST_WORK.gave_up()
    )
    work_through(CHECKLIST_WORK, grading.pk)
    criteria = lost.rubric.criteria.count()
    errors = Judgment.objects.filter(checklist=lost)
    assert errors.count() == criteria
    assert set(errors.values_list("status", "met", "explanation")) == {(CallState.ERROR, None, "")}
    assert {e.error for e in errors} == {
        "The checklist call failed: " + ChecklistCall.objects.get(pk=lost.pk).error
    }
    assert not ResponseScore.objects.filter(grading_run=grading, response=lost.response).exists()
    assert ResponseScore.objects.filter(grading_run=grading).count() == 3


def test_regrading_with_the_same_grader_and_prompt_reuses_the_calls(answered, grader):
    first = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    grading_run_launch(run=first)
    work_through(CHECKLIST_WORK, first.pk)
    paid = LLMCall.objects.count()
    second = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    grading_run_launch(run=second)
    work_through(CHECKLIST_WORK, second.pk)
    assert LLMCall.objects.count() == paid
    assert ChecklistCall.objects.filter(grading_run=second, reused_from__isnull=False).count() == 4
    mine = {(j.response_id, j.criterion_id, j.met) for j in second.judgments.all()}
    theirs = {(j.response_id, j.criterion_id, j.met) for j in first.judgments.all()}
    assert mine == theirs
    assert second.scores.count() == 4


def test_a_grader_that_never_answers_in_json_is_an_error_not_a_verdict(answered, offline_provider):
    url = offline_provider(rate_malformed=1.0)
    grader = offline_model(url, name="offline-grader")
    grading = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    grading_run_launch(run=grading)
    work_through(CHECKLIST_WORK, grading.pk)
    calls = ChecklistCall.objects.filter(grading_run=grading)
    assert calls.filter(status=CallState.ERROR, error_kind="invalid_output").count() == 4
    assert calls.exclude(raw_output="").count() == 4  # the grader's last answer is kept
    judgments = grading.judgments.all()
    assert judgments.count() > 0
    assert judgments.filter(status=CallState.ERROR, met__isnull=True).count() == judgments.count()
    assert grading.scores.count() == 0
    assert grading_errors_retry(run=grading, error_kind="invalid_output") == 4
    assert grading.judgments.count() == 0
