"""Batch mode on rewrite jobs: chosen on the start form (stored, or refused on its field
with the model named when it has no batch API), and each job's provider batches on the
rewrites page, polled with the jobs."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import BatchRetry, ProviderBatch
from apps.questions.errors import QuestionError
from apps.questions.models import RewriteJob
from apps.questions.services import REWRITE_WORK, rewrite_job_start
from tests.factories import (
    ModelConfigFactory,
    provider_batches_make,
    question_from_post_make,
    rewrite_prompt_v2,
)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def to_rewrite(db):
    rewrite_prompt_v2()
    return [
        question_from_post_make(body=f"I got a text about a customs fee, no. {n}.") for n in (1, 2)
    ]


def test_the_start_form_stores_batch_mode(role_client, to_rewrite):
    model = ModelConfigFactory(name="offline-terse", batch_api=True)
    web = role_client(Role.RESEARCHER)
    page = web.get(reverse("questions:rewrites")).text
    assert 'name="batch_mode"' in page and "The model needs a batch API" in page
    data = {"model": model.pk, "batch_mode": "on", "batch_retry": BatchRetry.LIVE}
    response = web.post(reverse("questions:rewrites"), data)
    assert response.status_code == 302
    job = RewriteJob.objects.get(model=model)
    assert (job.batch_mode, job.batch_retry) == (True, BatchRetry.LIVE)
    assert job.rewrites.count() == 2


def test_the_start_form_refuses_batch_mode_naming_the_model_without_a_batch_api(
    role_client, to_rewrite
):
    model = ModelConfigFactory(name="offline-terse")
    response = role_client(Role.RESEARCHER).post(
        reverse("questions:rewrites"), {"model": model.pk, "batch_mode": "on"}
    )
    assert response.status_code == 422
    error = response.text.split('id="id_batch_mode_error">')[1].split("</p>")[0]
    assert f"{model.display_name} has no batch API" in error
    assert not RewriteJob.objects.exists()


def test_the_service_refuses_batch_mode_for_a_model_without_a_batch_api(to_rewrite):
    model = ModelConfigFactory(name="offline-terse")
    with pytest.raises(QuestionError, match=f"{model.display_name} has no batch API"):
        rewrite_job_start(questions=to_rewrite, model=model, batch_mode=True)
    assert not RewriteJob.objects.exists()


def test_the_rewrites_page_shows_each_batched_jobs_provider_batches_and_polls_them(
    role_client, to_rewrite
):
    batched = ModelConfigFactory(name="offline-terse", batch_api=True)
    job = rewrite_job_start(questions=to_rewrite[:1], model=batched, batch_mode=True)
    live = rewrite_job_start(
        questions=to_rewrite[1:], model=ModelConfigFactory(name="offline-friendly")
    )
    provider_batches_make(
        work=REWRITE_WORK.name,
        scope=job.pk,
        model=batched,
        status=ProviderBatch.Status.FINALIZING,
        provider_batch_id="batch_rewrite",
    )
    provider_batches_make(work=REWRITE_WORK.name, scope=live.pk, model=batched, requests=99)
    web = role_client(Role.RESEARCHER)
    for headers in ({}, HX):
        html = web.get(reverse("questions:rewrites"), **headers).text
        assert html.count('data-testid="job-batch-mode"') == 1
        assert html.count('data-testid="run-batches"') == 1
        assert f"Batches at the provider: job #{job.pk}" in html
        rows = html.split('data-testid="batch-row"')[1:]
        assert len(rows) == 1 and "Finalizing" in rows[0] and "batch_rewrite" in rows[0]
        assert "the rewrites it holds count as in flight" in html
        assert "failed batch lines are asked again in the next batch" in html
    partial = web.get(reverse("questions:rewrites"), **HX).text
    assert partial.strip().startswith('<section id="rewrite-jobs"')


def test_the_polled_rewrites_page_reads_every_batched_jobs_batches_in_the_same_queries(
    role_client, to_rewrite
):
    batched = ModelConfigFactory(name="offline-terse", batch_api=True)
    web = role_client(Role.RESEARCHER)

    def polled_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            web.get(reverse("questions:rewrites"), **HX)
        return len(queries)

    job = rewrite_job_start(questions=to_rewrite[:1], model=batched, batch_mode=True)
    provider_batches_make(work=REWRITE_WORK.name, scope=job.pk, model=batched, count=2)
    one = polled_queries()
    for n in range(3):
        question = question_from_post_make(body=f"A parcel text asks me to pay, no. {n}.")
        more = rewrite_job_start(questions=[question], model=batched, batch_mode=True)
        provider_batches_make(work=REWRITE_WORK.name, scope=more.pk, model=batched, count=2)
    html = web.get(reverse("questions:rewrites"), **HX).text
    assert html.count('data-testid="run-batches"') == 4
    assert html.count('data-testid="batch-row"') == 8
    assert polled_queries() == one
