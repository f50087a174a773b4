"""The Celery application.

Work must survive a worker dying at any moment: tasks are acknowledged only after they
finish (`task_acks_late`), a task whose worker vanished goes back to the queue
(`task_reject_on_worker_lost`), each process takes one message at a time (prefetch 1) so
a crash strands at most one, and the hard time limit stays under the broker's
visibility timeout so a slow task is never handed to a second worker while it still runs.
Results are not stored in Celery: every task writes its outcome to our own tables.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings

# Tasks are listed here, not discovered, so that a worker's queue contents are explicit.
TASK_MODULES = [
    "workers.ops",
    "workers.engine",
    "workers.surveys",
    "workers.leases",
    "workers.questions",
    "workers.analysis",
]

app = Celery("assay")
app.conf.update(
    broker_url=settings.CELERY_BROKER_URL,
    broker_transport_options={"visibility_timeout": settings.CELERY_VISIBILITY_TIMEOUT},
    broker_connection_retry_on_startup=True,
    result_backend=None,
    task_ignore_result=True,
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_time_limit=settings.CELERY_TASK_TIME_LIMIT,
    task_soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
    task_default_queue="default",
    # Model calls have their own queue and workers (apps/llm/engine.py says why).
    task_routes={
        "workers.engine.*": {"queue": "llm"},
        "workers.questions.embedding_cosines": {"queue": "llm"},
    },
    task_always_eager=settings.CELERY_TASK_ALWAYS_EAGER,
    worker_hijack_root_logger=False,
    imports=TASK_MODULES,
    beat_schedule_filename=settings.CELERY_BEAT_SCHEDULE_FILENAME,
    beat_schedule={
        "heartbeat": {"task": "workers.ops.heartbeat", "schedule": 60.0},
        "survey-reservations": {"task": "workers.surveys.expire_reservations", "schedule": 60.0},
        # A dead worker's job resumes about one lease after it died (apps/llm/leases.py).
        # A provider batch is read, and recorded once it ends (apps/llm/batches.py).
        "llm-batches": {
            "task": "workers.engine.batches_poll",
            "schedule": settings.LLM_BATCH_POLL_SECONDS,
        },
        "llm-leases": {
            "task": "workers.leases.requeue_expired",
            "schedule": settings.LLM_LEASE_SECONDS / 4,
        },
    },
    timezone="UTC",
)
