"""Survey tasks: freeing expired reservations (beat, every minute) and generating the
responses participants rate (on the `llm` queue, beside the gateway's other model calls).

Generating is services.scenario_responses_generate, which claims its generation row under
a lease and makes no call twice, so a redelivered or repeated task is harmless; this task
decides when to try again. How many times is the row's budget of attempts
(apps/llm/leases.py MAX_ATTEMPTS), which counts a retry and a crash alike: Celery's own
count is off (max_retries=None), so that there is one budget.
"""

import logging

from celery import shared_task
from django.conf import settings

from apps.surveys import services

from .delivery import CappedRedeliveryTask

log = logging.getLogger(__name__)


@shared_task(name="workers.surveys.expire_reservations", base=CappedRedeliveryTask)
def expire_reservations() -> int:
    freed = services.assignment_expire_overdue()
    if freed:
        log.info("freed %s expired survey reservation(s)", freed)
    return freed


@shared_task(
    name="workers.surveys.generate_responses", base=CappedRedeliveryTask, bind=True,
    max_retries=None,
)  # fmt: skip
def generate_responses(self, generation_id: int) -> dict | str:
    """Make the generation's missing responses (`services.scenario_responses_request`
    makes the row). Calls that failed in a way worth retrying are retried, the whole
    task, LLM_RETRY_SECONDS later, while the row has attempts left. Should the retry's
    message be lost, the lease sweep (workers/leases.py) queues the task again."""
    retry_seconds = settings.LLM_RETRY_SECONDS
    outcome = services.scenario_responses_generate(
        generation_id=generation_id, retry_seconds=retry_seconds
    )
    if outcome is None:
        return "skipped"
    if outcome.get("retry") and self.request.id and not self.request.is_eager:
        raise self.retry(countdown=retry_seconds)
    return outcome


expire_reservations_task = expire_reservations
generate_responses_task = generate_responses
