"""Model calls for rubric authoring, routed to the `llm` queue (config/celery.py): criteria
suggestions and the reference answers the editor shows.

Both tasks take an id, claim the row with a conditional update (so a redelivered or
duplicated message does nothing), call the model with no transaction open, and record
the outcome; the services hold the details.
"""

from celery import shared_task

from apps.rubrics.services import draft_job_run
from apps.runs.services import response_generate

from .delivery import CappedRedeliveryTask


@shared_task(name="workers.drafting.draft_criteria", base=CappedRedeliveryTask)
def draft_criteria(job_id: int) -> str:
    job = draft_job_run(job_id=job_id)
    return "skipped" if job is None else job.status


@shared_task(name="workers.drafting.sample_answer", base=CappedRedeliveryTask)
def sample_answer(response_id: int) -> str:
    response = response_generate(response_id=response_id)
    return "skipped" if response is None else response.status


draft_criteria_task = draft_criteria
sample_answer_task = sample_answer
