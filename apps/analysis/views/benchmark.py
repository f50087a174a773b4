"""The benchmark report's pages (role_required(RESEARCHER), under /analysis/grading/<id>/):
the report, each table as CSV, each figure as SVG, the answers and questions below 65%, and
two grading runs side by side.

The report is computed once per fingerprint of the run's data and kept in the cache
(apps/analysis/benchmark.py): a page, its figures and its downloads read the same numbers.
Table 3 sorts on the server (`?sort=<column>&dir=asc|desc`), so that it works without
JavaScript and its CSV keeps the order shown; the Wilcoxon pairs are chosen with
`?pair=<id>-<id>` (repeatable), and a pair that is not one is refused with the reason; Table
1's model of a family with `?table1=<model id>` (repeatable, an empty one is the family's
newest), refused the same way.

The report's modules (apps/analysis/benchmark.py and benchmark_compare.py: numpy, pandas,
scipy) are imported by the views that compute, not with this module, which every web
process imports through the URLconf.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.accounts.roles import Role, role_required
from apps.console.form_fields import IdField
from apps.grading.models import GradingRun
from stats.points import MIN_POINTS

from ..benchmark_data import benchmark_models
from ..method import METHOD_TABLE, departures
from ..selectors import benchmark_table_shown
from ..tables import Table, table_csv_response

if TYPE_CHECKING:
    from ..benchmark import BenchmarkReport

researcher = role_required(Role.RESEARCHER)
SORTABLE = "table-3"
PER_PAGE = 50
OTHER_RUNS_SHOWN = 100
# The chooser's `with=<grading run id>` ("with" is no Python name, so a field, not a form).
RUN_ID = IdField()


def _run(run_id: int) -> GradingRun:
    return get_object_or_404(
        GradingRun.objects.select_related("sampling_run", "grader", "prompt"), pk=run_id
    )


def _report(request, run: GradingRun) -> tuple[BenchmarkReport, list[str], list[str]]:
    """The report for the pairs and Table 1's models asked for (the defaults where none is
    valid), and the reasons for each pair and each model refused."""
    from ..benchmark import benchmark_report_for, pairs_parse, table1_parse

    values, table1_values = request.GET.getlist("pair"), request.GET.getlist("table1")
    models = benchmark_models(run=run) if values or table1_values else []
    pairs, refused = pairs_parse(values, models) if values else ([], [])
    table1, refused_table1 = table1_parse(table1_values, models) if table1_values else ([], [])
    report = benchmark_report_for(run=run, pairs=pairs or None, table1=table1 or None)
    return report, refused, refused_table1


def _sort(request, table: Table) -> tuple[str, bool]:
    keys = {c.key for c in table.columns}
    key = request.GET.get("sort", "")
    return (key if key in keys else ""), request.GET.get("dir") != "asc"


def _query(request, **changes) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    for key, value in changes.items():
        query.pop(key, None)
        if value:
            query[key] = value
    return query.urlencode()


def _order_words(numeric: bool, direction: str) -> str:
    if numeric:
        return "highest first" if direction == "desc" else "lowest first"
    return "Z to A" if direction == "desc" else "A to Z"


def _headers(request, table: Table, key: str, descending: bool) -> list[dict]:
    """Each header of Table 3 with the link that sorts by it: the sorted column's link
    turns its order round; another column sorts numbers highest first and names A to Z."""
    headers = []
    for column in table.columns:
        current = column.key == key
        if current:
            following = "asc" if descending else "desc"
        else:
            following = "desc" if column.numeric else "asc"
        headers.append(
            {
                "column": column,
                "href": "?" + _query(request, sort=column.key, dir=following),
                "sort": ("descending" if descending else "ascending") if current else "",
                "action": _order_words(column.numeric, following),
            }
        )
    return headers


def _url(name: str, *args, query: str = "") -> str:
    return reverse(name, args=args) + (f"?{query}" if query else "")


def _table1_choices(report: BenchmarkReport) -> list[dict]:
    """Per family, its models for Table 1's form; the first choice, an empty value, is the
    family's newest, which the page shows unless another model was chosen."""
    from ..benchmark import PICK_CREATED, PICK_ONLY, PICK_RELEASED

    why = {
        PICK_RELEASED: "the latest release date",
        PICK_CREATED: "added last; no release dates",
        PICK_ONLY: "the only one",
    }
    choices = []
    for pick in report.table1:
        choices.append(
            {
                "family": pick.family,
                "default": f"Default: {pick.default.label} ({why[pick.default_rule]})",
                "models": [
                    {
                        "id": m.id,
                        "label": m.label
                        + (f", released {m.released_on.isoformat()}" if m.released_on else ""),
                        "selected": pick.chosen and m.id == pick.model.id,
                    }
                    for m in pick.members
                ],
            }
        )
    return choices


