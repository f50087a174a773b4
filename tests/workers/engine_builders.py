"""Builders for the bulk engine's worker tests (tests/workers/test_engine.py).

`engine_worker` starts real Celery workers, as `start_worker` in tests/conftest.py does,
with one difference that matters to the engine: a batch that ends with work left queues
its successor from inside the worker, by the worker's own routes. A test that routes
`workers.engine.*` only in its own process (`route_to_worker`) would see those successors
go to the shared `llm` queue, out of the test's reach; here the worker is started with the
same route as the test process, so a whole chain runs on the test's queue.
"""

import os
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import httpx
import pytest

from apps.runs.models import Response
from config.celery import app
from tests.conftest import ROOT, live_database_url, wait_until, worker_killed
from workers.engine import run_batch_task

# The worker's main module: the test's route for the engine's tasks, then a normal worker.
WORKER_MAIN = """
import sys
from config.celery import app
queue, pool, hostname = sys.argv[1:4]
app.conf.task_routes = {**app.conf.task_routes, "workers.engine.*": {"queue": queue}}
app.worker_main(["worker", "--pool", pool, "--queues", queue, "--hostname", hostname,
                 "--without-mingle", "--without-gossip", "--loglevel", "WARNING"])
"""

# Beat for the engine's own schedule (the batch poll), sending to the test's queue.
BEAT_MAIN = """
import sys
from config.celery import app
queue, schedule = sys.argv[1:3]
app.conf.task_routes = {**app.conf.task_routes, "workers.engine.*": {"queue": queue}}
app.conf.beat_schedule = {
    name: entry for name, entry in app.conf.beat_schedule.items()
    if entry["task"].startswith("workers.engine.")
}
app.start(["beat", "--schedule", schedule, "--loglevel", "WARNING"])
"""


@dataclass
class Worker:
    process: subprocess.Popen
    hostname: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def batches_run(self) -> int | None:
        """How many batch tasks this worker has run since it started (None: no reply)."""
        replies = app.control.inspect(destination=[self.hostname], timeout=5, limit=1).stats() or {}
        reply = replies.get(self.hostname)
        if reply is None:
            return None
        return reply.get("total", {}).get(run_batch_task.name, 0)


@dataclass
class EngineWorkers:
    """Workers on one queue of the test's own, which the engine's tasks are routed to."""

    queue: str = field(default_factory=lambda: f"test-engine-{uuid.uuid4().hex[:12]}")
    env: dict = field(default_factory=dict)
    started: list[Worker] = field(default_factory=list)

    def start(self, *, pool: str = "solo", host: str | None = None) -> Worker:
        """A worker process; `host` names the machine it stands for (this one's by default)."""
        hostname = f"engine-{uuid.uuid4().hex[:8]}@{host or socket.gethostname()}"
        child_env = dict(os.environ, DATABASE_URL=live_database_url(), DB_CONN_MAX_AGE="0")
        child_env.update(self.env)
        process = subprocess.Popen(
            [sys.executable, "-c", WORKER_MAIN, self.queue, pool, hostname],
            cwd=ROOT,
            env=child_env,
            start_new_session=True,
        )
        worker = Worker(process=process, hostname=hostname)
        self.started.append(worker)
        return worker

    def beat(self, *, schedule: str) -> Worker:
        """Celery beat, scheduling the engine's periodic tasks (the batch poll, every
        LLM_BATCH_POLL_SECONDS of `env`) on this queue; `schedule`: its schedule file."""
        child_env = dict(os.environ, DATABASE_URL=live_database_url(), DB_CONN_MAX_AGE="0")
        child_env.update(self.env)
        process = subprocess.Popen(
            [sys.executable, "-c", BEAT_MAIN, self.queue, schedule],
            cwd=ROOT,
            env=child_env,
            start_new_session=True,
        )
        beat = Worker(process=process, hostname="beat")
        self.started.append(beat)
        return beat

    def stop(self) -> None:
        for worker in self.started:
            worker_killed(worker.process)


@pytest.fixture
def engine_workers(migrated_rows):
    """`EngineWorkers`: what this process queues for the engine (`scope_start`, the lease
    sweep's batches) goes to its queue, and so does what its workers queue."""
    workers = EngineWorkers()
    saved = app.conf.task_routes
    app.conf.update(
        task_routes={**app.conf.task_routes, "workers.engine.*": {"queue": workers.queue}}
    )
    yield workers
    app.conf.update(task_routes=saved)
    workers.stop()


def provider_stats(url: str) -> dict:
    return httpx.get(f"{url}/stats", timeout=5).json()


def provider_requests(url: str) -> int:
    return provider_stats(url)["requests"]


def statuses(run) -> Counter:
    return Counter(run.responses.values_list("status", flat=True))


def holders(run) -> Counter:
    """The pids holding the run's running rows, with how many each holds."""
    owners = run.responses.filter(status="running").exclude(lease_owner="")
    return Counter(int(o.rsplit(":", 1)[1]) for o in owners.values_list("lease_owner", flat=True))


def texts_recorded(run) -> dict[int, tuple]:
    """What every answered row holds: it must never change once recorded."""
    return {
        r.pk: (r.text, r.completed_at, r.cost_usd)
        for r in Response.objects.filter(run=run, status="done")
    }


def dead(pid: int) -> bool:
    """Gone, or a zombie its parent has not reaped yet."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def quiet(worker: Worker, *, settle_seconds: float = 2.0, timeout: float = 30.0) -> bool:
    """Whether the worker stops running batches: no batch for `settle_seconds`, within
    `timeout`. A chain that keeps queueing itself never gets quiet."""

    def unchanged() -> bool:
        before = worker.batches_run()
        time.sleep(settle_seconds)
        after = worker.batches_run()
        return before is not None and before == after

    return bool(wait_until(unchanged, timeout=timeout, interval=0))
