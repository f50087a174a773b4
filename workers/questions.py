"""The question bank's background work, on the `default` queue: importing an uploaded file
of candidate posts.

The task takes a batch id and calls one service, which claims the batch with a session
advisory lock: a redelivered message while the first copy still runs does nothing, a copy
whose worker died (its transaction rolled back, its lock gone) imports the batch again from
the start, and a finished batch is never imported twice.
"""

from celery import shared_task

from apps.questions.services.imports import import_batch_run

from .delivery import CappedRedeliveryTask


@shared_task(name="workers.questions.import_posts", base=CappedRedeliveryTask)
def import_posts(batch_id: int) -> str:
    batch = import_batch_run(batch_id=batch_id)
    return "skipped" if batch is None else batch.status


import_posts_task = import_posts
