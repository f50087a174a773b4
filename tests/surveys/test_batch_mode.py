"""Batch mode on proxy runs and on a study's generated responses: chosen on their forms
(stored, or refused on the field with the model named when it has no batch API), the proxy
estimate's batch cost beside the live cost, and the provider batches on the run's page
(polled with its progress) and on the study's page."""

from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import BatchRetry, ProviderBatch
from apps.surveys import services
from apps.surveys.errors import SurveyError
from apps.surveys.models import ProxyRun, ResponseGeneration
from tests.factories import offline_model, provider_batches_make
from tests.runs.builders import HX

pytestmark = pytest.mark.django_db

NOWHERE = "http://127.0.0.1:9"  # a provider nobody calls: these pages make no call


@pytest.fixture
def study(make_study):
    return make_study(live=False, count=3)


def batched_model(name: str = "offline-terse", discount: str = "0.5"):
    return offline_model(NOWHERE, name=name, batch_api=True, batch_discount=Decimal(discount))


def field_error(html: str, name: str) -> str:
    return html.split(f'id="id_{name}_error">')[1].split("</p>")[0]


# --- proxy runs -----------------------------------------------------------------------------


def test_the_proxy_form_stores_batch_mode(role_client, study):
    model = batched_model()
    client = role_client(Role.RESEARCHER)
    url = reverse("surveys:proxy_runs", args=[study.pk])
    assert 'name="batch_retry"' in client.get(url).content.decode()
    data = {"models": [model.pk], "runs_per_model": 1, "batch_mode": "on", "batch_retry": "live"}
    response = client.post(url, data)
    run = ProxyRun.objects.get(study=study)
    assert response.status_code == 302
    assert (run.batch_mode, run.batch_retry) == (True, BatchRetry.LIVE)
    page = client.get(response["Location"]).content.decode()
    assert "Batch mode: <strong>on</strong>" in page


def test_the_proxy_form_refuses_batch_mode_naming_the_model_without_a_batch_api(role_client, study):
    live_only = offline_model(NOWHERE, name="offline-friendly")
    client = role_client(Role.RESEARCHER)
    data = {"models": [batched_model().pk, live_only.pk], "runs_per_model": 1, "batch_mode": "on"}
    response = client.post(reverse("surveys:proxy_runs", args=[study.pk]), data)
    assert response.status_code == 400
    html = response.content.decode()
    assert f"{live_only.display_name} has no batch API" in field_error(html, "batch_mode")
    assert not ProxyRun.objects.exists()


def test_the_proxy_service_refuses_batch_mode_for_a_model_without_a_batch_api(study):
    live_only = offline_model(NOWHERE, name="offline-friendly")
    with pytest.raises(SurveyError, match=f"{live_only.display_name} has no batch API"):
        services.proxy_run_create(study=study, models=[live_only], batch_mode=True)
    assert not ProxyRun.objects.exists()


def test_the_proxy_estimate_shows_the_batch_cost_beside_the_live_cost(role_client, study):
    cheap = batched_model(discount="0.25")
    live_only = offline_model(NOWHERE, name="offline-friendly")
    estimate = services.proxy_estimate(study=study, models=[cheap, live_only], runs_per_model=2)
    rows = {row["model"]: row for row in estimate["models"]}
    assert rows[cheap]["batch_cost_usd"] == (rows[cheap]["cost_usd"] * Decimal("0.25")).quantize(
        Decimal("0.000001")
    )
    assert rows[live_only]["cost_usd"] > 0 and rows[live_only]["batch_cost_usd"] is None
    assert estimate["batch_cost_usd"] is None and estimate["no_batch_api"] == [live_only]

    run = services.proxy_run_create(study=study, models=[cheap, live_only], runs_per_model=2)
    url = reverse("surveys:proxy_run", args=[study.pk, run.pk])
    page = role_client(Role.RESEARCHER).get(url).content.decode()
    cells = [
        row.split('data-testid="estimate-batch">')[1].split("<")[0]
        for row in page.split('data-testid="estimate-row"')[1:]
    ]
    shown = str(rows[cheap]["batch_cost_usd"].quantize(Decimal("0.0001"), ROUND_HALF_UP))
    assert sorted(cells) == sorted([shown, "no batch API"])
    assert f"since {live_only.display_name} has no batch API" in page


def test_a_proxy_run_in_batch_mode_shows_its_provider_batches_and_the_poll_brings_them(
    role_client, study
):
    model = batched_model()
    run = services.proxy_run_create(study=study, models=[model], batch_mode=True)
    services.proxy_run_launch(run=run)  # its work is queued after commit, which a test never has
    provider_batches_make(
        work=services.PROXY_WORK.name,
        scope=run.pk,
        model=model,
        status=ProviderBatch.Status.COMPLETED,
        provider_batch_id="batch_proxy",
        completed=3,
        recorded=3,
    )
    provider_batches_make(work="runs.sample", scope=run.pk, model=model)  # another kind of run
    client = role_client(Role.RESEARCHER)
    url = reverse("surveys:proxy_run", args=[study.pk, run.pk])
    for headers in ({}, HX):
        html = client.get(url, **headers).content.decode()
        rows = html.split('data-testid="batch-row"')[1:]
        assert len(rows) == 1
        assert "Completed" in rows[0] and "batch_proxy" in rows[0]
        assert '<strong data-testid="batches-recorded">3</strong>' in html


# --- generated responses --------------------------------------------------------------------


def test_the_study_page_asks_for_responses_in_batch_mode_and_shows_their_batches(
    role_client, study
):
    study.study_scenarios.update(response=None)
    model = batched_model()
    client = role_client(Role.RESEARCHER)
    detail = reverse("surveys:study_detail", args=[study.pk])
    assert 'name="batch_mode"' in client.get(detail).content.decode()
    data = {"model": model.pk, "batch_mode": "on", "batch_retry": "batch"}
    response = client.post(reverse("surveys:study_generate", args=[study.pk]), data)
    assert response.status_code == 302
    generation = ResponseGeneration.objects.get(study=study)
    assert (generation.batch_mode, generation.batch_retry) == (True, BatchRetry.BATCH)
    provider_batches_make(
        work=services.SCENARIO_RESPONSE_WORK.name,
        scope=generation.pk,
        model=model,
        status=ProviderBatch.Status.IN_PROGRESS,
        requests=3,
    )
    html = client.get(detail).content.decode()
    assert 'data-testid="generation-batch-mode"' in html
    rows = html.split('data-testid="batch-row"')[1:]
    assert len(rows) == 1 and "In progress" in rows[0]
    assert "the responses it holds count as in flight" in html


def test_the_study_page_refuses_batch_mode_for_a_model_without_a_batch_api(role_client, study):
    study.study_scenarios.update(response=None)
    live_only = offline_model(NOWHERE, name="offline-friendly")
    client = role_client(Role.RESEARCHER)
    data = {"model": live_only.pk, "batch_mode": "on"}
    response = client.post(reverse("surveys:study_generate", args=[study.pk]), data)
    assert response.status_code == 400
    html = response.content.decode()
    assert f"{live_only.display_name} has no batch API" in field_error(html, "batch_mode")
    assert not ResponseGeneration.objects.exists()
    live = client.post(reverse("surveys:study_generate", args=[study.pk]), {"model": live_only.pk})
    assert live.status_code == 302
    assert not ResponseGeneration.objects.get(study=study).batch_mode
