"""`manage.py grade` and `manage.py run_status`: the pages' services from the command line."""

import io

import pytest
from django.core.management import CommandError, call_command

from apps.grading.models import CallState, ChecklistCall, GradingMode, GradingRun, Judgment
from apps.llm.models import RunStatus
from apps.runs.models import Response, ResponseStatus
from tests.factories import offline_model
from tests.grading.builders import (
    answered_run,
    graded_run,
    judgment_made_error,
    queue_unread,
    queued,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def quiet_queue():
    with queue_unread() as queue:
        yield queue


def run_command(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def answered(people, offline_provider_url):
    return answered_run(people, offline_provider_url)


@pytest.fixture
def grader(offline_provider_url):
    return offline_model(offline_provider_url, name="offline-grader")


def test_grade_creates_and_launches_a_run(answered, grader, quiet_queue):
    out = run_command(
        "grade",
        "--sampling-run",
        str(answered.pk),
        "--grader",
        grader.display_name,
        "--mode",
        "per_criterion",
        "--temperature",
        "0.5",
        "--budget",
        "3",
    )
    run = GradingRun.objects.get()
    assert run.status == RunStatus.RUNNING and run.mode == GradingMode.PER_CRITERION
    assert run.params == {"temperature": 0.5} and str(run.budget_usd) == "3.00"
    assert f"Grading run {run.pk} created" in out
    assert "The published auto-rater graded at temperature 0; this run uses 0.5." in out
    assert queued(quiet_queue) >= 1


def test_grade_draft_only_creates(answered, grader):
    out = run_command(
        "grade",
        "--sampling-run",
        str(answered.pk),
        "--grader",
        grader.display_name,
        "--draft",
        "--prompt-version",
        "1",
    )
    run = GradingRun.objects.get()
    assert run.status == RunStatus.DRAFT and run.prompt.version == 1
    assert "Draft: 4 calls for 4 answers." in out


def test_grade_names_the_graders_there_are(answered, grader):
    with pytest.raises(CommandError) as error:
        run_command("grade", "--sampling-run", str(answered.pk), "--grader", "gpt-nonexistent")
    assert "gpt-nonexistent" in str(error.value) and grader.display_name in str(error.value)
    assert not GradingRun.objects.exists()


def test_grade_refuses_a_bad_prompt_version_and_json(answered, grader):
    with pytest.raises(CommandError, match="prompt version 99"):
        run_command(
            "grade",
            "--sampling-run",
            str(answered.pk),
            "--grader",
            grader.display_name,
            "--prompt-version",
            "99",
        )
    with pytest.raises(CommandError, match="JSON object"):
        run_command(
            "grade",
            "--sampling-run",
            str(answered.pk),
            "--grader",
            grader.display_name,
            "--params",
            "[1]",
        )
    with pytest.raises(CommandError, match="mock_response is not a parameter"):
        run_command(
            "grade",
            "--sampling-run",
            str(answered.pk),
            "--grader",
            grader.display_name,
            "--params",
            '{"mock_response": "forged"}',
        )


@pytest.mark.worker
def test_grade_waits_with_a_progress_bar_until_the_run_ends(answered, grader, route_to_worker):
    from workers.engine import run_batch_task

    route_to_worker(run_batch_task)
    out = run_command(
        "grade", "--sampling-run", str(answered.pk), "--grader", grader.display_name, "--wait"
    )
    run = GradingRun.objects.get()
    assert run.status == RunStatus.FINISHED
    assert "\r[" in out and "4/4 calls, 0 errors" in out and out.rstrip().endswith("finished")
    assert ChecklistCall.objects.filter(grading_run=run, status=CallState.DONE).count() == 4


def test_run_status_prints_a_sampling_runs_counts(answered):
    Response.objects.filter(pk=answered.responses.first().pk).update(
        status=ResponseStatus.FAILED, error_kind="timeout"
    )
    for name in (f"sampling:{answered.pk}", str(answered.pk)):
        out = run_command("run_status", name)
        assert "Status: Finished" in out
        assert "Answers: pending 0, running 0, done 3, failed 1 (total 4)" in out
        assert "failed, Timed out: 1" in out
        assert "Cost: $" in out


def test_run_status_prints_a_grading_runs_counts(answered, grader):
    run = graded_run(answered, grader)
    judgment_made_error(Judgment.objects.filter(grading_run=run).first())
    out = run_command("run_status", f"grading:{run.pk}")
    met = Judgment.objects.filter(grading_run=run, status=CallState.DONE, met=True).count()
    not_met = Judgment.objects.filter(grading_run=run, status=CallState.DONE, met=False).count()
    total = Judgment.objects.filter(grading_run=run).count()
    assert met + not_met == total - 1
    assert "Calls: pending 0, running 0, done 4, error 0 (total 4); reused 0" in out
    assert f"Judgments: met {met}, not met {not_met}, error 1, pending 0 (total {total})" in out
    assert "Scores: 3 scored, 1 missing (1 with an error judgment" in out


def test_run_status_refuses_what_is_not_a_run(answered):
    with pytest.raises(CommandError, match="sampling:ID"):
        run_command("run_status", "banana:1")
    with pytest.raises(CommandError, match="No grading run 999"):
        run_command("run_status", "grading:999")
