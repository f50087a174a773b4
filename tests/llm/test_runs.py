"""The run lifecycle (apps/llm/runs.py), once for every kind of run: each action is allowed
from the statuses `MOVES` gives and refused, with the kind's own error, from every other;
launching and resuming start the run's work when their transaction commits, and nothing
else does."""

from decimal import Decimal

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.grading.models import GradingMode, GradingRun
from apps.grading.services import CHECKLIST_WORK, CRITERION_WORK
from apps.llm import runs
from apps.llm.models import Purpose, RunStatus
from apps.llm.selectors import prompt_current
from apps.questions.models import RewriteJob
from apps.questions.services.rewriting import REWRITE_WORK
from apps.runs.models import Response, ResponseStatus, SamplingRun
from apps.runs.services import SAMPLE_WORK
from apps.surveys.models import ProxyRun
from apps.surveys.services.proxies import PROXY_WORK
from tests.factories import ModelConfigFactory, question_make

ACTIONS = {
    "launch": runs.run_launch,
    "pause": runs.run_pause,
    "resume": runs.run_resume,
    "cancel": runs.run_cancel,
}
# What the engine does to a run, not a person: by the work, on the run's id.
ENGINE_ACTIONS = {
    "budget_reached": lambda work, run: work.budget_reached(run.pk),
    "finish": lambda work, run: work.finish(run.pk),
}
STARTS = {"launch", "resume"}


def sampling_run() -> SamplingRun:
    return SamplingRun.objects.create(name="S", prompt=prompt_current(purpose=Purpose.SAMPLE))


def grading_run(mode: str) -> GradingRun:
    purpose = Purpose.GRADE_CHECKLIST if mode == GradingMode.CHECKLIST else Purpose.GRADE_CRITERION
    return GradingRun.objects.create(
        name="G",
        sampling_run=sampling_run(),
        grader=ModelConfigFactory(),
        mode=mode,
        prompt=prompt_current(purpose=purpose),
    )


def proxy_run(make_study) -> ProxyRun:
    study = make_study(count=2, live=False)
    return ProxyRun.objects.create(study=study, prompt=prompt_current(purpose=Purpose.SURVEY_PROXY))


def rewrite_job() -> RewriteJob:
    return RewriteJob.objects.create(
        model=ModelConfigFactory(), prompt=prompt_current(purpose=Purpose.REWRITE)
    )


KINDS = {
    "sampling run": (SAMPLE_WORK, lambda make_study: sampling_run()),
    "grading run (checklist)": (CHECKLIST_WORK, lambda _: grading_run(GradingMode.CHECKLIST)),
    "grading run (per criterion)": (
        CRITERION_WORK,
        lambda _: grading_run(GradingMode.PER_CRITERION),
    ),
    "proxy run": (PROXY_WORK, proxy_run),
    "rewrite job": (REWRITE_WORK, lambda make_study: rewrite_job()),
}


@pytest.fixture(params=sorted(KINDS))
def kind(request, make_study):
    """(the kind's work, a new run of it, in draft)."""
    work, make = KINDS[request.param]
    return work, make(make_study)


# Where each kind's page posts a move (apps/llm/views.py run_control serves them all).
def _grading_url(run, move):
    return reverse(f"grading:run_{move}", args=[run.pk])


MOVE_URLS = {
    "sampling run": lambda run, move: reverse(f"runs:{move}", args=[run.pk]),
    "grading run (checklist)": _grading_url,
    "grading run (per criterion)": _grading_url,
    "proxy run": lambda run, move: reverse(
        f"surveys:proxy_run_{move}", args=[run.study_id, run.pk]
    ),
    "rewrite job": lambda run, move: reverse(f"questions:rewrite-job-{move}", args=[run.pk]),
}


