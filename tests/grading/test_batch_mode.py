"""Batch mode on grading runs: chosen on the form (stored, or refused on its field with the
grader named when it has no batch API), the estimate's batch cost beside the live cost, and
the run page's provider batches, polled with its progress."""

from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.urls import reverse

from apps.grading.errors import GradingError
from apps.grading.models import GradingMode, GradingRun
from apps.grading.selectors.runs import grading_estimate
from apps.grading.services import (
    CHECKLIST_WORK,
    CRITERION_WORK,
    grading_run_create,
    grading_run_launch,
)
from apps.llm.models import BatchRetry, ProviderBatch
from tests.factories import offline_model, provider_batches_make
from tests.grading.builders import answered_run
from tests.runs.builders import HX

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered(people, offline_provider_url):
    return answered_run(people, offline_provider_url)


@pytest.fixture
def client_researcher(client, researcher):
    client.force_login(researcher)
    return client


def grader_made(url: str, *, batch_api: bool = True, discount: str = "0.5"):
    return offline_model(
        url, name="offline-grader", batch_api=batch_api, batch_discount=Decimal(discount)
    )


def form_data(sampling_run, grader, **fields) -> dict:
    return {
        "sampling_run": sampling_run.pk,
        "grader": grader.pk,
        "mode": GradingMode.CHECKLIST,
        "temperature": "0",
        **fields,
    }


def test_the_form_stores_batch_mode(client_researcher, answered, offline_provider_url):
    grader = grader_made(offline_provider_url)
    page = client_researcher.get(reverse("grading:run_new")).content.decode()
    assert 'name="batch_mode"' in page and "The grader needs a batch API" in page
    data = form_data(answered, grader, batch_mode="on", batch_retry=BatchRetry.BATCH)
    response = client_researcher.post(reverse("grading:run_new"), data)
    run = GradingRun.objects.get()
    assert response.status_code == 302
    assert (run.batch_mode, run.batch_retry) == (True, BatchRetry.BATCH)
    html = client_researcher.get(response.url).content.decode()
    assert "Batch mode: <strong>on</strong>" in html
    assert "failed batch lines are asked again in the next batch (at the batch price)" in html


def test_the_form_refuses_batch_mode_for_a_grader_without_a_batch_api(
    client_researcher, answered, offline_provider_url
):
    grader = grader_made(offline_provider_url, batch_api=False)
    data = form_data(answered, grader, batch_mode="on")
    response = client_researcher.post(reverse("grading:run_new"), data)
    html = response.content.decode()
    assert response.status_code == 422
    error = html.split('id="id_batch_mode_error">')[1].split("</p>")[0]
    assert f"{grader.display_name} has no batch API" in error
    assert not GradingRun.objects.exists()


def test_the_service_refuses_batch_mode_for_a_grader_without_a_batch_api(
    answered, offline_provider_url
):
    grader = grader_made(offline_provider_url, batch_api=False)
    with pytest.raises(GradingError, match=f"{grader.display_name} has no batch API"):
        grading_run_create(
            sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST, batch_mode=True
        )
    assert not GradingRun.objects.exists()


@pytest.mark.parametrize("batch_api", [True, False])
def test_the_estimate_shows_the_batch_cost_beside_the_live_cost(
    client_researcher, answered, offline_provider_url, batch_api
):
    grader = grader_made(offline_provider_url, batch_api=batch_api, discount="0.5")
    run = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    estimate = grading_estimate(run=run)
    assert estimate.cost_usd > 0
    html = client_researcher.get(reverse("grading:run_detail", args=[run.pk])).content.decode()
    live = html.split('data-testid="estimate-live">')[1].split("<")[0]
    batch = html.split('data-testid="estimate-batch">')[1].split("<")[0]
    assert Decimal(live) == estimate.cost_usd.quantize(Decimal("0.0001"), ROUND_HALF_UP)
    if batch_api:
        assert estimate.batch_cost_usd == (estimate.cost_usd * Decimal("0.5")).quantize(
            Decimal("0.000001")
        )
        assert Decimal(batch) == estimate.batch_cost_usd.quantize(Decimal("0.0001"), ROUND_HALF_UP)
    else:
        assert estimate.batch_cost_usd is None
        assert batch == "no batch API"
        assert f"since {grader.display_name} has no batch API" in html


@pytest.mark.parametrize("mode", [GradingMode.CHECKLIST, GradingMode.PER_CRITERION])
def test_a_run_in_batch_mode_shows_its_provider_batches_and_the_poll_brings_them(
    client_researcher, answered, offline_provider_url, mode
):
    grader = grader_made(offline_provider_url)
    run = grading_run_create(sampling_run=answered, grader=grader, mode=mode, batch_mode=True)
    grading_run_launch(run=run)  # its work is queued after commit, which a test never has
    mine, other = (
        (CHECKLIST_WORK, CRITERION_WORK)
        if mode == GradingMode.CHECKLIST
        else (CRITERION_WORK, CHECKLIST_WORK)
    )
    provider_batches_make(
        work=mine.name,
        scope=run.pk,
        model=grader,
        count=2,
        status=ProviderBatch.Status.VALIDATING,
        provider_batch_id="batch_grading",
    )
    provider_batches_make(work=other.name, scope=run.pk, model=grader, requests=99)
    page = reverse("grading:run_detail", args=[run.pk])
    for headers in ({}, HX):
        html = client_researcher.get(page, **headers).content.decode()
        rows = html.split('data-testid="batch-row"')[1:]
        assert len(rows) == 2
        assert all("Validating" in row and "batch_grading" in row for row in rows)
        assert '<strong data-testid="batches-requests">3</strong>' in html  # 1 + 2, not 99
        assert "the grader calls it holds count as in flight" in html
    assert 'data-testid="run-batches"' not in html.split('<section id="progress"')[0]


def test_a_live_grading_run_shows_no_batches(client_researcher, answered, offline_provider_url):
    grader = grader_made(offline_provider_url)
    run = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    grading_run_launch(run=run)
    provider_batches_make(work=CHECKLIST_WORK.name, scope=run.pk, model=grader)
    html = client_researcher.get(reverse("grading:run_detail", args=[run.pk])).content.decode()
    assert 'data-testid="run-batches"' not in html and "Batch mode: off" in html