def _pair_choices(report: BenchmarkReport) -> list[dict]:
    chosen = set(report.pairs)
    return [
        {
            "value": f"{a.id}-{b.id}",
            "label": f"{a.label} vs {b.label}",
            "checked": (a.id, b.id) in chosen,
        }
        for a, b in itertools.combinations(report.models, 2)
    ]


@researcher
@require_GET
def benchmark_report_page(request, run_id: int):
    from ..benchmark import THRESHOLD, table_sorted

    run = _run(run_id)
    report, refused, refused_table1 = _report(request, run)
    key, descending = _sort(request, report.tables[SORTABLE])
    table3 = report.tables[SORTABLE]
    if key:
        table3 = table_sorted(table3, key=key, descending=descending)
    pairs = (
        "" if report.default_pairs else urlencode([("pair", f"{a}-{b}") for a, b in report.pairs])
    )
    others = (
        GradingRun.objects.exclude(pk=run.pk)
        .select_related("grader")
        .order_by("-created_at", "-pk")[:OTHER_RUNS_SHOWN]
    )
    context = {
        "run": run,
        "report": report,
        "table3": table3,
        "refused": refused,
        "table3_headers": _headers(request, table3, key, descending),
        "table3_csv": _url(
            "analysis:benchmark_table_csv",
            run.pk,
            SORTABLE,
            query=urlencode({"sort": key, "dir": "desc" if descending else "asc"}) if key else "",
        ),
        "wilcoxon_csv": _url("analysis:benchmark_table_csv", run.pk, "wilcoxon", query=pairs),
        "method_csv": _url(
            "analysis:benchmark_table_csv",
            run.pk,
            METHOD_TABLE,
            query="&".join(
                q for q in (pairs, urlencode([("table1", i) for i in _chosen_ids(report)])) if q
            ),
        ),
        "method_departures": departures(report.tables[METHOD_TABLE]),
        "pair_choices": _pair_choices(report),
        "refused_table1": refused_table1,
        "table1_chosen": _chosen_ids(report),
        "table1_choices": _table1_choices(report),
        "table1_csv": _url(
            "analysis:benchmark_table_csv",
            run.pk,
            "table-1",
            query=urlencode([("table1", i) for i in _chosen_ids(report)]),
        ),
        "table1_reset": _url("analysis:benchmark_report", run.pk, query=_query(request, table1="")),
        "headline": _headline(report),
        "contents": CONTENTS,
        "min_points": MIN_POINTS,
        "sort": key,
        "dir": "desc" if descending else "asc",
        "others": others,
        "threshold": round(100 * THRESHOLD),
        # By name with underscores: a template cannot look up a key with a hyphen.
        "t": {name.replace("-", "_"): table for name, table in report.tables.items()},
        "figures": list(report.figures.items()),
        "low_questions": len(report.tables["low-questions"].rows),
        "low_responses": len(report.tables["low-responses"].rows),
        # Each cell that stands for answers links to them in the answer viewer.
        "answers_url": reverse("grading:answers", args=[run.pk]),
    }
    return render(request, "analysis/benchmark_report.html", context)


def _chosen_ids(report: BenchmarkReport) -> list[int]:
    return [p.model.id for p in report.table1 if p.chosen]


def _headline(report: BenchmarkReport) -> list[dict]:
    """The headline's rows, each with its number as the page shows it: the auto-rater's r,
    every other one a percent."""
    table = report.tables["headline"]
    columns = {c.key: c for c in table.columns}
    rows = []
    for row in table.rows:
        if row["key"] != "rater":
            rows.append({**row, "shown": columns["value"].format(row["value"])})
        elif row["answers"] is None:
            rows.append({**row, "shown": "Not yet measured", "which": "no calibration yet"})
        else:
            rows.append({**row, "shown": "r = " + columns["r"].format(row["r"])})
    return rows


