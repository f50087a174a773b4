"""The cosine of embeddings computed by a real Celery worker: a job started from the page is
worked on the `llm` queue until every approved rewrite has its cosine, and the same message
delivered again sends nothing more to the provider."""

import httpx
import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import LLMCall
from apps.questions.models import EmbeddingCosine, EmbeddingCosineJob, EmbeddingCosineJobStatus
from config.celery import app
from tests.conftest import wait_until
from tests.factories import api_base
from tests.questions.test_embedding_cosines import approved_bank, embedder
from workers.questions import embedding_cosines_task


def test_the_embeddings_task_goes_to_the_llm_queue():
    route = app.amqp.router.route({}, embedding_cosines_task.name, (), {}, None)
    assert route["queue"].name == "llm"


@pytest.mark.worker
def test_a_worker_computes_a_job_started_from_the_page_once(
    route_to_worker, migrated_rows, role_client, offline_provider, researcher
):
    queue = route_to_worker(embedding_cosines_task)
    url = offline_provider(latency_ms=50)
    approved_bank(researcher)
    model = embedder(url)

    response = role_client(Role.RESEARCHER).post(
        reverse("questions:embedding-cosines"), {"model": model.pk}
    )
    assert response.status_code == 302
    job = EmbeddingCosineJob.objects.get()
    finished = wait_until(
        lambda: EmbeddingCosineJob.objects.filter(
            pk=job.pk, status=EmbeddingCosineJobStatus.FINISHED
        ).exists(),
        timeout=120,
    )
    assert finished, EmbeddingCosineJob.objects.get(pk=job.pk).status
    assert set(EmbeddingCosine.objects.values_list("status", flat=True)) == {"done"}
    calls = LLMCall.objects.count()
    assert calls == 1

    # Delivered again (a lost acknowledgement): the job is finished, nothing is sent.
    embedding_cosines_task.apply_async(args=[job.pk], queue=queue)
    sentinel = EmbeddingCosineJob.objects.create(model=model)  # no rows: finishes at once
    embedding_cosines_task.apply_async(args=[sentinel.pk], queue=queue)
    assert wait_until(
        lambda: EmbeddingCosineJob.objects.get(pk=sentinel.pk).status == "finished", timeout=60
    )
    assert LLMCall.objects.count() == calls
    assert httpx.get(api_base(url) + "/stats").json()["requests"] == 1
