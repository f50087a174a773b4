"""Model calls on the `llm` queue.

Concurrency model, chosen by measurement (benchmarks/llm_throughput.py, figures in
benchmarks/RESULTS.md): model calls are I/O-bound, and litellm costs ~12 ms of CPU per call
and ~200 MB per process. One process per core, each running one task at a time that holds
a *batch* of calls and runs them concurrently on an asyncio loop, gives the throughput of
a bare `litellm.acompletion` loop at a fraction of the memory of a thread or process per
call: a thread pool pays the GIL and httpx's sync client per call, and a process per
concurrent call would need 64 x 200 MB. Run the worker as
`celery -A config worker -Q llm --concurrency <cores>` (prefork). Send batches of about 200
calls: each batch opens its own event loop, HTTP client and connections, and with batches
of 50 that start-up cost the limit-16 run a tenth of its throughput (0.84 of the ideal
against 0.91 with 200, in the same benchmark).

Work survives a dead worker: the message is acknowledged late and redelivered (capped), and
a call whose caller reference already has a successful ledger row is not made again.
"""

import asyncio

from asgiref.sync import async_to_sync
from celery import shared_task

from apps.llm import gateway
from apps.llm.errors import LLMError
from apps.llm.models import CallStatus, LLMCall, ModelConfig

from .delivery import CappedRedeliveryTask

LLM_QUEUE = "llm"
BATCH_SIZE = 200

# Import litellm (seconds of CPU) once in the worker's parent, before the pool forks, rather
# than in every child on its first task.
gateway.litellm_module()


async def _run_batch(requests: list[dict], models: dict[int, ModelConfig]) -> dict[str, int]:
    # A local cap per model keeps waiting coroutines from hammering the shared Redis limiter;
    # the limiter still decides across processes.
    local = {pk: asyncio.Semaphore(m.max_concurrent) for pk, m in models.items()}
    outcome = {"ok": 0, "failed": 0}

    async def one(request: dict) -> None:
        model = models[request["model_id"]]
        async with local[model.pk]:
            try:
                await gateway.acomplete(
                    model=model, messages=request["messages"], purpose=request["purpose"],
                    params=request.get("params"), schema=request.get("schema"),
                    caller=request.get("caller", ""),
                )  # fmt: skip
                outcome["ok"] += 1
            except LLMError:
                outcome["failed"] += 1  # the ledger holds the attempts and the error

    try:
        await asyncio.gather(*(one(r) for r in requests))
    finally:
        await gateway.aclose_redis()
    return outcome


@shared_task(name="workers.llm.complete_batch", base=CappedRedeliveryTask)
def complete_batch(requests: list[dict]) -> dict[str, int]:
    """Make each request's model call; requests are dicts with model_id, purpose, messages,
    and optionally params, schema and caller (a caller with a successful call is skipped)."""
    callers = [r["caller"] for r in requests if r.get("caller")]
    done = set(
        LLMCall.objects.filter(caller__in=callers, status=CallStatus.OK).values_list(
            "caller", flat=True
        )
    )
    pending = [r for r in requests if not r.get("caller") or r["caller"] not in done]
    models = ModelConfig.objects.in_bulk({r["model_id"] for r in pending})
    # async_to_sync, not asyncio.run: the ledger writes come back to this thread and its
    # database connection, which Celery's Django integration manages between tasks.
    outcome = async_to_sync(_run_batch)(pending, models) if pending else {"ok": 0, "failed": 0}
    outcome["skipped"] = len(requests) - len(pending)
    return outcome


complete_batch_task = complete_batch
