"""Limits that hold across worker processes, on the bulk engine's batch task
(`workers.engine.run_batch`) working a sampling run, with real Celery workers and the
offline provider over HTTP: a model's concurrency limit is one limit for every process
calling it, and a message that kills its worker every time is not redelivered for ever.

(These replace the tests of the removed `workers.llm.complete_batch` task.)
"""

import os
import signal
import uuid

import httpx
import pytest
import redis
from django.conf import settings
from django.utils import timezone

from apps.llm import engine
from apps.llm.engine import scope_start
from apps.llm.models import CallStatus, LimitChange, LLMCall, RunStatus
from apps.runs.models import ResponseStatus, SamplingRun
from apps.runs.services import SAMPLE_WORK, sampling_run_create
from tests.conftest import wait_until
from tests.factories import offline_model, question_make
from tests.workers.engine_builders import (
    dead,
    engine_workers,
    holders,
    provider_requests,
    provider_stats,
    quiet,
    statuses,
)
from workers.delivery import MAX_DELIVERIES, deliveries_key
from workers.engine import run_batch_task

__all__ = ["engine_workers"]  # the fixture, imported to be found

pytestmark = pytest.mark.worker

DONE, RUNNING, PENDING = ResponseStatus.DONE, ResponseStatus.RUNNING, ResponseStatus.PENDING


