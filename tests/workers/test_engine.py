"""The bulk engine (apps/llm/engine.py) worked by real Celery workers, against the offline
provider over HTTP: a run ends with each call made once, a duplicated batch repeats
nothing, a worker killed mid-batch loses and repeats nothing it recorded, pause, cancel
and the budget stop new calls (and the chains that make them), and a grading run started
before its answers exist finishes once they do, faults included.

Everything is counted: rows in the database, the ledger, and the requests the provider
received. Waits are for a state to be reached, never a bound on how long it takes.
"""

import os
import signal
import time
from decimal import Decimal

import pytest

from apps.grading.models import CallState, ChecklistCall, GradingMode, Judgment, ResponseScore
from apps.grading.services import (
    approved_rubrics,
    criteria_of,
    grading_run_create,
    grading_run_launch,
    work_for_run,
)
from apps.llm import engine
from apps.llm.engine import scope_start
from apps.llm.models import CallStatus, LLMCall, RunStatus
from apps.runs.errors import RunError
from apps.runs.models import Response, ResponseStatus
from apps.runs.services import (
    SAMPLE_WORK,
    sampling_run_cancel,
    sampling_run_create,
    sampling_run_launch,
    sampling_run_pause,
    sampling_run_resume,
)
from tests.conftest import wait_until
from tests.factories import approved_rubric, offline_model, question_make
from tests.workers.engine_builders import (
    dead,
    engine_workers,
    holders,
    provider_requests,
    provider_stats,
    quiet,
    statuses,
    texts_recorded,
)
from workers.engine import run_batch_task
from workers.leases import requeue_expired_task

__all__ = ["engine_workers"]  # the fixture, imported to be found

pytestmark = pytest.mark.worker

LEASE_SECONDS = 6  # renewed every 2 s: room for a worker starved of CPU by a busy machine
DONE, RUNNING, PENDING, FAILED = (
    ResponseStatus.DONE,
    ResponseStatus.RUNNING,
    ResponseStatus.PENDING,
    ResponseStatus.FAILED,
)


def sampling_run(
    url, *, questions=2, models=("offline-terse", "offline-friendly"), samples=2, **fields
):
    """A launched run: its batches are queued (by the launch, when it commits)."""
    model_fields = fields.pop("model_fields", {})
    configs = [offline_model(url, name=name, **model_fields) for name in models]
    run = sampling_run_create(
        name="Engine",
        questions=[question_make() for _ in range(questions)],
        models=configs,
        samples_per_item=samples,
        **fields,
    )
    return sampling_run_launch(run=run)


def run_status(run) -> str:
    run.refresh_from_db()
    return run.status


def ended(run, status=RunStatus.FINISHED, timeout=120):
    """Wait until the run has `status` and no row is held."""
    reached = wait_until(
        lambda: run_status(run) == status and not run.responses.filter(status=RUNNING).exists(),
        timeout=timeout,
        interval=0.2,
    )
    assert reached, (run.status, statuses(run))


def ledger_ok(run) -> dict[int, int]:
    """OK ledger rows per response of the run."""
    ok = {pk: 0 for pk in run.responses.values_list("pk", flat=True)}
    callers = LLMCall.objects.filter(caller__startswith="runs.sample:", status=CallStatus.OK)
    for caller in callers.values_list("caller", flat=True):
        pk = int(caller.split(":")[1])
        if pk in ok:
            ok[pk] += 1
    return ok


def test_a_launched_run_is_worked_without_its_caller_queueing_anything(
    engine_workers, offline_provider
):
    url = offline_provider(latency_ms=100)
    worker = engine_workers.start()
    run = sampling_run(url, questions=3, samples=2)  # launched: nothing else is queued here

    ended(run)
    assert statuses(run) == {DONE: 12}
    assert run.responses.exclude(text="").count() == 12
    assert set(ledger_ok(run).values()) == {1}
    assert LLMCall.objects.count() == 12  # no failed attempt either
    assert provider_requests(url) == 12
    assert run.finished_at is not None
    assert quiet(worker)  # the chains ended with the run


def test_a_batch_delivered_many_times_makes_each_call_once(engine_workers, offline_provider):
    url = offline_provider(latency_ms=300)
    worker = engine_workers.start(pool="prefork")  # two processes claiming at once
    run = sampling_run(url, questions=2, models=("offline-terse",), samples=3)
    scope_start(SAMPLE_WORK.name, run.pk, chains=2)
    for _ in range(4):  # the same message again, as a redelivery would bring it
        run_batch_task.delay(SAMPLE_WORK.name, run.pk)

    ended(run)
    assert statuses(run) == {DONE: 6}
    assert set(run.responses.values_list("attempts", flat=True)) == {1}
    assert set(ledger_ok(run).values()) == {1}
    assert provider_requests(url) == 6
    assert quiet(worker)

    # A late copy after the run finished does nothing.
    before = worker.batches_run()
    run_batch_task.delay(SAMPLE_WORK.name, run.pk)
    assert wait_until(lambda: (worker.batches_run() or 0) > before, timeout=30)
    assert provider_requests(url) == 6
    assert LLMCall.objects.count() == 6


