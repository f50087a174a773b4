"""The bulk engine's one task (apps/llm/engine.py), on the `llm` queue.

Every kind of work on the engine runs in `run_batch` (in batch mode, it submits provider
batches, and `batches_poll` records them: apps/llm/batches.py), started by `engine.scope_start`: a
run is worked by a few chains of batch tasks, and each batch, when it ends with work left,
queues its successor. So a run keeps every worker process busy (one batch per process at a
time, apps/llm/engine.py says why) and ends without anyone counting: each batch reads what
is left from the rows. A killed worker's message is redelivered or lost; either way the
lease sweep (workers/leases.py) puts its rows back and starts a batch for any run left
with nobody working it.
"""

from celery import shared_task
from celery.signals import worker_init

from apps.llm import batches, gateway

from .delivery import CappedRedeliveryTask


@shared_task(name="workers.engine.run_batch", base=CappedRedeliveryTask)
def run_batch(work: str, scope: int) -> dict:
    outcome = batches.scope_work(work=work, scope=scope)
    if outcome.again_in is not None:
        run_batch.apply_async((work, scope), countdown=outcome.again_in)
    return {
        "claimed": outcome.claimed,
        "done": outcome.done,
        "failed": outcome.failed,
        "unstarted": outcome.unstarted,
    }


@shared_task(name="workers.engine.batches_poll", base=CappedRedeliveryTask)
def batches_poll() -> dict:
    """Beat: read the open provider batches, record those that ended (apps/llm/batches.py).
    Polls that overlap skip each other's batches, so a slow one costs nothing twice."""
    return batches.batches_poll()


@worker_init.connect
def litellm_import(**_kwargs):
    """Import litellm (seconds of CPU, ~200 MB) once in a worker's main process, before its
    pool forks, rather than in every child on its first call; and not in web processes,
    which import this module only to queue tasks. (Celery imports task modules before it
    sends `worker_init`.)"""
    gateway.litellm_module()


run_batch_task = run_batch
batches_poll_task = batches_poll