def launched(url, *, rows: int, samples: int, **model_fields):
    """A run of `rows` answers from one offline model, running as a launch leaves it but
    with no batch queued: these tests queue the batches themselves, once their workers are
    ready (a launch would queue them at once, for the first worker to take them all)."""
    model = offline_model(url, name="offline-terse", **model_fields)
    questions = [question_make() for _ in range(rows // samples)]
    run = sampling_run_create(
        name="Limits", questions=questions, models=[model], samples_per_item=samples
    )
    SamplingRun.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, launched_at=timezone.now()
    )
    assert run.responses.count() == rows
    return run


def ready(worker) -> bool:
    """Whether the worker answers the broadcast, i.e. consumes its queue."""
    return worker.batches_run() is not None


def test_a_models_concurrency_limit_holds_across_two_worker_processes(
    engine_workers, offline_provider
):
    limit = 3
    url = offline_provider(latency_ms=150)
    workers = [engine_workers.start(), engine_workers.start()]
    # More rows than one batch claims, so that the second worker's batch has rows too and
    # both processes call the model at once, each with its own limit of 3 in its loop: only
    # the limit they share keeps the provider at 3.
    total = engine.BATCH_SIZE + 60
    run = launched(url, rows=total, samples=10, max_concurrent=limit)
    assert wait_until(lambda: all(ready(w) for w in workers), timeout=60)
    scope_start(SAMPLE_WORK.name, run.pk, chains=2)

    both = wait_until(lambda: len(holders(run)) >= 2, timeout=90, interval=0.05)
    assert both, statuses(run)  # two processes held rows of the run at the same moment
    assert wait_until(lambda: statuses(run) == {DONE: total}, timeout=180), statuses(run)

    seen = provider_stats(url)["max_in_flight"]
    assert seen <= limit, f"the provider saw {seen} requests at once with a limit of {limit}"
    assert seen == limit, "the workers together should have used the whole limit"
    assert provider_requests(url) == total
    assert LLMCall.objects.filter(status=CallStatus.OK).count() == total
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    assert all(w.batches_run() > 0 for w in workers)


def test_workers_on_two_hosts_keep_together_to_a_providers_hidden_limit(
    engine_workers, offline_provider
):
    """Two worker processes under different host names, as on two machines, against a
    provider that refuses what goes beyond 4 at once: with the model's limit at 4 they never
    meet the hidden limit; left to find it (adaptive concurrency, ceiling 32), they find it
    together, meeting it a few times, and settle about it."""
    hidden = 4
    url = offline_provider(latency_ms=150, limit_concurrent=hidden, retry_after=0)
    workers = [engine_workers.start(host="host-a"), engine_workers.start(host="host-b")]
    assert {w.hostname.split("@")[1] for w in workers} == {"host-a", "host-b"}
    total = engine.BATCH_SIZE + 60
    run = launched(url, rows=total, samples=10, max_concurrent=hidden)
    assert wait_until(lambda: all(ready(w) for w in workers), timeout=60)
    scope_start(SAMPLE_WORK.name, run.pk, chains=2)
    assert wait_until(lambda: len(holders(run)) >= 2, timeout=90, interval=0.05), statuses(run)
    assert wait_until(lambda: statuses(run) == {DONE: total}, timeout=180), statuses(run)
    stats = provider_stats(url)
    assert stats["faults"].get("limit", 0) == 0  # never beyond the hidden limit
    assert stats["requests"] == total and stats["max_in_flight"] == hidden

    # The same, found rather than told.
    httpx.post(f"{url}/stats/reset")
    run = launched(
        url,
        rows=total,
        samples=10,
        display_name="Adaptive offline-terse",
        max_concurrent=32,
        adapts_concurrency=True,
    )
    scope_start(SAMPLE_WORK.name, run.pk, chains=2)
    assert wait_until(lambda: len(holders(run)) >= 2, timeout=90, interval=0.05), statuses(run)
    assert wait_until(lambda: statuses(run) == {DONE: total}, timeout=180), statuses(run)
    model = run.model_configs.get()
    refused = LLMCall.objects.filter(model=model, status=CallStatus.RATE_LIMITED).count()
    assert provider_stats(url)["faults"]["limit"] == refused > 0
    assert refused <= total * 0.1, f"{refused} 429s for {total} answers"
    assert LLMCall.objects.filter(model=model, status=CallStatus.OK).count() == total
    changes = list(LimitChange.objects.filter(model=model))
    assert any(c.why == LimitChange.Why.CUT for c in changes)
    assert changes[-1].new <= hidden + 2  # about the hidden limit, not the ceiling


def test_a_message_that_kills_its_worker_every_time_is_not_redelivered_for_ever(
    engine_workers, offline_provider
):
    # Calls that never answer in the test's time, so that every delivery is still in its
    # batch when its process is killed. Each delivery claims a batch of its own (the rows
    # a killed process held stay held until their lease, two minutes, runs out), and the
    # run has rows left for one more.
    url = offline_provider(latency_ms=120_000)
    worker = engine_workers.start(pool="prefork")
    left_over = 20
    total = MAX_DELIVERIES * engine.BATCH_SIZE + left_over
    run = launched(url, rows=total, samples=20)
    assert wait_until(lambda: ready(worker), timeout=60)
    broker = redis.Redis.from_url(settings.REDIS_URL)
    task_id = f"poison-{uuid.uuid4().hex}"
    key = deliveries_key(task_id)

    def deliveries() -> int:
        return int(broker.get(key) or 0)

    run_batch_task.apply_async((SAMPLE_WORK.name, run.pk), task_id=task_id)
    killed = []
    for delivery in range(1, MAX_DELIVERIES + 1):
        # The pool child that took this delivery claims its batch; the main process puts
        # the message back when the child dies (reject_on_worker_lost).
        pid = wait_until(
            lambda: next((p for p in holders(run) if p not in killed), None),
            timeout=60,
            interval=0.05,
        )
        assert pid is not None, (delivery, statuses(run), deliveries())
        assert pid != worker.pid
        assert deliveries() == delivery
        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda pid=pid: dead(pid), timeout=30)
        killed.append(pid)

    # One more delivery, refused before it reaches the run: then the message is gone.
    assert wait_until(lambda: deliveries() == MAX_DELIVERIES + 1, timeout=60), deliveries()
    assert quiet(worker)
    assert deliveries() == MAX_DELIVERIES + 1
    assert worker.process.poll() is None  # the worker itself lives on
    assert set(holders(run)) == set(killed)
    assert statuses(run) == {RUNNING: MAX_DELIVERIES * engine.BATCH_SIZE, PENDING: left_over}
    pending = run.responses.filter(status=PENDING)
    assert set(pending.values_list("attempts", "lease_owner")) == {(0, "")}
    # Only the killed deliveries can have called the model (each at most its limit, 8 by
    # default; a kill may land before the first call is sent); nothing was recorded.
    assert provider_requests(url) <= MAX_DELIVERIES * 8
    assert not LLMCall.objects.exists()
