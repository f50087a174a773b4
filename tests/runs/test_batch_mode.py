"""Batch mode on sampling runs: chosen on the new-run form (stored, or refused on its field
with the model named when a model has no batch API), the estimate's batch column beside the
live cost, and the run page's provider batches, polled with its progress."""

from decimal import Decimal

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import BatchRetry, ProviderBatch, Purpose, RunStatus
from apps.llm.selectors import BATCHES_SHOWN, prompt_current
from apps.runs.errors import RunError
from apps.runs.models import SamplingRun
from apps.runs.services import SAMPLE_WORK, sampling_estimate, sampling_run_launch
from tests.factories import offline_model, provider_batches_make, question_make
from tests.runs.builders import HX, graded_questions, run_made
from tests.runs.test_views import NOWHERE, as_shown

pytestmark = pytest.mark.django_db


def url(name: str, run=None) -> str:
    return reverse(f"runs:{name}", args=[run.pk] if run is not None else [])


def batched_model(name: str = "offline-terse", discount: str = "0.5"):
    return offline_model(NOWHERE, name=name, batch_api=True, batch_discount=Decimal(discount))


def new_run_data(models, **fields) -> dict:
    return {
        "action": "create",
        "name": "Batched",
        "conditions": ["approved_rubric"],
        "models": [m.pk for m in models],
        "samples_per_item": 2,
        "prompt": prompt_current(purpose=Purpose.SAMPLE).pk,
        **fields,
    }


def test_the_form_stores_batch_mode_and_where_failed_lines_go(role_client, expert, reviewer):
    graded_questions(2, author=expert, reviewer=reviewer)
    models = [batched_model(), batched_model("offline-friendly")]
    researcher = role_client(Role.RESEARCHER)
    assert 'name="batch_mode"' in researcher.get(url("new")).text
    data = new_run_data(models, batch_mode="on", batch_retry=BatchRetry.LIVE)
    response = researcher.post(url("new"), data)
    run = SamplingRun.objects.get(name="Batched")
    assert response.status_code == 302, response.text
    assert (run.batch_mode, run.batch_retry) == (True, BatchRetry.LIVE)
    page = researcher.get(url("detail", run)).text
    assert "Batch mode: <strong>on</strong>" in page
    assert "failed batch lines are asked again live, at once (at the list price)" in page


def test_a_run_left_live_is_not_in_batch_mode(role_client, expert, reviewer):
    graded_questions(1, author=expert, reviewer=reviewer)
    response = role_client(Role.RESEARCHER).post(url("new"), new_run_data([batched_model()]))
    assert response.status_code == 302, response.text
    run = SamplingRun.objects.get(name="Batched")
    assert (run.batch_mode, run.batch_retry) == (False, BatchRetry.BATCH)


def test_the_form_refuses_batch_mode_on_its_field_naming_the_model_without_a_batch_api(
    role_client, expert, reviewer
):
    graded_questions(1, author=expert, reviewer=reviewer)
    live_only = offline_model(NOWHERE, name="offline-friendly")
    models = [batched_model(), live_only]
    response = role_client(Role.RESEARCHER).post(url("new"), new_run_data(models, batch_mode="on"))
    assert response.status_code == 400
    error = response.text.split('id="id_batch_mode_error">')[1].split("</p>")[0]
    assert f"{live_only.display_name} has no batch API" in error
    assert 'aria-describedby="id_batch_mode_helptext id_batch_mode_error"' in response.text
    assert not SamplingRun.objects.filter(name="Batched").exists()


def test_the_service_refuses_batch_mode_for_a_model_without_a_batch_api():
    live_only = offline_model(NOWHERE, name="offline-friendly")
    with pytest.raises(RunError, match=f"{live_only.display_name} has no batch API"):
        run_made(models=[batched_model(), live_only], batch_mode=True)
    with pytest.raises(
        RunError, match="Failed batch lines are asked again 'batch' or 'live', not 'later'"
    ):
        run_made(models=[batched_model()], batch_mode=True, batch_retry="later")
    assert not SamplingRun.objects.exists()
    live = run_made(models=[live_only])  # live, the same model is welcome
    assert not live.batch_mode


# --- the estimate ---------------------------------------------------------------------------


