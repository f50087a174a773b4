"""A worker killed while it holds a job: the job is taken over and finishes within about a
lease, long before the broker's visibility timeout (7,200 s) would hand its message back.

The offline provider is slowed so that the kill lands mid-call. Each kind of leased job is
killed both ways: SIGKILL of the prefork pool child running it (the worker's main process
then requeues the message, whose redelivery finds the job still claimed), and SIGKILL of
the worker's main process (the message stays unacknowledged; a solo pool, so that the main
process is the one running the task, as the only process holding the message).
"""

import datetime as dt
import os
import signal
from dataclasses import dataclass

import pytest
from django.db.models import F, Q
from django.utils import timezone

from apps.llm import leases
from apps.llm.gateway import DEFAULT_POLICY
from apps.llm.models import CallStatus, LLMCall
from apps.rubrics import services as rubric_services
from apps.rubrics.models import AuthoringSettings, DraftJob, DraftStatus
from apps.rubrics.services.drafting import DRAFT_WORK
from apps.runs.models import Response, ResponseStatus
from apps.runs.services import REFERENCE_WORK, reference_models_set, sample_answers_draw
from apps.surveys import services as survey_services
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import (
    GenerationStatus,
    ResponseGeneration,
    ScenarioCallStatus,
    ScenarioResponseCall,
)
from apps.surveys.services.scenarios import SCENARIO_RESPONSE_WORK
from config.celery import TASK_MODULES, app
from tests.conftest import wait_until
from tests.factories import CODES, job_run, offline_model, question_assigned
from workers.engine import run_batch_task
from workers.leases import requeue_expired_task

LEASE_SECONDS = 6  # renewed every 2 s: room for a worker starved of CPU by a busy machine
WORKER_ENV = {"LLM_LEASE_SECONDS": str(LEASE_SECONDS)}
LATENCY_MS = 5000  # longer than it takes to see the claim and kill its holder


@dataclass(frozen=True)
class Kind:
    model: type
    work: object  # the engine's work; every kind runs in its one task, `run_batch`
    running: str
    done: str
    scope_of: object = None  # the scope of a row, when it is not the row's pk

    def scope(self, pk: int) -> int:
        return self.scope_of(pk) if self.scope_of else pk


KINDS = {
    "suggestions": Kind(DraftJob, DRAFT_WORK, DraftStatus.RUNNING, DraftStatus.DONE),
    "reference answer": Kind(Response, REFERENCE_WORK, ResponseStatus.RUNNING, ResponseStatus.DONE),
    # The generation's calls are the leased rows; its scope is the generation.
    "scenario responses": Kind(
        ScenarioResponseCall,
        SCENARIO_RESPONSE_WORK,
        ScenarioCallStatus.RUNNING,
        ScenarioCallStatus.DONE,
        scope_of=lambda pk: ScenarioResponseCall.objects.get(pk=pk).generation_id,
    ),
}


def job_make(kind: str, url: str, expert, scenarios) -> int:
    """A job of `kind`, made as the page that asks for it makes it; its pk."""
    model = offline_model(url, name="offline-thorough")
    if kind == "suggestions":
        AuthoringSettings.objects.update_or_create(pk=1, defaults={"draft_model": model})
        question = question_assigned(expert, topic="scams")
        rubric = rubric_services.rubric_start(question=question, user=expert)
        job, _started = rubric_services.draft_job_request(rubric=rubric, user=expert)
        return job.pk
    if kind == "reference answer":
        reference_models_set(models=[model])
        (answer,) = sample_answers_draw(question=question_assigned(expert), count=1)
        return answer.pk
    study = survey_services.study_create(
        scenarios=scenarios[:6], name="killed", **DEFAULT_TEXTS, **CODES
    )
    generation, _started = survey_services.scenario_responses_request(study=study, model=model)
    return generation.calls.order_by("pk").first().pk


@pytest.fixture
def routed():
    """`routed(queue)`: the engine's batches this process queues (the services' and the
    sweep's) go to the test's worker."""
    saved = app.conf.task_routes

    def route(queue: str) -> None:
        app.conf.update(task_routes={**app.conf.task_routes, run_batch_task.name: {"queue": queue}})

    yield route
    app.conf.update(task_routes=saved)


def holder_pid(kind: Kind, pk: int) -> int | None:
    row = kind.model.objects.filter(pk=pk, status=kind.running).first()
    return int(row.lease_owner.rsplit(":", 1)[1]) if row and row.lease_owner else None


