"""Each report's method panel in Chromium: folded under its heading, opened from its summary,
a row for every statistic with whose method it is, its CSV the rows shown, and no serious
or critical accessibility violation, folded or open, on a phone and on a desktop."""

import csv
import io

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.analysis.benchmark import benchmark_report_for
from apps.analysis.method import METHOD_TABLE
from apps.analysis.selectors import survey_report_current
from apps.llm.models import PromptTemplate, Purpose
from apps.surveys.models import SurveyItem
from tests.analysis.benchmark_builders import Q, bench_make
from tests.analysis.builders import person, proxy, rate
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import SIZES, violations
from tests.browser.test_survey_report import watched
from tests.factories import offline_model, user_with_role

MODELS = {"Alpha 1": "Alpha", "Alpha 2": "Alpha", "offline-beta": "Beta"}


@pytest.fixture
def researcher(transactional_db):
    return user_with_role(Role.RESEARCHER, username="rahul", first_name="Rahul")


@pytest.fixture
def benchmark_run(transactional_db):
    questions = [Q(f"m{i}", topic=("accounts", "scams")[i % 2]) for i in range(4)]
    answers = {
        (model, q.key): [((3 + 4 * m + 5 * i + s) % 21) / 20 for s in range(2)]
        for m, model in enumerate(MODELS)
        for i, q in enumerate(questions)
    }
    bench = bench_make(models=MODELS, questions=questions, answers=answers, name="Panel")
    # A run that departs: the sampling prompt that wraps the question.
    bench.sampling.prompt = PromptTemplate.objects.get(purpose=Purpose.SAMPLE, version=1)
    bench.sampling.save(update_fields=["prompt"])
    return bench.grading


@pytest.fixture
def study(make_study):
    study = make_study(count=3, scenarios_per_participant=3)
    codes = list(SurveyItem.objects.filter(study=study, attention_check=False))
    values = {i.code: ("yes" if i.kind == "yes_no" else "3") for i in codes}
    for number in range(3):
        rate(person(study, number), {s: values for s in range(3)})
    model = offline_model("http://127.0.0.1:9", name="offline-terse")
    for run_index in range(2):
        rate(proxy(study, model, run_index), {s: values for s in range(3)})
    return study


def the_panel_is_read_and_downloaded(page, expected) -> None:
    panel = page.get_by_test_id("method-panel")
    table = panel.locator("table[data-table='method']")
    expect(table).to_be_hidden()  # folded
    panel.locator("summary").click()
    expect(table).to_be_visible()
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(len(expected.rows))
    expect(rows.locator("th")).to_have_text([row["statistic"] for row in expected.rows])
    for index, row in enumerate(expected.rows):
        expect(rows.nth(index).locator(".badge")).to_have_text(row["fidelity"])
    link = panel.get_by_role("link", name="Download CSV")
    header, *lines = list(
        csv.reader(io.StringIO(page.request.get(link.get_attribute("href")).text()))
    )
    assert header == [column.label for column in expected.columns]
    assert [line[0] for line in lines] == [row["statistic"] for row in expected.rows]


def test_the_benchmark_reports_panel_shows_every_row_and_the_departure(
    new_context, live_server, researcher, benchmark_run
):
    expected = benchmark_report_for(run=benchmark_run).tables[METHOD_TABLE]
    context = signed_in(new_context, live_server, researcher)
    problems = watched(context)
    page = context.new_page()
    page.goto(f"/analysis/grading/{benchmark_run.pk}/")
    summary = page.get_by_test_id("method-panel").locator("summary")
    # The prompt that wraps the question, and two samples a question where the paper had 5.
    expect(summary).to_contain_text("2 depart from the paper")
    the_panel_is_read_and_downloaded(page, expected)
    asked = page.locator("tr", has=page.locator("th", has_text="How each model was asked"))
    expect(asked).to_contain_text("adds a system message")
    assert problems == []


def test_the_survey_reports_panel_shows_every_row(new_context, live_server, researcher, study):
    _data, report, _bootstrap = survey_report_current(study=study)
    expected = report.tables[METHOD_TABLE]
    context = signed_in(new_context, live_server, researcher)
    problems = watched(context)
    page = context.new_page()
    page.goto(f"/analysis/studies/{study.pk}/survey/")
    the_panel_is_read_and_downloaded(page, expected)
    assert problems == []


@pytest.mark.parametrize("size", list(SIZES))
def test_the_panels_have_no_serious_accessibility_violations(
    new_context, live_server, researcher, benchmark_run, study, size
):
    context = signed_in(new_context, live_server, researcher, viewport=SIZES[size])
    page = context.new_page()
    found = {}
    for label, url in (
        ("benchmark", f"/analysis/grading/{benchmark_run.pk}/"),
        ("survey", f"/analysis/studies/{study.pk}/survey/"),
    ):
        page.goto(url)
        found[f"{label}, folded"] = violations(page)
        page.get_by_test_id("method-panel").locator("summary").click()
        found[f"{label}, open"] = violations(page)
    assert found == {label: [] for label in found}