@pytest.mark.parametrize("killed", ["pool child", "main process"])
def test_a_worker_killed_mid_batch_loses_nothing_and_repeats_nothing_recorded(
    killed, engine_workers, offline_provider, settings
):
    settings.LLM_LEASE_SECONDS = LEASE_SECONDS  # the sweep's, in this process
    engine_workers.env = {"LLM_LEASE_SECONDS": str(LEASE_SECONDS)}
    # Every call in flight at once (a dead worker's concurrency slots stay taken until their
    # own lease runs out), answers spread over 1 to 3 s so that the kill lands mid-batch.
    url = offline_provider(latency_ms=1000, jitter_ms=2000)
    if killed == "pool child":
        workers = [engine_workers.start(pool="prefork")]
    else:
        # Two solo workers from the start, so the one left takes over without a cold start.
        workers = [engine_workers.start(), engine_workers.start()]
    mains = {w.pid: w for w in workers}
    run = sampling_run(url, questions=4, samples=3, model_fields={"max_concurrent": 32})
    total = 24
    scope_start(SAMPLE_WORK.name, run.pk)

    def mid_batch():
        held = holders(run)
        if run.responses.filter(status=DONE).count() >= 2 and held:
            return held.most_common(1)[0][0]
        return None

    pid = wait_until(mid_batch, timeout=90, interval=0.05)
    assert pid is not None, statuses(run)
    assert (pid not in mains) == (killed == "pool child")
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: dead(pid), timeout=30)
    time.sleep(0.5)  # what the dead process had written to its sockets reaches the provider
    running_under_dead = run.responses.filter(
        status=RUNNING, lease_owner__endswith=f":{pid}"
    ).count()
    assert running_under_dead > 0, statuses(run)  # the kill landed mid-batch
    recorded = texts_recorded(run)
    requests_at_kill = provider_requests(url)
    if killed == "main process":
        # Its message stays unacknowledged until the visibility timeout (hours): the other
        # worker does not get it; it gets the sweep's batch.
        mains[pid].process.wait()

    def finished() -> bool:
        requeue_expired_task.run()  # as beat runs it, every quarter of a lease
        return run_status(run) == RunStatus.FINISHED

    assert wait_until(finished, timeout=180, interval=0.5), statuses(run)
    assert statuses(run) == {DONE: total}
    assert Response.objects.filter(run=run).count() == total
    after = texts_recorded(run)
    assert {pk: after[pk] for pk in recorded} == recorded  # nothing recorded was redone
    ok = ledger_ok(run)
    assert all(ok[pk] == 1 for pk in recorded)
    assert all(count >= 1 for count in ok.values())
    requests = provider_requests(url)
    assert requests <= total + running_under_dead
    # After the kill, one request per row not recorded at the kill, at most.
    assert requests - requests_at_kill <= total - len(recorded)
    retaken = run.responses.filter(attempts=2).count()
    assert retaken == running_under_dead
    assert run.responses.exclude(pk__in=recorded).filter(attempts=1).count() == (
        total - len(recorded) - running_under_dead
    )


def test_pause_stops_new_calls_and_resume_repeats_no_finished_row(engine_workers, offline_provider):
    # Two calls at a time per model, 3 s each: a pause lands with four calls in flight.
    url = offline_provider(latency_ms=3000)
    worker = engine_workers.start()
    run = sampling_run(url, samples=4, model_fields={"max_concurrent": 2})
    total, slots = 16, 4
    scope_start(SAMPLE_WORK.name, run.pk)
    assert wait_until(lambda: run.responses.filter(status=DONE).exists(), timeout=60)

    sampling_run_pause(run=run)
    at_pause = provider_requests(url)
    assert wait_until(lambda: not run.responses.filter(status=RUNNING).exists(), timeout=60)
    assert quiet(worker)  # the batch chains stop; nothing polls a paused run
    requests = provider_requests(url)
    # The calls in flight finish; each slot may start one more before the pause is seen.
    assert requests <= at_pause + slots
    counts = statuses(run)
    assert counts[DONE] == requests  # every call started was recorded
    assert counts[PENDING] == total - requests > 0
    assert run_status(run) == RunStatus.PAUSED
    pending = run.responses.filter(status=PENDING)
    assert set(pending.values_list("attempts", "lease_owner", "text")) == {(0, "", "")}
    recorded = texts_recorded(run)

    sampling_run_resume(run=run)  # which starts the run's batches again
    ended(run)
    assert statuses(run) == {DONE: total}
    after = texts_recorded(run)
    assert {pk: after[pk] for pk in recorded} == recorded
    assert set(ledger_ok(run).values()) == {1}
    assert provider_requests(url) == total


