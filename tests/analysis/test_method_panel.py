"""The method panel of each report: for every table and figure, what the paper did, what this
report did and whose method that is, built from the settings the report was computed with;
on the page, as CSV, in the API's report tables and in a grading run's everything-archive."""

import csv
import io
import zipfile

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.analysis.benchmark import benchmark_report, benchmark_report_for
from apps.analysis.benchmark_data import benchmark_data
from apps.analysis.method import (
    FIDELITY_LABELS,
    METHOD_TABLE,
    Fidelity,
    Method,
)
from apps.analysis.selectors import survey_report_current
from apps.analysis.tables import Column, Table
from apps.llm.models import PromptTemplate, Purpose
from apps.surveys.models import SurveyItem
from stats.points import MIN_POINTS
from tests.analysis.benchmark_builders import Q, bench_make
from tests.analysis.builders import person, proxy, rate
from tests.api.builders import bearer, token_for
from tests.factories import offline_model, user_with_role

pytestmark = pytest.mark.django_db

MODELS = {"Alpha 1": "Alpha", "Alpha 2": "Alpha", "Beta": "Beta"}


@pytest.fixture
def bench():
    questions = [
        Q(f"q{i}", topic=("accounts", "scams", "harassment")[i % 3], prior=i % 2 == 0)
        for i in range(9)
    ]
    answers = {
        (model, q.key): [((3 + 4 * m + 5 * i + s) % 21) / 20 for s in range(2)]
        for m, model in enumerate(MODELS)
        for i, q in enumerate(questions)
    }
    return bench_make(models=MODELS, questions=questions, answers=answers, name="Method")


def rows_of(table: Table, statistic: str) -> list[dict]:
    found = [row for row in table.rows if row["statistic"] == statistic]
    assert found, f"no row for {statistic!r}"
    return found


def unexplained(*, tables: dict[str, Table], figures: dict) -> list[str]:
    """Names of the tables and figures that carry no method: a report must have none."""
    found = [name for name, t in tables.items() if name != METHOD_TABLE and not t.methods]
    found += [name for name, f in figures.items() if not f.table.methods]
    return found


def test_every_table_and_figure_of_the_benchmark_report_has_its_method(bench):
    report = benchmark_report_for(run=bench.grading)
    assert unexplained(tables=report.tables, figures=report.figures) == []
    panel = report.tables[METHOD_TABLE]
    where = {row["where"] for row in panel.rows}
    assert set(report.tables) - {METHOD_TABLE} <= where
    assert set(report.figures) <= where
    assert {row["fidelity"] for row in panel.rows} <= set(FIDELITY_LABELS.values())
    few_points_row_says_the_minimum(panel)


def few_points_row_says_the_minimum(panel: Table) -> None:
    """The panel's last row: the minimum under which a statistic is not shown, as Assay's
    choice (the paper reports none)."""
    last = panel.rows[-1]
    assert (last["statistic"], last["where"]) == (
        "Statistics over too few points",
        "every statistic",
    )
    assert f"fewer than {MIN_POINTS} points" in last["ours"]
    assert last["fidelity"] == FIDELITY_LABELS[Fidelity.OURS]


def test_a_table_without_a_method_is_found():
    bare = Table(name="new-test", title="A new test", columns=[Column("x", "X")], rows=[])
    explained = Table(
        name="old",
        title="Old",
        columns=[Column("x", "X")],
        rows=[],
        methods=(Method("Old", "p", "o", Fidelity.PAPER),),
    )
    assert unexplained(tables={"old": explained, "new-test": bare}, figures={}) == ["new-test"]


def test_a_published_run_follows_the_paper_and_a_departing_one_says_so(bench):
    panel = benchmark_report_for(run=bench.grading).tables[METHOD_TABLE]
    (asked,) = rows_of(panel, "How each model was asked")
    assert asked["fidelity"] == FIDELITY_LABELS[Fidelity.PAPER]
    assert "sample v2" in asked["ours"]
    (graded,) = rows_of(panel, "How answers were graded")
    assert graded["fidelity"] == FIDELITY_LABELS[Fidelity.PAPER]

    bench.sampling.prompt = PromptTemplate.objects.get(purpose=Purpose.SAMPLE, version=1)
    bench.sampling.params = {"temperature": 0.7}
    bench.sampling.save(update_fields=["prompt", "params"])
    bench.grading.params = {"temperature": 0.5}
    bench.grading.save(update_fields=["params"])
    panel = benchmark_report(benchmark_data(run=bench.grading)).tables[METHOD_TABLE]
    (asked,) = rows_of(panel, "How each model was asked")
    assert asked["fidelity"] == FIDELITY_LABELS[Fidelity.CHOSEN]
    assert "sample v1" in asked["ours"] and "temperature=0.7" in asked["ours"]
    (graded,) = rows_of(panel, "How answers were graded")
    assert graded["fidelity"] == FIDELITY_LABELS[Fidelity.CHOSEN]
    assert "temperature=0.5" in graded["ours"]


