"""Survey tasks: freeing expired reservations (beat, every minute). Generating the
responses participants rate is work on the bulk engine (workers/engine.py), like every
model call in bulk."""

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


expire_reservations_task = expire_reservations
