"""A run page in Chromium with an adaptive model's limit drawn beside its calls per second:
the drawing shows, its table of changes opens, and axe finds no serious or critical
violation, on a phone and on a desktop."""

import datetime as dt

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.llm.models import LimitChange, RunStatus
from apps.runs.models import Response, ResponseStatus, SamplingRun
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import SIZES, violations
from tests.factories import offline_model, user_with_role
from tests.runs.builders import run_made

NOWHERE = "http://127.0.0.1:9"  # nothing here calls a model


def finished_run_with_a_found_limit() -> SamplingRun:
    model = offline_model(
        NOWHERE,
        name="offline-terse",
        display_name="Adaptive <terse>",
        adapts_concurrency=True,
        min_concurrent=2,
        max_concurrent=16,
    )
    run = run_made(models=[model], samples=10)
    launch = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    SamplingRun.objects.filter(pk=run.pk).update(status=RunStatus.FINISHED, launched_at=launch)
    for i, pk in enumerate(run.responses.values_list("pk", flat=True)):
        Response.objects.filter(pk=pk).update(
            status=ResponseStatus.DONE,
            text="An answer.",
            completed_at=launch + dt.timedelta(seconds=1 + i * 3),
        )
    steps = [(2, 4, "start"), (4, 8, "start"), (8, 7, "cut"), (7, 8, "grow"), (8, 7, "cut")]
    for i, (old, new, why) in enumerate(steps):
        LimitChange.objects.create(
            model=model,
            at=launch + dt.timedelta(seconds=2 + 10 * i),
            old=old,
            new=new,
            why=why,
            in_flight=old,
        )
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("size", list(SIZES))
def test_a_run_page_draws_the_limit_and_lists_its_changes_accessibly(
    new_context, live_server, transactional_db, size
):
    run = finished_run_with_a_found_limit()
    researcher = user_with_role(Role.RESEARCHER)
    page = signed_in(new_context, live_server, researcher, viewport=SIZES[size]).new_page()
    page.goto(f"/runs/{run.pk}/")
    figure = page.get_by_test_id("limit-history")
    expect(figure).to_be_visible()
    expect(figure).to_contain_text("Adaptive <terse>")
    expect(figure.get_by_test_id("limit-now")).to_have_text("7")
    expect(figure.get_by_test_id("limit-cuts")).to_have_text("2")
    assert figure.locator("svg path.chart-limit").first.bounding_box()["width"] > 100
    page.get_by_text("The limit's changes, as a table").click()
    expect(page.get_by_test_id("limit-change")).to_have_count(5)
    expect(page.get_by_test_id("limit-change").nth(2)).to_contain_text("Cut")
    assert violations(page) == []
