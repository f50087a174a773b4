"""Model calls on the `llm` queue. Run the worker as
`celery -A config worker -Q llm --concurrency <cores>` (prefork): apps/llm/bulk.py says why
one process per core, each running a batch of about 200 calls on asyncio.

Work survives a dead worker: the message is acknowledged late and redelivered (capped), and
a call whose caller reference already has a successful ledger row is not made again.
"""

from celery import shared_task

from apps.llm import bulk, gateway

from .delivery import CappedRedeliveryTask

LLM_QUEUE = "llm"
BATCH_SIZE = bulk.BATCH_SIZE

# Import litellm (seconds of CPU) once in the worker's parent, before the pool forks, rather
# than in every child on its first task.
gateway.litellm_module()


@shared_task(name="workers.llm.complete_batch", base=CappedRedeliveryTask)
def complete_batch(requests: list[dict]) -> dict[str, int]:
    """Make each request's model call (see `bulk.requests_complete`)."""
    return bulk.requests_complete(requests=requests)


complete_batch_task = complete_batch
