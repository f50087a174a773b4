"""Batch mode in Chromium: a run is made in batch mode on the app's own form (and refused, on
the field, for a model without a batch API), its estimate shows the live and the batch cost
side by side, and its page lists its batches at the provider beside an adaptive model's limit
history; axe finds no serious or critical violation, on a phone and on a desktop."""

import datetime as dt
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.llm.models import LimitChange, ProviderBatch, RunStatus
from apps.runs.models import Response, ResponseStatus, SamplingRun
from apps.runs.services import SAMPLE_WORK
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import SIZES, violations
from tests.factories import offline_model, question_make, user_with_role
from tests.runs.builders import run_made

NOWHERE = "http://127.0.0.1:9"  # nothing here calls a model


def running_batch_run() -> SamplingRun:
    model = offline_model(
        NOWHERE,
        name="offline-terse",
        display_name="Batched <terse>",
        batch_api=True,
        adapts_concurrency=True,
        min_concurrent=2,
        max_concurrent=16,
    )
    run = run_made(models=[model], samples=6, batch_mode=True)
    launch = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    SamplingRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, launched_at=launch)
    ids = list(run.responses.order_by("pk").values_list("pk", flat=True))
    done, held = ids[:5], ids[5:]
    for i, pk in enumerate(done):
        Response.objects.filter(pk=pk).update(
            status=ResponseStatus.DONE,
            text="An answer.",
            completed_at=launch + dt.timedelta(seconds=30 + i),
            cost_usd=Decimal("0.0005"),
        )
    recorded = ProviderBatch.objects.create(
        work=SAMPLE_WORK.name,
        scope=run.pk,
        model=model,
        status=ProviderBatch.Status.EXPIRED,
        provider_batch_id="batch-offline-1",
        requests=8,
        completed=5,
        recorded=5,
        retried=3,
        submitted_at=launch,
        ended_at=launch + dt.timedelta(minutes=2),
        recorded_at=launch + dt.timedelta(minutes=2),
    )
    pending = ProviderBatch.objects.create(
        work=SAMPLE_WORK.name,
        scope=run.pk,
        model=model,
        status=ProviderBatch.Status.IN_PROGRESS,
        provider_batch_id="batch-offline-2",
        requests=len(held),
        submitted_at=launch + dt.timedelta(minutes=3),
        error="Batched <terse>: reading the batch: APIConnectionError: <refused>",
    )
    Response.objects.filter(pk__in=held).update(
        status=ResponseStatus.RUNNING, lease_owner=pending.owner
    )
    for i, (old, new, why) in enumerate([(2, 4, "start"), (4, 8, "start"), (8, 7, "cut")]):
        LimitChange.objects.create(
            model=model,
            at=launch + dt.timedelta(seconds=5 + 10 * i),
            old=old,
            new=new,
            why=why,
            in_flight=old,
        )
    assert recorded.pk < pending.pk
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("size", list(SIZES))
def test_a_run_page_in_batch_mode_lists_its_batches_beside_the_limit_accessibly(
    new_context, live_server, transactional_db, size
):
    run = running_batch_run()
    researcher = user_with_role(Role.RESEARCHER)
    page = signed_in(new_context, live_server, researcher, viewport=SIZES[size]).new_page()
    page.goto(f"/runs/{run.pk}/")
    batches = page.get_by_test_id("run-batches")
    expect(batches).to_be_visible()
    expect(batches.get_by_test_id("batches-count")).to_have_text("2")
    expect(batches.get_by_test_id("batches-open")).to_have_text("1")
    rows = batches.get_by_test_id("batch-row")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("In progress")
    expect(rows.first).to_contain_text("Batched <terse>")
    expect(rows.first.get_by_test_id("batch-error")).to_contain_text("<refused>")
    expect(rows.nth(1)).to_contain_text("Expired")
    expect(page.get_by_test_id("running")).to_have_text("7")  # held by the open batch
    expect(page.get_by_test_id("limit-history")).to_be_visible()
    page.get_by_test_id("run-batches").scroll_into_view_if_needed()
    assert violations(page) == []

    # The poll brings the batches along: one ends and is recorded.
    ProviderBatch.objects.filter(provider_batch_id="batch-offline-2").update(
        status=ProviderBatch.Status.COMPLETED, recorded=7, recorded_at=dt.datetime.now(dt.UTC)
    )
    expect(batches.get_by_test_id("batches-open")).to_have_text("0", timeout=10_000)
    expect(rows.first).to_contain_text("Completed")


@pytest.mark.parametrize("size", list(SIZES))
def test_a_run_is_made_in_batch_mode_on_its_form_and_its_estimate_shows_both_prices(
    new_context, live_server, transactional_db, size
):
    offline_model(NOWHERE, name="offline-terse", display_name="Batched terse", batch_api=True)
    offline_model(NOWHERE, name="offline-friendly", display_name="Live only friendly")
    question_make()
    researcher = user_with_role(Role.RESEARCHER)
    page = signed_in(new_context, live_server, researcher, viewport=SIZES[size]).new_page()
    page.goto("/runs/new/")
    page.get_by_label("Name").fill("Batched pilot")
    page.get_by_label("With an approved rubric").uncheck()  # the question has none
    expect(page.get_by_test_id("selected-count")).to_have_text("1 question selected.")
    page.get_by_label("Live only friendly").check()
    page.get_by_label("Batch mode").check()
    page.get_by_role("button", name="Save as a draft").click()
    expect(page.locator("#id_batch_mode_error")).to_contain_text(
        "Live only friendly has no batch API"
    )
    expect(page.get_by_label("Batch mode")).to_have_attribute("aria-invalid", "true")
    assert violations(page) == []

    page.get_by_label("Live only friendly").uncheck()
    page.get_by_label("Batched terse").check()
    page.get_by_role("button", name="Save as a draft").click()
    expect(page.get_by_test_id("estimate")).to_be_visible()
    run = SamplingRun.objects.get(name="Batched pilot")
    assert run.batch_mode
    live = page.get_by_test_id("estimate-total").inner_text()
    batch = page.get_by_test_id("estimate-batch").first
    expect(batch).to_contain_text("50% of the list price")
    assert Decimal(batch.inner_text().split()[0]) * 2 == pytest.approx(Decimal(live.strip("$")))
    assert violations(page) == []
