"""A researcher's path through a survey study's proxies and report in Chromium, against real
workers and the offline provider over HTTP: a proxy run made and launched from the study's
pages and watched to its end through the page's polling; then the report over that run and
people's stored answers, its figures loaded, each figure's CSV read against the table the
page shows, and the bootstrap intervals asked for from the page and computed by a worker.

What the pages say is compared with what the database holds; waits are for a state the page
shows, never a bound on how long it takes.
"""

import csv
import io
import random
import uuid

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.analysis.survey import survey_report
from apps.analysis.survey_data import survey_data
from apps.llm.models import RunStatus
from apps.surveys.models import (
    ParticipantKind,
    ProxyCall,
    ProxyCallStatus,
    ProxyRun,
    SurveyItem,
)
from config.celery import app
from tests.analysis.builders import person, rate
from tests.browser.sessions import signed_in
from tests.browser.test_content_security_policy import WATCH
from tests.factories import offline_model, user_with_role
from tests.workers.engine_builders import engine_workers
from workers.analysis import survey_bootstrap_task

__all__ = ["engine_workers"]  # the fixture, imported to be found

pytestmark = pytest.mark.worker

SCENARIOS = 4
RUNS = 2
PEOPLE = 6
RUN_TIMEOUT_MS = 120_000  # generous: the machine may be busy; this is no bound on speed
MISSING = "\u2014"

# The <details> table of a figure as the page shows it: header labels, then each row's cells.
TABLE_CELLS = """table => [
  [...table.querySelectorAll('thead th')].map(th => th.textContent.trim()),
  ...[...table.querySelectorAll('tbody tr')].map(
    tr => [...tr.children].map(cell => cell.textContent.trim()))
]"""


def watched(context) -> list[str]:
    """Console errors and Content-Security-Policy violations on any page of `context`,
    reported to the test as they happen (a navigation does not lose them)."""
    problems = []
    context.expose_function("__violation", lambda text: problems.append(f"CSP: {text}"))
    context.add_init_script(WATCH.replace("window.__violations.push(", "window.__violation("))
    context.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    return problems


@pytest.fixture
def proxy_world(make_study, engine_workers, offline_provider):
    """A draft study over fixture scenarios, an offline proxy model slow enough that the
    progress is seen moving, a researcher, and a worker for the engine's batches."""
    worker = engine_workers.start()  # first: it boots while the rest is made
    url = offline_provider(latency_ms=150)
    return {
        "worker": worker,
        "study": make_study(live=False, count=SCENARIOS, name="Messages at work"),
        "model": offline_model(url, name="offline-terse"),
        "researcher": user_with_role(
            Role.RESEARCHER, username="rahul", first_name="Rahul", last_name="Researcher"
        ),
    }


