"""The bulk engine's tasks (apps/llm/engine.py), on the `llm` queue.

A run is worked by a few chains of batch tasks: `scope_start` queues LLM_ENGINE_CHAINS of
them, and each batch, when it ends with work left, queues its successor. So a run keeps
every worker process busy (one batch per process at a time, apps/llm/engine.py says why)
and ends without anyone counting: each batch reads what is left from the rows. A killed
worker's message is redelivered or lost; either way the lease sweep (workers/leases.py)
puts its rows back and queues a batch for any run left with nobody working it.
"""

from celery import shared_task
from celery.signals import worker_init
from django.conf import settings

from apps.llm import engine, gateway

from .delivery import CappedRedeliveryTask


@shared_task(name="workers.engine.run_batch", base=CappedRedeliveryTask)
def run_batch(work: str, scope: int) -> dict:
    outcome = engine.batch_run(work=work, scope=scope)
    if outcome.again_in is not None:
        run_batch.apply_async((work, scope), countdown=outcome.again_in)
    return {
        "claimed": outcome.claimed, "done": outcome.done, "failed": outcome.failed,
        "unstarted": outcome.unstarted,
    }  # fmt: skip


def scope_start(work: str, scope: int, *, chains: int | None = None) -> None:
    """Queue the batches that work a scope (after the transaction that launched it)."""
    from django.db import transaction

    engine.work_for(work)  # a typo fails here, in the caller, not later in a worker
    for _ in range(chains or settings.LLM_ENGINE_CHAINS):
        transaction.on_commit(lambda: run_batch.delay(work, scope))


@worker_init.connect
def litellm_import(**_kwargs):
    """Import litellm (seconds of CPU, ~200 MB) once in a worker's main process, before its
    pool forks, rather than in every child on its first call; and not in web processes,
    which import this module only to queue tasks. (Celery imports task modules before it
    sends `worker_init`.)"""
    gateway.litellm_module()


run_batch_task = run_batch