def test_every_action_moves_a_run_only_from_the_statuses_it_allows(
    kind, django_capture_on_commit_callbacks
):
    work, run = kind
    model = type(run)
    for action, sources_target in runs.MOVES.items():
        if action == "rerun":
            continue  # retrying failed rows: below
        sources, target = sources_target
        for status in RunStatus.values:
            model.objects.filter(pk=run.pk).update(status=status, budget_usd=None)
            run.refresh_from_db()
            allowed = status in sources
            with django_capture_on_commit_callbacks() as started:
                if action in ENGINE_ACTIONS:
                    ENGINE_ACTIONS[action](work, run)
                elif allowed:
                    ACTIONS[action](work, run=run)
                else:
                    with pytest.raises(work.error, match=f"The {work.noun} is "):
                        ACTIONS[action](work, run=run)
            run.refresh_from_db()
            assert run.status == (target if allowed else status), (action, status)
            starts = allowed and action in STARTS
            assert bool(started) == starts, (action, status)
            if starts:
                assert run.launched_at is not None
            if allowed and target in (RunStatus.CANCELLED, RunStatus.FINISHED):
                assert run.finished_at is not None


def test_a_run_out_of_budget_resumes_only_once_its_budget_is_raised(kind):
    work, run = kind
    type(run).objects.filter(pk=run.pk).update(
        status=RunStatus.BUDGET_REACHED, budget_usd=Decimal("1.00")
    )
    run.refresh_from_db()
    # Nothing spent and nothing left to call: resuming is allowed.
    assert runs.run_resume(work, run=run).status == RunStatus.RUNNING
    with pytest.raises(work.error, match="more than \\$0"):
        runs.run_budget_set(work, run=run, budget_usd=Decimal(0))
    assert runs.run_budget_set(work, run=run, budget_usd=None).budget_usd is None


def test_a_cancelled_run_calls_nothing_again(kind):
    work, run = kind
    runs.run_cancel(work, run=run)
    with pytest.raises(work.error, match="was cancelled"):
        runs.run_failed_retry(work, run=run)


def test_retrying_failed_rows_runs_a_finished_run_again_and_starts_its_work(
    db, django_capture_on_commit_callbacks
):
    run = sampling_run()
    model = ModelConfigFactory()
    failed = Response.objects.create(
        run=run,
        model=model,
        question=question_make(),
        status=ResponseStatus.FAILED,
        error="boom",
        error_kind="rate_limited",
        attempts=3,
    )
    SamplingRun.objects.filter(pk=run.pk).update(status=RunStatus.FINISHED)
    run.refresh_from_db()
    with pytest.raises(Exception, match="Unknown kind of error"):
        runs.run_failed_retry(SAMPLE_WORK, run=run, error_kind="nonsense")
    assert runs.run_failed_retry(SAMPLE_WORK, run=run, error_kind="timeout") == 0

    with django_capture_on_commit_callbacks() as started:
        assert runs.run_failed_retry(SAMPLE_WORK, run=run, error_kind="rate_limited") == 1
    run.refresh_from_db()
    assert (run.status, run.finished_at) == (RunStatus.RUNNING, None)
    assert started, "a running run's retried rows are called"
    failed.refresh_from_db()
    assert (failed.status, failed.attempts, failed.error) == (ResponseStatus.PENDING, 0, "")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_run_page_makes_its_moves_and_says_what_happened(
    name, make_study, role_client, django_capture_on_commit_callbacks
):
    _work, make = KINDS[name]
    run = make(make_study)
    type(run).objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    web = role_client(Role.RESEARCHER)

    def post(move, **data):
        return web.post(MOVE_URLS[name](run, move), data, follow=True).content.decode()

    assert "Paused: no new calls are made" in post("pause")
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED
    assert "it cannot be paused now" in post("pause")  # the kind's own error, shown
    with django_capture_on_commit_callbacks(execute=False):
        assert "Resumed: only the" in post("resume")
    assert "Unknown kind of error: &#x27;nonsense&#x27;" in post("retry", error_kind="nonsense")
    if name != "rewrite job":  # a job's budget is not set on its page
        assert "Budget: $2.50." in post("budget", budget_usd="2.50")
        assert "Budget: Ensure this value is greater than or equal to 0.01." in post(
            "budget", budget_usd="0"
        )
        run.refresh_from_db()
        assert run.budget_usd == Decimal("2.50")
    assert "Cancelled: nothing more is called" in post("cancel", confirmed="yes")
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
