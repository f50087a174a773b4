"""A grading run's benchmark report in Chromium: every figure's image loads and its "Download
data (CSV)" holds what its table shows; Table 3 sorts by a column from its header, its All
models row last; Table 1's model of a family is chosen with its form; axe finds no serious or
critical violation on the report (with the headline, and the Table 1 and pairs forms open),
its long lists and two runs side by side, on a phone and on a desktop; and nothing is logged
to the console or blocked by the Content-Security-Policy."""

import csv
import io

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.analysis.benchmark import benchmark_report_for
from apps.analysis.tables import MISSING
from tests.analysis.benchmark_builders import ERROR, FAILED, Q, bench_make, grading_add
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import SIZES, violations
from tests.browser.test_survey_report import TABLE_CELLS, shown_as, watched
from tests.conftest import ARTIFACTS
from tests.factories import user_with_role

MODELS = {"Alpha 1": "Alpha", "Alpha 2": "Alpha", "offline-beta": "Beta"}


@pytest.fixture
def world(transactional_db):
    questions = [
        Q(
            f"b{i}",
            topic=("accounts", "scams", "harassment")[i % 3],
            prior=i % 2 == 0,
            sensemaking=i % 3 != 1,
            guidance=i % 2 == 1,
        )
        for i in range(6)
    ]
    answers = {
        (model, q.key): [((4 + 5 * m + 3 * i + s) % 21) / 20 for s in range(2)]
        for m, model in enumerate(MODELS)
        for i, q in enumerate(questions)
    }
    answers[("offline-beta", "b0")] = [ERROR, 0.4]
    answers[("offline-beta", "b1")] = [FAILED]
    bench = bench_make(models=MODELS, questions=questions, answers=answers, name="Browser")
    other = grading_add(bench, answers=answers, name="Browser, again")
    researcher = user_with_role(Role.RESEARCHER, username="rahul", first_name="Rahul")
    return bench, other, researcher


def test_the_report_shows_its_figures_with_their_data_and_sorts_table_3(
    new_context, live_server, world, screenshot
):
    bench, _other, researcher = world
    run = bench.grading
    context = signed_in(new_context, live_server, researcher)
    problems = watched(context)
    page = context.new_page()
    expected = benchmark_report_for(run=run)

    page.goto(f"/grading/{run.pk}/")
    page.get_by_test_id("benchmark-report-link").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Benchmark report")
    expect(page.get_by_test_id("report-n")).to_have_text(f"Based on {expected.n}.")

    figures = page.locator(".report-figure")
    expect(figures).to_have_count(len(expected.figures))
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
        assert shown[1:] == expected.figures[name].table.formatted_rows(), name
    screenshot(page, "figures")

    # Table 3 sorted by its overall mean: highest first, then lowest first.
    table3 = page.locator("table[data-table='table-3']")
    means = {r["model"]: r["mean"] for r in expected.tables["table-3"].rows[:-1]}
    falling = sorted(means, key=lambda name: (means[name], name), reverse=True)
    rising = [*falling[::-1], "All models"]  # the All models row stays last
    falling = [*falling, "All models"]
    table3.get_by_role("link", name="Overall mean").click()
    expect(page).to_have_url(f"{live_server.url}/analysis/grading/{run.pk}/?sort=mean&dir=desc")
    header = table3.locator("th[aria-sort]")
    expect(header).to_have_count(1)
    expect(header).to_have_attribute("aria-sort", "descending")
    expect(header).to_contain_text("Overall mean")
    expect(table3.locator("tbody th")).to_have_text(falling)
    table3.get_by_role("link", name="Overall mean").click()
    expect(table3.locator("th[aria-sort]")).to_have_attribute("aria-sort", "ascending")
    expect(table3.locator("tbody th")).to_have_text(rising)
    # Its CSV comes in the order shown.
    csv_link = page.locator("section[aria-labelledby='table3-heading']").get_by_role(
        "link", name="Download CSV"
    )
    header, *rows = list(
        csv.reader(io.StringIO(page.request.get(csv_link.get_attribute("href")).text()))
    )
    assert [row[0] for row in rows] == rising
    screenshot(page, "sorted")

    # Table 1: Alpha's default is the model added last; choosing the other one shows it, and
    # the page says it was chosen.
    table1 = page.locator("table[data-table='table-1']")
    alpha = table1.locator("tbody tr", has=page.locator("th", has_text="Alpha"))
    expect(alpha.locator("td").first).to_have_text("Alpha 2")
    page.get_by_text("Choose the model of each family").click()
    page.get_by_label("Alpha", exact=True).select_option(label="Alpha 1")
    page.get_by_role("button", name="Show these models").click()
    expect(alpha.locator("td").first).to_have_text("Alpha 1")
    expect(alpha).to_contain_text("Chosen instead of")
    # The sort chosen before stays.
    expect(table3.locator("th[aria-sort]")).to_have_attribute("aria-sort", "ascending")
    assert problems == []


