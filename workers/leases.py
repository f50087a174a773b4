"""The lease sweep (beat, every quarter of a lease): work whose worker died goes back to
the queue.

A worker killed mid-task leaves its row running under a lease that nothing renews, and its
message unacknowledged until the broker's visibility timeout (hours) or, for a dead pool
child, acknowledged by a redelivery that found the row still claimed. Each service below
returns the rows whose lease ran out, already put back to waiting, and this task queues
their task again; a row out of attempts is failed by the service instead. Queueing a row
twice is harmless: the task claims it with a conditional update and the second does nothing.

Runs on the bulk engine are swept by the engine, work by work (`engine.expired_requeue`).
"""

import logging

from celery import shared_task

from apps.llm import engine
from apps.rubrics.services import draft_jobs_expired_requeue
from apps.runs.services import responses_expired_requeue

from .delivery import CappedRedeliveryTask
from .drafting import draft_criteria_task, sample_answer_task
from .engine import run_batch_task
from .surveys import generate_responses_task

log = logging.getLogger(__name__)

# (what the rows are, the service that returns the ones to requeue, the task that runs one)
LEASED = (
    ("suggestion job", draft_jobs_expired_requeue, draft_criteria_task),
    ("reference answer", responses_expired_requeue, sample_answer_task),
)


# Work on the engine whose scopes have a task of their own, and what the sweep calls it;
# the rest is queued as `run_batch_task`.
OWN_TASKS = {"surveys.scenario_response": ("response generation", generate_responses_task)}


@shared_task(name="workers.leases.requeue_expired", base=CappedRedeliveryTask)
def requeue_expired() -> dict[str, int]:
    """Queue again every leased row whose lease ran out; how many of each kind."""
    requeued = {}
    for kind, expired_requeue, task in LEASED:
        ids = expired_requeue()
        for pk in ids:
            task.delay(pk)
        if ids:
            log.warning("requeued %s %s(s) whose worker stopped: %s", len(ids), kind, ids)
        requeued[kind] = len(ids)
    for work in engine.works():
        scopes = engine.expired_requeue(work)
        kind, task = OWN_TASKS.get(work.name, (work.name, None))
        for scope in scopes:
            if task is None:
                run_batch_task.delay(work.name, scope)
            else:
                task.delay(scope)
        if scopes:
            log.warning(
                "queued %s for %s scope(s) nobody was working: %s", kind, len(scopes), scopes
            )
        requeued[kind] = len(scopes)
    return requeued


requeue_expired_task = requeue_expired
