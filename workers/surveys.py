"""Survey tasks: freeing expired reservations (beat, every minute) and generating the
responses participants rate (on the `llm` queue, beside the gateway's other model calls).

Generating is services.scenario_responses_generate, which makes no call twice, so a
redelivered or repeated task is harmless; this task decides when to try again.
"""

import logging

from celery import shared_task

from apps.surveys import services

from .delivery import CappedRedeliveryTask

log = logging.getLogger(__name__)
RETRY_SECONDS = 60


@shared_task(name="workers.surveys.expire_reservations", base=CappedRedeliveryTask)
def expire_reservations() -> int:
    freed = services.assignment_expire_overdue()
    if freed:
        log.info("freed %s expired survey reservation(s)", freed)
    return freed


@shared_task(
    name="workers.surveys.generate_responses", base=CappedRedeliveryTask, bind=True,
    max_retries=5,
)  # fmt: skip
def generate_responses(self, study_id: int, model_id: int, go_live: bool = False) -> dict:
    """Give every scenario of the study that has none a response from `model_id`; with
    `go_live`, a draft study goes live once every scenario has one (the demo does this).
    Calls that failed in a way worth retrying are retried, the whole task, a minute later."""
    outcome = services.scenario_responses_generate(
        study_id=study_id, model_id=model_id, go_live=go_live
    )
    if outcome["retryable"] and self.request.id and not self.request.is_eager:
        raise self.retry(countdown=RETRY_SECONDS)
    return outcome


expire_reservations_task = expire_reservations
generate_responses_task = generate_responses