@pytest.mark.parametrize("size", list(SIZES))
def test_the_report_pages_have_no_serious_accessibility_violations(
    new_context, live_server, world, size
):
    bench, other, researcher = world
    run = bench.grading
    context = signed_in(new_context, live_server, researcher, viewport=SIZES[size])
    problems = watched(context)
    page = context.new_page()
    found = {}
    # The report itself at 360 and 1366 px: test_the_report_reads_like_a_results_section.
    for label, url in (
        ("answers below 65%", f"/analysis/grading/{run.pk}/below-65/answers/"),
        ("questions below 65%", f"/analysis/grading/{run.pk}/below-65/questions/"),
        ("side by side", f"/analysis/grading/{run.pk}/compare/{other.pk}/"),
    ):
        page.goto(url)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        found[label] = violations(page)
    # The pairs and Table 1 forms open with their refusals, and a figure's table shown.
    page.goto(f"/analysis/grading/{run.pk}/?pair=1-x&table1=x")
    expect(page.get_by_test_id("refused-pairs")).to_be_visible()
    expect(page.get_by_test_id("refused-table1")).to_be_visible()
    expect(page.get_by_test_id("headline")).to_be_visible()
    page.locator(".report-figure").first.get_by_text("Show the data as a table").click()
    found["pairs and a figure's data"] = violations(page)
    assert found == {label: [] for label in found}
    assert problems == []


# Demo-like: the offline provider's models as the demo names them, the nine topics.
DEMO_MODELS = {
    "Offline Terse (demo)": "Offline",
    "Offline Thorough (demo)": "Offline",
    "Offline Friendly (demo)": "Offline",
}
TOPICS = (
    "accounts",
    "moderation tools",
    "security tools",
    "privacy tools",
    "compromise",
    "platform actions",
    "scams",
    "harassment",
    "data concerns",
)
WIDTHS = {360: {"width": 360, "height": 740}, 1366: {"width": 1366, "height": 800}}


@pytest.fixture
def demo_like(transactional_db):
    questions = [Q(f"d{i}", topic=TOPICS[i % 9], prior=i % 2 == 0) for i in range(18)]
    answers = {
        (model, q.key): [((5 + 4 * m + 7 * i + 3 * s) % 21) / 20 for s in range(2)]
        for m, model in enumerate(DEMO_MODELS)
        for i, q in enumerate(questions)
    }
    bench = bench_make(models=DEMO_MODELS, questions=questions, answers=answers, name="Demo-like")
    return bench, user_with_role(Role.RESEARCHER, username="rahul", first_name="Rahul")


def cell(page, table: str, row: str, column: int) -> str:
    """The text of a table's cell: the row whose header is `row`, the column'th data cell."""
    found = page.locator(
        f"table[data-table='{table}'] tbody tr", has=page.locator("th", has_text=row)
    )
    return found.first.locator("td").nth(column).inner_text().strip()


# The pairs of an SVG's texts (labels, titles, values, the legend's) whose boxes overlap by
# more than a pixel each way, as the browser lays them out.
OVERLAPS = """() => {
  const boxes = [...document.querySelectorAll("text")]
    .filter(t => t.textContent.trim())
    .map(t => [t.textContent.trim(), t.getBoundingClientRect()]);
  const found = [];
  boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
    const x = Math.min(p.right, q.right) - Math.max(p.left, q.left);
    const y = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
    if (x > 1 && y > 1) found.push([a, b]);
  }));
  return found;
}"""


