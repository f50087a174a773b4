"""Proxy runs (apps/surveys/services/proxies.py) worked by real Celery workers, against the
offline provider over HTTP: a run ends with one call per (proxy, scenario), recorded once as
an assignment with an answer per item; a worker killed mid-run loses nothing and repeats
nothing it recorded; a batch after the run finished calls nothing.

Everything is counted: rows in the database, the ledger, and the requests the provider
received. Waits are for a state to be reached, never a bound on how long it takes.
"""

import os
import signal
import time
from collections import Counter

import pytest

from apps.llm.engine import scope_start
from apps.llm.models import CallStatus, LLMCall, RunStatus
from apps.surveys import services
from apps.surveys.models import (
    Answer,
    Assignment,
    AssignmentStatus,
    Participant,
    ParticipantStatus,
    ProxyCallStatus,
)
from apps.surveys.services.proxies import proxy_items
from tests.conftest import wait_until
from tests.factories import offline_model
from tests.workers.engine_builders import dead, engine_workers, provider_requests, quiet
from workers.engine import run_batch_task
from workers.leases import requeue_expired_task

__all__ = ["engine_workers"]  # the fixture, imported to be found

pytestmark = pytest.mark.worker

WORK = services.PROXY_WORK.name
LEASE_SECONDS = 6  # renewed every 2 s: room for a worker starved of CPU by a busy machine
MODELS = ("offline-terse", "offline-thorough")
RUNS, SCENARIOS = 3, 20
TOTAL = len(MODELS) * RUNS * SCENARIOS
DONE, RUNNING = ProxyCallStatus.DONE, ProxyCallStatus.RUNNING


def proxy_run(make_study, url, **model_fields):
    """A launched run of every model in MODELS, RUNS runs each, over SCENARIOS scenarios;
    its batches are not queued yet."""
    study = make_study(live=False, count=SCENARIOS)
    models = [offline_model(url, name=name, **model_fields) for name in MODELS]
    run = services.proxy_run_create(study=study, models=models, runs_per_model=RUNS, seed=11)
    return services.proxy_run_launch(run=run)


def run_status(run) -> str:
    run.refresh_from_db()
    return run.status


def statuses(run) -> Counter:
    return Counter(run.calls.values_list("status", flat=True))


def holders(run) -> Counter:
    """The pids holding the run's running calls, with how many each holds."""
    owners = run.calls.filter(status=RUNNING).exclude(lease_owner="")
    return Counter(int(o.rsplit(":", 1)[1]) for o in owners.values_list("lease_owner", flat=True))


def ended(run, timeout=180):
    """Wait until the run has finished and no call is held."""
    reached = wait_until(
        lambda: (
            run_status(run) == RunStatus.FINISHED and not run.calls.filter(status=RUNNING).exists()
        ),
        timeout=timeout,
        interval=0.2,
    )
    assert reached, (run.status, statuses(run))


def ledger_ok(run) -> dict[int, int]:
    """OK ledger rows per call of the run."""
    ok = dict.fromkeys(run.calls.values_list("pk", flat=True), 0)
    callers = LLMCall.objects.filter(caller__startswith="proxy_call:", status=CallStatus.OK)
    for caller in callers.values_list("caller", flat=True):
        pk = int(caller.split(":")[1])
        if pk in ok:
            ok[pk] += 1
    return ok


def recorded(run) -> dict[int, tuple]:
    """What every done call holds, with its assignment and answers: never changed once
    recorded."""
    answers = {}
    for row in Answer.objects.filter(assignment__participant__proxy_run=run).values_list(
        "assignment__participant_id",
        "assignment__study_scenario_id",
        "item__code",
        "value",
        "explanation",
        "saved_at",
    ):
        answers.setdefault(row[:2], []).append(row[2:])
    done = {}
    for call in run.calls.filter(status=DONE):
        stored = sorted(answers.get((call.participant_id, call.study_scenario_id), []))
        done[call.pk] = (call.completed_at, call.cost_usd, call.output_tokens, tuple(stored))
    return done


def assert_answered_once(run) -> None:
    """One assignment (status proxy, at the call's position) per call, an answer per item
    for each, every proxy finished: nothing lost, nothing stored twice."""
    calls = list(run.calls.values_list("participant_id", "study_scenario_id", "position"))
    assert len(calls) == TOTAL
    assignments = Assignment.objects.filter(participant__proxy_run=run)
    assert assignments.count() == TOTAL
    assert sorted(assignments.values_list("participant_id", "study_scenario_id", "position")) == (
        sorted(calls)
    )
    assert set(assignments.values_list("status", flat=True)) == {AssignmentStatus.PROXY}
    codes = sorted(item.code for item in proxy_items(study=run.study))
    answers = Answer.objects.filter(assignment__participant__proxy_run=run)
    assert answers.count() == TOTAL * len(codes)
    per_assignment = {}
    for assignment_id, code in answers.values_list("assignment_id", "item__code"):
        per_assignment.setdefault(assignment_id, []).append(code)
    assert len(per_assignment) == TOTAL
    assert all(sorted(found) == codes for found in per_assignment.values())
    assert not answers.filter(value="").exists()  # every answer on the item's scale
    proxies = Participant.objects.filter(proxy_run=run)
    assert proxies.count() == len(MODELS) * RUNS
    assert set(proxies.values_list("status", flat=True)) == {ParticipantStatus.FINISHED}
    assert not proxies.filter(finished_at=None).exists()