def test_cancel_stops_the_run_for_good(engine_workers, offline_provider):
    url = offline_provider(latency_ms=2000)
    worker = engine_workers.start()
    run = sampling_run(url, samples=4, model_fields={"max_concurrent": 2})
    scope_start(SAMPLE_WORK.name, run.pk)
    assert wait_until(lambda: run.responses.filter(status=DONE).exists(), timeout=60)

    sampling_run_cancel(run=run)
    assert wait_until(lambda: not run.responses.filter(status=RUNNING).exists(), timeout=60)
    assert quiet(worker)
    requests = provider_requests(url)
    counts = statuses(run)
    assert counts[DONE] == requests and counts[PENDING] == 16 - requests > 0
    # Neither the sweep nor a late message calls anything more.
    assert requeue_expired_task.run()[SAMPLE_WORK.name] == 0
    before = worker.batches_run()
    run_batch_task.delay(SAMPLE_WORK.name, run.pk)
    assert wait_until(lambda: (worker.batches_run() or 0) > before, timeout=30)
    assert quiet(worker)
    assert provider_requests(url) == requests
    assert statuses(run) == counts
    with pytest.raises(RunError):
        sampling_run_resume(run=run)
    assert run_status(run) == RunStatus.CANCELLED


def test_the_budget_stops_the_run_and_leaves_pending_rows_untouched(
    engine_workers, offline_provider
):
    url = offline_provider(latency_ms=200)
    worker = engine_workers.start()
    budget = Decimal("1.00")
    # $1,000 per million tokens out: about $0.10 a call, reserved at the ceiling of 600
    # tokens out ($0.60) until the model has answered enough, so $1 buys a few calls.
    run = sampling_run(
        url,
        models=("offline-terse",),
        questions=5,
        samples=4,
        budget_usd=budget,
        model_fields={"output_price_per_mtok": Decimal(1000)},
    )
    total = 20
    scope_start(SAMPLE_WORK.name, run.pk)

    def stopped() -> bool:
        committed = engine.committed(run.responses.all(), states=SAMPLE_WORK.states)
        assert committed <= budget  # spent plus what the calls in flight hold, at all times
        return run_status(run) == RunStatus.BUDGET_REACHED and not (
            run.responses.filter(status=RUNNING).exists()
        )

    assert wait_until(stopped, timeout=120, interval=0.1), statuses(run)
    assert quiet(worker)  # no chain keeps asking a run that has no budget left
    done = run.responses.filter(status=DONE)
    assert 0 < done.count() < total
    spent = sum(r.cost_usd for r in run.responses.exclude(cost_usd=None))
    assert spent <= budget
    assert statuses(run) == {DONE: done.count(), PENDING: total - done.count()}
    pending = run.responses.filter(status=PENDING)
    assert set(
        pending.values_list(
            "attempts", "lease_owner", "text", "cost_usd", "reserved_usd", "started_at"
        )
    ) == {(0, "", "", None, None, None)}
    assert provider_requests(url) == done.count()
    assert set(ledger_ok(run).values()) == {0, 1}
    assert sum(ledger_ok(run).values()) == done.count()


def graded(grading, sampling) -> tuple[list[Response], dict]:
    """The sampling run's answered rows, and each one's criteria, as the grading run sees
    them (the approved rubric of its question)."""
    answered = list(sampling.responses.filter(status=DONE))
    rubrics = approved_rubrics(r.question_id for r in answered)
    criteria = criteria_of(r.pk for r in rubrics.values())
    return answered, {r.pk: criteria[rubrics[r.question_id].pk] for r in answered}


def questions_with_rubrics(people, count):
    questions = []
    for _ in range(count):
        question = question_make()
        approved_rubric(question, people["erin"], people["rosa"])
        questions.append(question)
    return questions


