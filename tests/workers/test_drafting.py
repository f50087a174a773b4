import pytest

from apps.llm.models import LLMCall
from apps.rubrics import services
from apps.rubrics.models import AuthoringSettings, DraftJob, DraftStatus
from apps.rubrics.services.drafting import DRAFT_WORK
from apps.runs.models import Response, ResponseStatus
from apps.runs.services import REFERENCE_WORK, reference_models_set, sample_answers_draw
from config.celery import app
from tests.conftest import wait_until
from tests.factories import offline_model, question_assigned
from workers.engine import run_batch_task


def test_the_engine_task_goes_to_the_llm_queue():
    route = app.amqp.router.route({}, run_batch_task.name, (), {}, None)
    assert route["queue"].name == "llm"


@pytest.mark.worker
def test_a_worker_makes_each_call_once_however_often_a_task_arrives(
    start_worker, migrated_rows, offline_provider, expert
):
    url = offline_provider()
    model = offline_model(url, name="offline-thorough")
    AuthoringSettings.objects.update_or_create(pk=1, defaults={"draft_model": model})
    reference_models_set(models=[model])
    rubric = services.rubric_start(question=question_assigned(expert, topic="scams"), user=expert)
    job, _ = services.draft_job_request(rubric=rubric, user=expert)
    (answer,) = sample_answers_draw(question=rubric.question)
    queue, _process = start_worker()

    # Each message twice, as a broker redelivers after a lost acknowledgement.
    for _ in range(2):
        run_batch_task.apply_async(args=[DRAFT_WORK.name, job.pk], queue=queue)
        run_batch_task.apply_async(args=[REFERENCE_WORK.name, answer.pk], queue=queue)
    # The worker takes its queue in order: once this one is done, so are the duplicates.
    sentinel = Response.objects.create(
        run=answer.run, model=model, question=answer.question, sample_index=1
    )
    run_batch_task.apply_async(args=[REFERENCE_WORK.name, sentinel.pk], queue=queue)
    assert wait_until(lambda: Response.objects.get(pk=sentinel.pk).status == "done", timeout=60)

    job = DraftJob.objects.get(pk=job.pk)
    assert job.status == DraftStatus.DONE and job.attempts == 1
    assert job.suggestions.count() >= 4
    assert LLMCall.objects.filter(caller=f"draftjob:{job.pk}").count() == 1
    answer = Response.objects.get(pk=answer.pk)
    assert answer.status == ResponseStatus.DONE and answer.attempts == 1 and answer.text
    assert LLMCall.objects.filter(caller=f"response:{answer.pk}").count() == 1
