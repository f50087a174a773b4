"""Bulk model calls: a batch of requests made concurrently on one asyncio loop.

Concurrency model, chosen by measurement (benchmarks/llm_throughput.py, figures in
benchmarks/RESULTS.md): model calls are I/O-bound, and litellm costs ~12 ms of CPU per call
and ~200 MB per process. One process per core, each running one task at a time that holds
a *batch* of calls and runs them concurrently on an asyncio loop, gives the throughput of
a bare `litellm.acompletion` loop at a fraction of the memory of a thread or process per
call: a thread pool pays the GIL and httpx's sync client per call, and a process per
concurrent call would need 64 x 200 MB. Send batches of about 200 calls: each batch opens
its own event loop, HTTP client and connections, and with batches of 50 that start-up cost
the limit-16 run a tenth of its throughput (0.84 of the ideal against 0.91 with 200, in the
same benchmark).

A request whose caller reference already has a successful ledger row is not made again, so
a redelivered batch repeats no call that succeeded.
"""

import asyncio

from asgiref.sync import async_to_sync

from . import gateway
from .errors import LLMError
from .models import CallStatus, LLMCall, ModelConfig

BATCH_SIZE = 200


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


def requests_complete(*, requests: list[dict]) -> dict[str, int]:
    """Make each request's model call; requests are dicts with model_id, purpose, messages,
    and optionally params, schema and caller (a caller with a successful call is skipped).
    Returns how many calls succeeded, failed and were skipped."""
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