# The report's sections, in the page's order: (anchor, title) for its contents list.
CONTENTS = [
    ("in-brief", "In brief"),
    ("provenance", "What these numbers come from"),
    ("method", "How each number is made"),
    ("table-1", "One model per family (Table 1)"),
    ("table-3", "Scores per model and topic (Table 3)"),
    ("table-4", "Criteria met (Table 4)"),
    ("below-65", "Below 65%"),
    ("tests", "Tests"),
    ("figures", "Distributions (Figures 3 to 6)"),
    ("calibration", "Calibration against experts"),
    ("missing", "Missing scores"),
    ("compare", "Compare with another grading run"),
]


@researcher
@require_GET
def benchmark_table_csv(request, run_id: int, name: str):
    from ..benchmark import table_sorted

    run = _run(run_id)
    report, _refused, _refused_table1 = _report(request, run)
    table = report.tables.get(name) or (
        report.figures[name].table if name in report.figures else None
    )
    if table is None:
        raise Http404("No such table.")
    if name == SORTABLE:
        key, descending = _sort(request, table)
        if key:
            table = table_sorted(table, key=key, descending=descending)
    table = benchmark_table_shown(table=table, run=run, viewer=request.user)
    return table_csv_response(table, filename=f"grading-{run.pk}-{name}.csv")


@researcher
@require_GET
def benchmark_figure_svg(request, run_id: int, name: str):
    from ..benchmark import benchmark_svg_for

    run = _run(run_id)
    svg = benchmark_svg_for(run=run, name=name)
    if svg is None:
        raise Http404("No such figure.")
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    # Opened on its own, the SVG is a document: it may style itself and run nothing.
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return response


def _low_page(request, run_id: int, name: str, template: str):
    from ..benchmark import THRESHOLD, benchmark_report_for

    run = _run(run_id)
    report = benchmark_report_for(run=run)
    table = benchmark_table_shown(table=report.tables[name], run=run, viewer=request.user)
    page = Paginator(table.rows, PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "run": run,
        "report": report,
        "table": table,
        "page": page,
        "threshold": round(100 * THRESHOLD),
    }
    return render(request, template, context)


@researcher
@require_GET
def benchmark_low_responses(request, run_id: int):
    return _low_page(request, run_id, "low-responses", "analysis/benchmark_low_responses.html")


@researcher
@require_GET
def benchmark_low_questions(request, run_id: int):
    return _low_page(request, run_id, "low-questions", "analysis/benchmark_low_questions.html")


@researcher
@require_GET
def benchmark_compare_choose(request, run_id: int):
    """The chooser's form sends `with=<id>`: on to the two runs side by side."""
    run = _run(run_id)
    try:
        other = RUN_ID.clean(request.GET.get("with", ""))
    except forms.ValidationError:
        other = None
    if other and other != run.pk and GradingRun.objects.filter(pk=other).exists():
        return redirect("analysis:benchmark_compare", run.pk, other)
    messages.error(request, "Choose another grading run to compare this one with.")
    return redirect("analysis:benchmark_report", run.pk)


def _comparison(run_id: int, other_id: int):
    from ..benchmark_compare import benchmark_comparison_for

    run, other = _run(run_id), _run(other_id)
    if run.pk == other.pk:
        raise Http404("A grading run is compared with another one.")
    return run, other, benchmark_comparison_for(run=run, other=other)


@researcher
@require_GET
def benchmark_compare(request, run_id: int, other_id: int):
    run, other, comparison = _comparison(run_id, other_id)
    context = {
        "run": run,
        "other": other,
        "comparison": comparison,
        "tables": list(comparison.tables.items()),
        "runs_info": [comparison.first, comparison.second],
    }
    return render(request, "analysis/benchmark_compare.html", context)


@researcher
@require_GET
def benchmark_compare_csv(request, run_id: int, other_id: int, name: str):
    run, other, comparison = _comparison(run_id, other_id)
    table = comparison.tables.get(name)
    if table is None:
        raise Http404("No such table.")
    return table_csv_response(table, filename=f"grading-{run.pk}-vs-{other.pk}-{name}.csv")