@pytest.mark.parametrize("mode", [GradingMode.CHECKLIST, GradingMode.PER_CRITERION])
def test_grading_launched_before_its_answers_exist_finishes_once_sampling_does(
    mode, engine_workers, offline_provider, people
):
    url = offline_provider(latency_ms=300)
    engine_workers.start(pool="prefork")
    names = ("offline-terse", "offline-friendly")
    models = [offline_model(url, name=n, max_concurrent=2) for n in names]
    sampling = sampling_run_create(
        name="S", questions=questions_with_rubrics(people, 2), models=models, samples_per_item=2
    )
    sampling_run_launch(run=sampling)
    grading = grading_run_create(
        sampling_run=sampling, grader=offline_model(url, name="offline-grader"), mode=mode
    )
    grading_run_launch(run=grading)
    work = work_for_run(grading)
    scope_start(work.name, grading.pk)
    assert run_status(sampling) == RunStatus.RUNNING
    assert not sampling.responses.filter(status=DONE).exists()  # nothing to grade yet

    scope_start(SAMPLE_WORK.name, sampling.pk)
    ended(sampling)
    assert wait_until(lambda: run_status(grading) == RunStatus.FINISHED, timeout=120), (
        grading.status
    )
    answered, criteria = graded(grading, sampling)
    assert len(answered) == 8
    judgments = Judgment.objects.filter(grading_run=grading)
    expected = sum(len(criteria[r.pk]) for r in answered)
    assert judgments.count() == expected
    assert judgments.filter(status=CallState.DONE, met__isnull=False).count() == expected
    for response in answered:
        mine = judgments.filter(response=response)
        assert set(mine.values_list("criterion_id", flat=True)) == {
            c.pk for c in criteria[response.pk]
        }
    grader_calls = LLMCall.objects.filter(caller__startswith=f"{work.name}:")
    if mode == GradingMode.CHECKLIST:
        checklists = ChecklistCall.objects.filter(grading_run=grading)
        assert checklists.filter(status=CallState.DONE).count() == checklists.count() == 8
        assert set(checklists.values_list("response_id", flat=True)) == {r.pk for r in answered}
        assert grader_calls.filter(status=CallStatus.OK).count() == 8
    else:
        assert grader_calls.filter(status=CallStatus.OK).count() == expected
    assert ResponseScore.objects.filter(grading_run=grading).count() == 8
    assert provider_requests(url) == LLMCall.objects.count()


def test_faults_end_every_row_done_or_failed_and_every_judgment_met_or_an_error(
    engine_workers, offline_provider, people
):
    url = offline_provider(rate_429=0.3, rate_malformed=0.3, retry_after=0, fault_seed=7)
    engine_workers.start(pool="prefork")
    models = [offline_model(url, name=n) for n in ("offline-terse", "offline-friendly")]
    sampling = sampling_run_create(
        name="F", questions=questions_with_rubrics(people, 3), models=models, samples_per_item=2
    )
    sampling_run_launch(run=sampling)
    scope_start(SAMPLE_WORK.name, sampling.pk)
    ended(sampling)
    counts = statuses(sampling)
    assert counts[DONE] + counts[FAILED] == 12
    assert not sampling.responses.filter(status=FAILED, error_kind="").exists()
    ok = ledger_ok(sampling)
    for response in sampling.responses.all():
        assert ok[response.pk] == (1 if response.status == DONE else 0)

    grading = grading_run_create(
        sampling_run=sampling,
        grader=offline_model(url, name="offline-grader"),
        mode=GradingMode.CHECKLIST,
    )
    grading_run_launch(run=grading)
    scope_start(work_for_run(grading).name, grading.pk)
    assert wait_until(lambda: run_status(grading) == RunStatus.FINISHED, timeout=120)

    answered, criteria = graded(grading, sampling)
    checklists = ChecklistCall.objects.filter(grading_run=grading)
    assert checklists.count() == len(answered)
    assert checklists.filter(status__in=[CallState.DONE, CallState.ERROR]).count() == len(answered)
    judgments = Judgment.objects.filter(grading_run=grading)
    met_or_not = judgments.filter(status=CallState.DONE, met__isnull=False).count()
    errors = judgments.filter(status=CallState.ERROR, met__isnull=True).count()
    assert met_or_not + errors == judgments.count() == sum(len(c) for c in criteria.values())
    for checklist in checklists:
        mine = judgments.filter(checklist=checklist)
        wanted = CallState.DONE if checklist.status == CallState.DONE else CallState.ERROR
        assert set(mine.values_list("status", flat=True)) == {wanted}
    scored = ResponseScore.objects.filter(grading_run=grading).count()
    assert scored == checklists.filter(status=CallState.DONE).count()
    # Every request the provider received is in the ledger, the faults among them.
    stats = provider_stats(url)
    assert stats["faults"].get("429", 0) > 0 and stats["faults"].get("malformed", 0) > 0
    assert stats["requests"] == LLMCall.objects.count()
    assert (
        LLMCall.objects.filter(status=CallStatus.INVALID_OUTPUT).count()
        == (stats["faults"]["malformed"])
    )