def test_the_report_reads_like_a_results_section(new_context, live_server, demo_like):
    """At 360 and 1366 px: the page never scrolls sideways (a wide table scrolls in its own
    region); the headline's numbers are the tables'; a model reads its short name with one
    offline badge; the contents links lead to their sections, which fold; axe finds nothing
    serious; no two labels of a figure overlap as the browser draws it. Full-page screenshots
    at both widths go to test-artifacts/."""
    bench, researcher = demo_like
    run = bench.grading
    report = benchmark_report_for(run=run)
    table3 = report.tables["table-3"]
    topic = {c.label: i - 1 for i, c in enumerate(table3.columns)}  # data cells after the header
    for width, viewport in WIDTHS.items():
        context = signed_in(new_context, live_server, researcher, viewport=viewport)
        problems = watched(context)
        page = context.new_page()
        page.goto(f"/analysis/grading/{run.pk}/")
        expect(page.get_by_test_id("headline")).to_be_visible()
        page.wait_for_load_state("load")

        # No sideways scroll of the page; Table 3 scrolls inside its region at 360 px.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
        region = page.locator("section#table-3 .table-scroll")
        expect(region).to_have_attribute("tabindex", "0")
        if width == 360:
            assert region.evaluate("r => r.scrollWidth > r.clientWidth")
            # Its first column stays where it is as the table scrolls.
            header = page.locator("table[data-table='table-3'] tbody th").first
            before = header.bounding_box()["x"]
            region.evaluate("r => r.scrollBy(200, 0)")
            assert header.bounding_box()["x"] == pytest.approx(before, abs=1)

        # The headline's numbers are the tables' numbers.
        headline = {
            key: page.get_by_test_id(f"headline-{key}").inner_text().strip()
            for key in ("mean", "best-model", "worst-model", "best-topic", "worst-topic", "below")
        }
        rows = {r["key"]: r for r in report.tables["headline"].rows}
        assert headline["mean"] == cell(page, "table-3", "All models", 0)
        for key in ("best-model", "worst-model"):
            (name,) = rows[key]["names"]
            assert headline[key] == cell(page, "table-3", name.name, 0), key
            which = page.locator(f"[data-headline='{key}'] .headline-which")
            expect(which).to_have_text(str(name))  # "Terse (offline)": the badge's text
            expect(which.locator(".badge.offline")).to_have_count(1)
        for key in ("best-topic", "worst-topic"):
            for name in rows[key]["which"].split(" and "):  # tied topics are named together
                assert headline[key] == cell(page, "table-3", "All models", topic[name]), key
        assert headline["below"] == cell(page, "below-65", "All models", 2)
        expect(page.get_by_test_id("headline-rater")).to_have_text("Not yet measured")
        assert MISSING not in headline.values()

        # Each model is its short name with one badge, never "(demo) (offline demo model)".
        names = page.locator("table[data-table='table-3'] tbody th")
        expect(names.first).to_have_text("Friendly (offline)")
        shown = page.locator("table.data tbody th, .headline").all_inner_texts()
        assert not [text for text in shown if "(demo)" in text or "demo model" in text]

        # The contents lead to each section; a section folds and opens again.
        contents = page.get_by_test_id("contents").get_by_role("link")
        assert contents.count() == 12
        page.get_by_test_id("contents").get_by_role("link", name="Tests").click()
        expect(page).to_have_url(f"{live_server.url}/analysis/grading/{run.pk}/#tests")
        expect(page.locator("#tests-heading")).to_be_in_viewport()
        summary = page.locator("section#table-4 summary")
        table4 = page.locator("table[data-table='table-4']")
        expect(table4).to_be_visible()
        summary.click()
        expect(table4).to_be_hidden()
        expect(page.locator("section#table-4 details")).not_to_have_attribute("open", "")
        summary.click()
        expect(table4).to_be_visible()

        assert violations(page) == [], width
        page.evaluate("window.scrollTo(0, 0)")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"benchmark-report-{width}.png"), full_page=True)
        if width == 1366:
            # Each figure, opened as the browser draws it: no two of its labels' boxes overlap.
            for name in report.figures:
                page.goto(f"/analysis/grading/{run.pk}/figures/{name}.svg")
                assert page.locator("text").count() > 10, name  # drawn as text, not paths
                assert page.evaluate(OVERLAPS) == [], name
        assert problems == []
        context.close()