def test_chosen_pairs_of_models_are_the_researchers_departure(bench):
    data = benchmark_data(run=bench.grading)
    alpha, beta = bench.models["Alpha 1"].pk, bench.models["Beta"].pk
    default = benchmark_report(data).tables[METHOD_TABLE]
    chosen = benchmark_report(data, pairs=[(alpha, beta)]).tables[METHOD_TABLE]
    statistic = "Wilcoxon signed-rank between models"
    assert rows_of(default, statistic)[0]["fidelity"] == FIDELITY_LABELS[Fidelity.PAPER]
    assert rows_of(chosen, statistic)[0]["fidelity"] == FIDELITY_LABELS[Fidelity.CHOSEN]


def test_the_panel_is_on_the_page_as_csv_in_the_api_and_in_the_archive(client, bench):
    researcher = user_with_role(Role.RESEARCHER, username="panel")
    client.force_login(researcher)
    run = bench.grading
    panel = benchmark_report_for(run=run).tables[METHOD_TABLE]

    page = client.get(reverse("analysis:benchmark_report", args=[run.pk])).content.decode()
    assert 'data-testid="method-panel"' in page
    assert page.count("<tr data-fidelity=") == len(panel.rows)

    response = client.get(reverse("analysis:benchmark_table_csv", args=[run.pk, METHOD_TABLE]))
    page_csv = b"".join(response.streaming_content).decode()
    header, *rows = list(csv.reader(io.StringIO(page_csv)))
    assert header == [c.label for c in panel.columns]
    assert len(rows) == len(panel.rows)

    api = client.__class__(**bearer(token_for(researcher)))
    body = api.get(f"/api/v1/reports/grading-runs/{run.pk}/tables/{METHOD_TABLE}/").json()
    assert [r["statistic"] for r in body["rows"]] == [r["statistic"] for r in panel.rows]
    api_csv = api.get(f"/api/v1/reports/grading-runs/{run.pk}/tables/{METHOD_TABLE}.csv")
    assert b"".join(api_csv.streaming_content).decode() == page_csv

    archive = client.get(reverse("grading:export_everything", args=[run.pk]))
    members = zipfile.ZipFile(io.BytesIO(b"".join(archive.streaming_content)))
    assert members.read("method.csv").decode() == page_csv


# --- the survey report -------------------------------------------------------------------------


@pytest.fixture
def rated(make_study):
    """Three people and two offline proxy models of two runs each over three scenarios."""
    study = make_study(count=3, scenarios_per_participant=3)
    items = SurveyItem.objects.filter(study=study, attention_check=False)
    for number in range(3):
        answers = {i.code: "yes" if i.kind == "yes_no" else str(1 + number) for i in items}
        rate(person(study, number), {s: answers for s in range(3)})
    for name in ("offline-terse", "offline-thorough"):
        model = offline_model("http://127.0.0.1:9", name=name)
        for run_index in range(2):
            answers = {i.code: "no" if i.kind == "yes_no" else "4" for i in items}
            rate(proxy(study, model, run_index), {s: answers for s in range(3)})
    return study


def test_every_table_and_figure_of_the_survey_report_has_its_method(rated):
    _data, report, _bootstrap = survey_report_current(study=rated)
    assert unexplained(tables=report.tables, figures=report.figures) == []
    panel = report.tables[METHOD_TABLE]
    where = {row["where"] for row in panel.rows}
    assert set(report.tables) - {METHOD_TABLE} <= where
    assert set(report.figures) <= where
    (across,) = rows_of(panel, "Krippendorff's alpha across proxies")
    assert across["fidelity"] == FIDELITY_LABELS[Fidelity.PAPER]
    assert "(4 coders)" in across["ours"]  # every run of every proxy: 2 models x 2 runs
    (medians,) = rows_of(panel, "Krippendorff's alpha across proxies, each the median of its runs")
    assert medians["fidelity"] == FIDELITY_LABELS[Fidelity.OURS]
    (ddof,) = rows_of(panel, "Which standard deviation (Figure 5)")
    assert ddof["fidelity"] == FIDELITY_LABELS[Fidelity.OURS] and "ddof=0" in ddof["ours"]
    few_points_row_says_the_minimum(panel)


def test_the_survey_panel_is_on_the_page_and_in_the_api(client, rated):
    researcher = user_with_role(Role.RESEARCHER, username="panel")
    client.force_login(researcher)
    _data, report, _bootstrap = survey_report_current(study=rated)
    panel = report.tables[METHOD_TABLE]
    page = client.get(reverse("analysis:survey_report", args=[rated.pk])).content.decode()
    assert 'data-testid="method-panel"' in page
    assert page.count("<tr data-fidelity=") == len(panel.rows)
    api = client.__class__(**bearer(token_for(researcher)))
    body = api.get(f"/api/v1/reports/studies/{rated.pk}/survey/tables/{METHOD_TABLE}/").json()
    assert [r["statistic"] for r in body["rows"]] == [r["statistic"] for r in panel.rows]
