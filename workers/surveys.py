"""Survey tasks: freeing expired reservations (beat, every minute) and generating the
responses participants rate (on the `llm` queue, on the bulk engine like every model call
in bulk).

Generating claims the generation's calls under a lease and makes no call twice, so a
redelivered or repeated task is harmless. A call that failed after the gateway's bounded
retries keeps its reason, and the study page offers to generate the missing responses
again.
"""

import logging

from celery import shared_task

from apps.surveys import services

from .delivery import CappedRedeliveryTask

log = logging.getLogger(__name__)


@shared_task(name="workers.surveys.expire_reservations", base=CappedRedeliveryTask)
def expire_reservations() -> int:
    freed = services.assignment_expire_overdue()
    if freed:
        log.info("freed %s expired survey reservation(s)", freed)
    return freed


@shared_task(name="workers.surveys.generate_responses", base=CappedRedeliveryTask)
def generate_responses(generation_id: int) -> dict | str:
    """Work a batch of the generation's calls on the bulk engine, and queue the next batch
    while calls are left (`services.scenario_responses_request` makes the calls). Should a
    message be lost or its worker die, the lease sweep (workers/leases.py) queues it again."""
    outcome = services.scenario_responses_generate(generation_id=generation_id)
    if outcome is None:
        return "skipped"
    if outcome.again_in is not None:
        generate_responses.apply_async((generation_id,), countdown=outcome.again_in)
    return {"claimed": outcome.claimed, "done": outcome.done, "failed": outcome.failed}


expire_reservations_task = expire_reservations
generate_responses_task = generate_responses