@pytest.mark.worker
@pytest.mark.parametrize(
    "name,killed",
    # Each kind one way: all three run on the bulk engine, whose batches are killed both
    # ways in tests/workers/test_engine.py.
    [
        ("suggestions", "main process"),
        ("reference answer", "pool child"),
        ("scenario responses", "main process"),
    ],
)
def test_a_job_whose_worker_was_killed_is_taken_over_and_finishes(
    name,
    killed,
    start_worker,
    routed,
    migrated_rows,
    offline_provider,
    expert,
    scenarios,
    settings,
):
    settings.LLM_LEASE_SECONDS = LEASE_SECONDS  # the sweep's, in this process
    kind = KINDS[name]
    pk = job_make(name, offline_provider(latency_ms=LATENCY_MS), expert, scenarios)
    pool = "prefork" if killed == "pool child" else "solo"
    queue, worker = start_worker(env=WORKER_ENV, pool=pool)
    routed(queue)
    run_batch_task.delay(kind.work.name, kind.scope(pk))

    pid = wait_until(lambda: holder_pid(kind, pk), timeout=60)
    assert pid is not None
    assert (pid != worker.pid) == (killed == "pool child")
    os.kill(pid, signal.SIGKILL)
    if killed == "main process":
        worker.wait()
        # Its message is unacknowledged until the visibility timeout: a new worker on the
        # queue does not get it.
        start_worker(queue=queue, env=WORKER_ENV)
    assert kind.model.objects.get(pk=pk).status == kind.running  # the kill landed mid-call

    def finished() -> bool:
        requeue_expired_task.run()  # as beat runs it, every quarter of a lease
        return kind.model.objects.get(pk=pk).status == kind.done

    assert wait_until(finished, timeout=180, interval=0.5), kind.model.objects.values().get(pk=pk)
    row = kind.model.objects.get(pk=pk)
    assert row.attempts == 2  # the killed claim and the one that took over
    assert (row.lease_owner, row.lease_expires_at) == ("", None)


@pytest.mark.worker
def test_the_study_page_shows_a_stalled_generation_its_takeover_and_a_late_message_does_nothing(
    start_worker,
    routed,
    migrated_rows,
    offline_provider,
    researcher,
    scenarios,
    client,
    settings,
):
    settings.LLM_LEASE_SECONDS = LEASE_SECONDS
    kind = KINDS["scenario responses"]
    call = job_make("scenario responses", offline_provider(latency_ms=LATENCY_MS), None, scenarios)
    pk = kind.scope(call)
    generation = ResponseGeneration.objects.get(pk=pk)
    page_url = f"/studies/{generation.study_id}/"
    client.force_login(researcher)
    queue, worker = start_worker(env=WORKER_ENV)
    routed(queue)
    run_batch_task.delay(kind.work.name, pk)
    assert wait_until(lambda: holder_pid(kind, call), timeout=60) == worker.pid
    worker.kill()
    worker.wait()

    stalled = ScenarioResponseCall.objects.filter(
        generation_id=pk, status=ScenarioCallStatus.RUNNING
    )
    assert wait_until(lambda: all(c.lease_ran_out for c in stalled), timeout=30)
    page = client.get(page_url).content.decode()
    assert "the worker generating them stopped" in page
    assert "6 of 6 scenarios without a response to rate" in page

    start_worker(queue=queue, env=WORKER_ENV)
    assert requeue_expired_task.run()[kind.work.name] == 1
    assert wait_until(
        lambda: ResponseGeneration.objects.get(pk=pk).status == GenerationStatus.DONE, timeout=90
    )
    page = client.get(page_url).content.decode()
    assert "done" in page and "Every scenario has a response to rate." in page
    calls = LLMCall.objects.filter(status=CallStatus.OK).count()
    assert calls == 6
    # The dead worker's message, should the broker hand it back after its visibility timeout.
    assert run_batch_task.run(kind.work.name, pk)["claimed"] == 0
    assert requeue_expired_task.run()[kind.work.name] == 0
    assert LLMCall.objects.filter(status=CallStatus.OK).count() == calls


