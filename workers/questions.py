"""The question bank's background work: importing an uploaded file of candidate posts (on
the `default` queue), and computing the cosine of embeddings of the approved rewrites (on
the `llm` queue, config/celery.py, since it calls embedding models).

The import task takes a batch id and calls one service, which claims the batch with a
session advisory lock: a redelivered message while the first copy still runs does nothing, a
copy whose worker died (its transaction rolled back, its lock gone) imports the batch again
from the start, and a finished batch is never imported twice.

The embeddings task takes a job id; the service works only the job's rows still pending, so
a redelivered message goes on where the first copy stopped, and no text is embedded twice
(apps/llm/embeddings.py keeps the vectors).
"""

from celery import shared_task

from apps.questions.services.embedding_cosines import embedding_cosine_job_run
from apps.questions.services.imports import import_batch_run

from .delivery import CappedRedeliveryTask


@shared_task(name="workers.questions.import_posts", base=CappedRedeliveryTask)
def import_posts(batch_id: int) -> str:
    batch = import_batch_run(batch_id=batch_id)
    return "skipped" if batch is None else batch.status


@shared_task(name="workers.questions.embedding_cosines", base=CappedRedeliveryTask)
def embedding_cosines(job_id: int) -> str:
    job = embedding_cosine_job_run(job_id=job_id)
    return "skipped" if job is None else job.status


import_posts_task = import_posts
embedding_cosines_task = embedding_cosines