def proxy_run_from_the_pages(page, study, model) -> ProxyRun:
    """From the study's page to a finished proxy run of `RUNS` runs of `model`."""
    page.goto(f"/studies/{study.pk}/")
    page.get_by_role("link", name="Proxy participants").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Proxy participants")
    expect(page.get_by_text("No proxy runs yet.")).to_be_visible()
    page.get_by_label(str(model)).check()
    page.get_by_label("Runs per model").fill(str(RUNS))
    page.get_by_role("button", name="Save the draft").click()

    calls = SCENARIOS * RUNS
    expect(page.locator(".messages")).to_contain_text("Draft saved")
    expect(page.locator("#run-status")).to_have_text("Draft")
    estimate = page.get_by_test_id("estimate")
    expect(estimate.get_by_test_id("calls")).to_have_text(str(calls))
    row = estimate.get_by_test_id("estimate-row")
    expect(row).to_contain_text(model.display_name)
    expect(row.locator("td").nth(1)).to_have_text(str(calls))
    expect(row.get_by_test_id("estimate-batch")).to_have_text("no batch API")
    run = ProxyRun.objects.get(study=study)
    assert run.status == RunStatus.DRAFT
    assert list(run.model_configs.all()) == [model]
    assert run.runs_per_model == RUNS

    page.get_by_role("button", name="Launch").click()
    expect(page.locator(".messages")).to_contain_text("Launched")
    # The polled partial replaces itself until the run ends; the heading's badge comes
    # along out of band.
    progress = page.get_by_test_id("progress")
    expect(progress).to_contain_text(f"Finished: {calls} proxy ratings.", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#run-status")).to_have_text("Finished")
    run.refresh_from_db()
    return run


def test_a_researcher_launches_a_proxy_run_from_the_study_and_watches_it_finish(
    new_context, live_server, proxy_world, screenshot
):
    study, model = proxy_world["study"], proxy_world["model"]
    context = signed_in(new_context, live_server, proxy_world["researcher"])
    problems = watched(context)
    page = context.new_page()

    run = proxy_run_from_the_pages(page, study, model)

    calls = SCENARIOS * RUNS
    assert run.status == RunStatus.FINISHED
    done = ProxyCall.objects.filter(run=run, status=ProxyCallStatus.DONE).count()
    assert done == calls
    expect(page.get_by_test_id("done")).to_have_text(str(done))
    expect(page.get_by_test_id("failed")).to_have_text("0")
    expect(page.get_by_test_id("pending")).to_have_text("0")
    expect(page.get_by_test_id("percent")).to_have_text("100.0% done")
    row = page.get_by_test_id("model-row")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(model.display_name)
    expect(row.locator("td").nth(1)).to_have_text(str(calls))
    # Each run is a proxy participant who answered every scenario.
    proxies = study.participants.filter(kind=ParticipantKind.PROXY, model=model)
    assert sorted(proxies.values_list("run_index", flat=True)) == list(range(1, RUNS + 1))
    for participant in proxies:
        assert participant.assignments.count() == SCENARIOS
    screenshot(page, "finished")

    page.get_by_role("link", name=f"Proxy participants of {study.name}").click()
    listed = page.get_by_test_id("proxy-run-row")
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text("Finished")
    assert problems == []


def rated(participant, *, seed: int) -> None:
    """Every scenario of the participant's study rated on every item, drawn from `seed`."""
    draw = random.Random(seed)
    study = participant.study
    items = SurveyItem.objects.filter(study=study, attention_check=False)
    answers = {
        index: {item.code: draw.choice([value for value, _label in item.choices]) for item in items}
        for index in range(study.study_scenarios.count())
    }
    rate(participant, answers)


def people_rated(study, people: int = PEOPLE) -> None:
    """`people` people, each rating every scenario on every item."""
    for number in range(1, people + 1):
        rated(person(study, number), seed=number)


def shown_as(raw: str, shown: str) -> str:
    """A CSV cell formatted as the page formats it, judged by what the page shows: the
    same number of decimals, thousands separators, a percent sign; an empty cell as a dash."""
    if raw == "":
        return MISSING
    try:
        number = float(raw)
    except ValueError:
        return raw
    suffix = "%" if shown.endswith("%") else ""
    digits = shown.removesuffix("%").partition(".")[2]
    if "." not in raw and not digits:
        return f"{int(raw):,}{suffix}"
    return f"{number:,.{len(digits)}f}{suffix}"


@pytest.fixture
def bootstrap_queue(migrated_rows):
    """A queue of the test's own for the bootstrap task, with no worker on it until the
    test tells one to take it: the page is seen waiting first."""
    queue = f"test-{uuid.uuid4().hex[:12]}"
    saved = app.conf.task_routes
    app.conf.update(task_routes={**saved, survey_bootstrap_task.name: {"queue": queue}})
    yield queue
    app.conf.update(task_routes=saved)


def test_the_report_shows_people_and_the_proxy_run_with_its_data_and_intervals(
    new_context, live_server, proxy_world, bootstrap_queue, screenshot
):
    study, model = proxy_world["study"], proxy_world["model"]
    context = signed_in(new_context, live_server, proxy_world["researcher"])
    problems = watched(context)
    page = context.new_page()
    proxy_run_from_the_pages(page, study, model)
    people_rated(study)
    expected = survey_report(survey_data(study=study))

    page.goto(f"/analysis/studies/{study.pk}/survey/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Survey report")
    expect(page.get_by_test_id("report-n")).to_have_text(f"Based on {expected.data_n}.")
    assert expected.data_n.endswith("; 1 proxy model in 2 runs, 56 answers")

    # Every figure's image loads, and its CSV holds what its table shows.
    figures = page.locator(".report-figure")
    # Figures 2 and 3 per item; 4 and 5 as small multiples per item, and both pooled.
    expect(figures).to_have_count(len(expected.distributions) + 4)
    for figure in figures.all():
        name = figure.get_attribute("data-figure")
        image = figure.locator("img")
        image.scroll_into_view_if_needed()
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=image.element_handle()
        )
        figure.get_by_text("Show the data as a table").click()
        table = figure.locator("table.data")
        expect(table).to_be_visible()
        shown = table.evaluate(TABLE_CELLS)
        download = figure.get_by_role("link", name="Download data (CSV)")
        response = page.request.get(download.get_attribute("href"))
        assert response.ok, name
        assert response.headers["content-type"].startswith("text/csv")
        header, *rows = list(csv.reader(io.StringIO(response.text())))
        assert header == shown[0], name
        assert len(rows) == len(shown) - 1 > 0, name
        as_shown = [
            [shown_as(raw, cell) for raw, cell in zip(row, cells, strict=True)]
            for row, cells in zip(rows, shown[1:], strict=True)
        ]
        assert as_shown == shown[1:], name
        table_of = expected.figures[name].table
        assert [[*row] for row in shown[1:]] == table_of.formatted_rows(), name
    screenshot(page, "figures")

    # The agreement tables say what they rest on.
    for name in ("alpha", "rho"):
        table = page.locator(f"table[data-table={name}]")
        expect(table.locator("tbody tr")).to_have_count(len(expected.tables[name].rows))
        panel = page.locator("section.panel").filter(has=table)
        expect(panel.get_by_text(f"Based on {expected.tables[name].n}.")).to_be_visible()
    alpha_low = page.locator("table[data-table=alpha] tbody tr td:nth-child(5)")
    expect(alpha_low.first).to_have_text(MISSING)

    # The intervals: asked for from the page, waited for, then computed by a worker.
    bootstrap = page.get_by_test_id("bootstrap")
    bootstrap.get_by_role("button", name="Compute the confidence intervals").click()
    expect(page.locator(".messages")).to_contain_text("Computing the confidence intervals")
    expect(bootstrap.get_by_role("progressbar")).to_be_visible()
    expect(bootstrap).to_contain_text("Waiting for a worker")
    screenshot(page, "waiting")
    # The engine's worker, long started, takes the queue: no second worker to wait for.
    hostname = proxy_world["worker"].hostname
    replies = app.control.add_consumer(bootstrap_queue, destination=[hostname], reply=True)
    assert replies and "ok" in replies[0][hostname], replies
    expect(bootstrap).to_contain_text("Computed", timeout=RUN_TIMEOUT_MS)
    expect(bootstrap.get_by_role("progressbar")).to_have_count(0)
    # The tables are swapped in with the intervals, without reloading the page.
    lows = alpha_low.all_inner_texts()
    assert lows and any(text != MISSING for text in lows), lows
    highs = page.locator("table[data-table=alpha] tbody tr td:nth-child(6)").all_inner_texts()
    for low, high in zip(lows, highs, strict=True):
        if MISSING not in (low, high):
            assert float(low.replace(",", "")) <= float(high.replace(",", ""))
    screenshot(page, "intervals")
    assert problems == []
