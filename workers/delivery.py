"""Redelivery with a cap.

Tasks are acknowledged late and requeued when their worker dies (`task_reject_on_worker_lost`),
so a crash loses nothing. A message that kills its worker every time would then loop for
ever; counting deliveries in Redis and refusing past a cap breaks that loop.
"""

import logging

import redis
from celery import Task
from django.conf import settings

log = logging.getLogger(__name__)
MAX_DELIVERIES = 3


class CappedRedeliveryTask(Task):
    abstract = True
    acks_late = True
    reject_on_worker_lost = True
    max_deliveries = MAX_DELIVERIES

    def __call__(self, *args, **kwargs):
        task_id = self.request.id
        if task_id and not self.request.is_eager:
            client = redis.Redis.from_url(settings.REDIS_URL)
            key = f"assay:deliveries:{task_id}"
            count = client.incr(key)
            client.expire(key, 7 * 24 * 3600)
            if count > self.max_deliveries:
                log.error(
                    "Task %s[%s] was delivered %s times; giving up on it", self.name, task_id, count
                )
                return None
        return super().__call__(*args, **kwargs)
