"""Redelivery with a cap.

Tasks are acknowledged late and requeued when their worker dies (`task_reject_on_worker_lost`),
so a crash loses nothing. A message that kills its worker every time would then loop for
ever; counting deliveries in Redis and refusing past a cap breaks that loop.

The cap is the one attempt budget of apps/llm/leases.py. A task's own retry (`self.retry`,
which keeps the task id) is a new message, counted afresh: the retry is an attempt that the
task's row already counts, not a second delivery of the same one. For a task that holds a
leased row the row's count is what ends the work; this cap is the backstop for a message
that dies before it reaches its row, and for tasks that hold no row.
"""

import logging

import redis
from celery import Task
from django.conf import settings

from apps.llm.leases import MAX_ATTEMPTS

log = logging.getLogger(__name__)
MAX_DELIVERIES = MAX_ATTEMPTS


def deliveries_key(task_id: str, retries: int = 0) -> str:
    """Where the deliveries of one message are counted: a retry is a message of its own."""
    return f"assay:deliveries:{task_id}:{retries}"


class CappedRedeliveryTask(Task):
    abstract = True
    acks_late = True
    reject_on_worker_lost = True
    max_deliveries = MAX_DELIVERIES

    def __call__(self, *args, **kwargs):
        task_id = self.request.id
        if task_id and not self.request.is_eager:
            client = redis.Redis.from_url(settings.REDIS_URL)
            key = deliveries_key(task_id, self.request.retries or 0)
            count = client.incr(key)
            client.expire(key, 7 * 24 * 3600)
            if count > self.max_deliveries:
                log.error(
                    "Task %s[%s] was delivered %s times; giving up on it", self.name, task_id, count
                )
                return None
        return super().__call__(*args, **kwargs)