def test_the_estimate_prices_batch_mode_at_each_models_batch_price():
    cheap = batched_model(discount="0.4")
    live_only = offline_model(NOWHERE, name="offline-friendly")
    unpriced = batched_model("offline-thorough")
    unpriced.input_price_per_mtok = unpriced.output_price_per_mtok = None
    unpriced.save()
    estimate = sampling_estimate(
        questions=[question_make(), question_make()],
        models=[cheap, live_only, unpriced],
        samples_per_item=3,
        prompt=prompt_current(purpose=Purpose.SAMPLE),
    )
    rows = {row.model: row for row in estimate.models}
    assert rows[cheap].cost_usd > 0
    assert rows[cheap].batch_cost_usd == (rows[cheap].cost_usd * Decimal("0.4")).quantize(
        Decimal("0.000001")
    )
    assert rows[live_only].cost_usd > 0 and rows[live_only].batch_cost_usd is None
    assert rows[unpriced].cost_usd is None and rows[unpriced].batch_cost_usd is None
    assert estimate.no_batch_api == [live_only] and estimate.batch_cost_usd is None

    both = sampling_estimate(
        questions=[question_make()],
        models=[cheap, batched_model("offline-terse-2", discount="0.5")],
        samples_per_item=1,
        prompt=prompt_current(purpose=Purpose.SAMPLE),
    )
    assert both.batch_cost_usd == sum(row.batch_cost_usd for row in both.models)
    assert both.batch_cost_usd < both.cost_usd


def test_the_draft_page_shows_the_batch_cost_beside_the_live_cost(role_client):
    cheap = batched_model(discount="0.4")
    live_only = offline_model(NOWHERE, name="offline-friendly")
    run = run_made(models=[cheap, live_only], samples=2)
    page = role_client(Role.RESEARCHER).get(url("detail", run)).text
    assert "In batch mode (USD)" in page
    rows = {}
    for row in page.split('data-testid="estimate-row"')[1:]:
        name = "offline-friendly" if "offline-friendly" in row.split("</td>")[0] else "terse"
        rows[name] = row.split("</tr>")[0]
    estimate = {
        row.model.pk: row
        for row in sampling_estimate(
            questions=run.questions.all(),
            models=[cheap, live_only],
            samples_per_item=2,
            prompt=run.prompt,
        ).models
    }
    batch_cell = rows["terse"].split('data-testid="estimate-batch">')[1]
    assert batch_cell.startswith(as_shown(estimate[cheap.pk].batch_cost_usd))
    assert "(40% of the list price)" in batch_cell
    assert (
        rows["offline-friendly"]
        .split('data-testid="estimate-batch">')[1]
        .startswith("no batch API")
    )
    assert f"since {live_only.display_name} has no batch API" in page


# --- the run page's batches -----------------------------------------------------------------


def batch_rows(html: str) -> list[str]:
    return [row.split("</tr>")[0] for row in html.split('data-testid="batch-row"')[1:]]


def test_a_run_in_batch_mode_shows_its_provider_batches_and_the_poll_brings_them(role_client):
    model = batched_model()
    run = run_made(models=[model], batch_mode=True)
    sampling_run_launch(run=run)  # its work is queued after commit, which a test never has
    provider_batches_make(
        work=SAMPLE_WORK.name,
        scope=run.pk,
        model=model,
        status=ProviderBatch.Status.IN_PROGRESS,
        provider_batch_id="batch_abc123",
        completed=1,
    )
    provider_batches_make(
        work=SAMPLE_WORK.name,
        scope=run.pk,
        model=model,
        status=ProviderBatch.Status.FAILED,
        error="The provider refused the file.",
    )
    other = run_made(models=[model], name="Another")  # another run's batch is not shown
    provider_batches_make(work=SAMPLE_WORK.name, scope=other.pk, model=model, requests=99)
    researcher = role_client(Role.RESEARCHER)
    for headers in ({}, HX):
        html = researcher.get(url("detail", run), **headers).text
        assert 'data-testid="run-batches"' in html
        assert '<th scope="col">Provider\'s batch id</th>' in html
        assert 'role="region" aria-label="Batches at the provider, newest first"' in html
        rows = batch_rows(html)
        assert len(rows) == 2
        assert "Failed" in rows[0] and "The provider refused the file." in rows[0]
        assert "In progress" in rows[1] and "batch_abc123" in rows[1]
        assert model.display_name in rows[1]
        assert '<strong data-testid="batches-count">2</strong>' in html
        assert '<strong data-testid="batches-requests">2</strong>' in html
        assert "count as in flight" in html
    assert (
        researcher.get(url("detail", run), **HX).text.strip().startswith('<section id="progress"')
    )


def test_a_run_page_lists_the_newest_batches_and_says_there_are_more(role_client):
    model = batched_model()
    run = run_made(models=[model], batch_mode=True)
    sampling_run_launch(run=run)
    provider_batches_make(work=SAMPLE_WORK.name, scope=run.pk, model=model, count=BATCHES_SHOWN + 1)
    html = role_client(Role.RESEARCHER).get(url("detail", run), **HX).text
    assert len(batch_rows(html)) == BATCHES_SHOWN
    assert f"The newest {BATCHES_SHOWN} of {BATCHES_SHOWN + 1} batches" in html


def test_a_live_run_shows_no_batches(role_client):
    model = batched_model()
    run = run_made(models=[model])
    sampling_run_launch(run=run)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    html = role_client(Role.RESEARCHER).get(url("detail", run)).text
    assert 'data-testid="run-batches"' not in html
    assert "Batch mode: off" in html