@pytest.mark.worker
def test_calls_that_keep_failing_keep_their_reason_and_the_page_shows_the_failure(
    start_worker, routed, migrated_rows, offline_provider, researcher, scenarios, client
):
    # Every call is rate limited: the gateway's bounded retries are spent on each, and the
    # call fails with its reason, for the researcher to generate the missing ones again.
    call = job_make(
        "scenario responses", offline_provider(rate_429=1, retry_after=0), None, scenarios
    )
    pk = KINDS["scenario responses"].scope(call)
    queue, _worker = start_worker(env=WORKER_ENV)
    routed(queue)
    run_batch_task.delay(SCENARIO_RESPONSE_WORK.name, pk)

    failed = lambda: ResponseGeneration.objects.get(pk=pk).status == GenerationStatus.FAILED  # noqa: E731
    assert wait_until(failed, timeout=180, interval=0.5)
    generation = ResponseGeneration.objects.get(pk=pk)
    calls = generation.calls.all()
    assert {(c.status, c.error_kind, c.attempts) for c in calls} == {
        (ScenarioCallStatus.FAILED, CallStatus.RATE_LIMITED, 1)
    }
    # Each of the six calls was asked with the gateway's own bounded retries, once.
    asked = LLMCall.objects.filter(caller__startswith="scenario_response_call:")
    assert asked.count() == 6 * DEFAULT_POLICY.max_attempts
    client.force_login(researcher)
    page = client.get(f"/studies/{generation.study_id}/").content.decode()
    assert "failed: 6 scenario(s) still have no response: 6 call(s) failed" in page


def claimed_by(rows, *, states: leases.LeaseStates, owner: str) -> int:
    """Claim `rows` for `owner` as a worker does (apps/llm/engine.py): the waiting ones and
    the running ones whose lease ran out, with attempts left; how many."""
    now = timezone.now()
    claimable = Q(status=states.waiting) | Q(status=states.running, lease_expires_at__lt=now)
    return rows.filter(claimable, attempts__lt=leases.MAX_ATTEMPTS).update(
        status=states.running,
        lease_owner=owner,
        lease_expires_at=now + leases.lease_duration(),
        attempts=F("attempts") + 1,
    )


def test_a_job_whose_worker_keeps_dying_fails_with_a_message_after_its_attempts(
    migrated_rows, expert, scenarios, offline_provider_url, settings
):
    pk = job_make("suggestions", offline_provider_url, expert, scenarios)
    rows = DraftJob.objects.filter(pk=pk)
    states = leases.LeaseStates(DraftStatus.QUEUED, DraftStatus.RUNNING, DraftStatus.FAILED)
    for attempt in range(1, leases.MAX_ATTEMPTS + 1):
        # A worker claims it and dies at once: its lease is left to run out.
        assert claimed_by(rows, states=states, owner=f"dead:{attempt}")
        rows.update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
        requeued = DRAFT_WORK.expired()
        assert requeued == ([pk] if attempt < leases.MAX_ATTEMPTS else [])
    job = rows.get()
    assert job.status == DraftStatus.FAILED and job.attempts == leases.MAX_ATTEMPTS
    assert "stopped 3 times" in job.error
    assert job_run(DRAFT_WORK, pk) is None  # a late message does nothing


def test_asking_again_for_suggestions_resumes_the_job_a_dead_worker_held(
    migrated_rows, expert, scenarios, offline_provider_url
):
    pk = job_make("suggestions", offline_provider_url, expert, scenarios)
    rows = DraftJob.objects.filter(pk=pk)
    states = rubric_services.drafting.LEASE_STATES
    assert claimed_by(rows, states=states, owner="dead:1")
    job = rows.get()
    assert rubric_services.draft_job_request(rubric=job.rubric, user=expert) == (job, False)
    assert job_run(DRAFT_WORK, pk) is None  # held by a live-looking worker

    rows.update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))  # it died
    assert rubric_services.draft_job_request(rubric=job.rubric, user=expert) == (job, True)
    resumed = job_run(DRAFT_WORK, pk)
    assert resumed.status == DraftStatus.DONE and resumed.attempts == 2
    assert resumed.suggestions.exists()


def test_the_lease_sweep_is_a_listed_task_that_beat_runs_within_a_lease():
    from django.conf import settings

    entry = next(
        e for e in app.conf.beat_schedule.values() if e["task"] == requeue_expired_task.name
    )
    assert entry["schedule"] < settings.LLM_LEASE_SECONDS
    assert "workers.leases" in TASK_MODULES
    assert settings.LLM_LEASE_SECONDS < settings.CELERY_TASK_TIME_LIMIT