def test_a_proxy_run_worked_by_a_worker_answers_every_scenario_once(
    engine_workers, offline_provider, make_study
):
    url = offline_provider(latency_ms=300)
    worker = engine_workers.start()
    run = proxy_run(make_study, url)
    scope_start(WORK, run.pk)

    ended(run)
    assert statuses(run) == {DONE: TOTAL}
    assert_answered_once(run)
    assert run.finished_at is not None
    assert set(ledger_ok(run).values()) == {1}
    # Every request the provider received is in the ledger (a re-asked answer among them).
    assert provider_requests(url) == LLMCall.objects.count() >= TOTAL
    assert quiet(worker)  # the chains ended with the run

    # A batch after the run finished, and the sweep, call nothing more.
    requests, answers = provider_requests(url), Answer.objects.count()
    before = worker.batches_run()
    run_batch_task.delay(WORK, run.pk)
    assert wait_until(lambda: (worker.batches_run() or 0) > before, timeout=30)
    assert requeue_expired_task.run()[WORK] == 0
    assert quiet(worker)
    assert provider_requests(url) == requests
    assert LLMCall.objects.count() == requests
    assert Answer.objects.count() == answers
    assert run_status(run) == RunStatus.FINISHED


def test_a_worker_killed_mid_run_loses_no_answer_and_repeats_none_recorded(
    engine_workers, offline_provider, make_study, settings
):
    settings.LLM_LEASE_SECONDS = LEASE_SECONDS  # the sweep's, in this process
    engine_workers.env = {"LLM_LEASE_SECONDS": str(LEASE_SECONDS)}
    # Answers spread over 1 to 3 s, so that the kill lands with calls in flight; two solo
    # workers from the start, so the one left takes over without a cold start.
    url = offline_provider(latency_ms=1000, jitter_ms=2000)
    workers = [engine_workers.start(), engine_workers.start()]
    mains = {w.pid: w for w in workers}
    run = proxy_run(make_study, url, max_concurrent=32)
    scope_start(WORK, run.pk)

    def mid_run():
        held = holders(run)
        if run.calls.filter(status=DONE).count() >= 2 and held:
            return held.most_common(1)[0][0]
        return None

    pid = wait_until(mid_run, timeout=90, interval=0.05)
    assert pid is not None, statuses(run)
    assert pid in mains
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: dead(pid), timeout=30)
    time.sleep(0.5)  # what the dead process had written to its sockets reaches the provider
    held_by_dead = run.calls.filter(status=RUNNING, lease_owner__endswith=f":{pid}").count()
    assert held_by_dead > 0, statuses(run)  # the kill landed mid-run
    before = recorded(run)
    requests_at_kill = provider_requests(url)
    # Its message stays unacknowledged until the visibility timeout (hours): the other worker
    # does not get it; it gets the sweep's batch.
    mains[pid].process.wait()

    def finished() -> bool:
        requeue_expired_task.run()  # as beat runs it, every quarter of a lease
        return run_status(run) == RunStatus.FINISHED

    assert wait_until(finished, timeout=240, interval=0.5), statuses(run)
    assert statuses(run) == {DONE: TOTAL}
    assert_answered_once(run)
    after = recorded(run)
    assert {pk: after[pk] for pk in before} == before  # nothing recorded was redone
    ok = ledger_ok(run)
    assert all(ok[pk] == 1 for pk in before)
    assert all(count >= 1 for count in ok.values())
    # Each call succeeded once, but for those the dead process held: their answers may have
    # reached its ledger before it died, and the call is made again by its successor.
    assert sum(ok.values()) <= TOTAL + held_by_dead
    assert all(count <= 2 for count in ok.values())
    # Every request made once, but for those the dead process had made (and the re-asks of
    # malformed answers, which the ledger counts as invalid output); after the kill, one per
    # call not recorded at the kill, at most.
    invalid = LLMCall.objects.filter(status=CallStatus.INVALID_OUTPUT).count()
    requests = provider_requests(url)
    assert requests <= TOTAL + held_by_dead + invalid
    assert requests - requests_at_kill <= TOTAL - len(before) + invalid
    retaken = run.calls.filter(attempts=2).count()
    assert retaken == held_by_dead
    assert run.calls.exclude(pk__in=before).filter(attempts=1).count() == (
        TOTAL - len(before) - held_by_dead
    )
    (survivor,) = (w for w in workers if w.pid != pid)
    assert quiet(survivor)

    # Run again after it finished: nothing more is called.
    again, batches = provider_requests(url), survivor.batches_run()
    run_batch_task.delay(WORK, run.pk)
    assert wait_until(lambda: (survivor.batches_run() or 0) > batches, timeout=30)
    assert requeue_expired_task.run()[WORK] == 0
    assert quiet(survivor)
    assert provider_requests(url) == again
    assert recorded(run) == after
