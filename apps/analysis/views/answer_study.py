"""The answer-study report's pages (role_required(RESEARCHER), under
/analysis/studies/<id>/answers/): the report, each of its tables as CSV, each figure as SVG,
and the bootstrap intervals asked for and followed (htmx), as the survey report's are.

An answer study (Study.kind ANSWERS) puts a benchmark's answers before people, proxies and
the auto-rater; any other study has no such report (404). Its data is read once per
fingerprint and kept in the cache (apps/analysis/selectors.py); the statistics
(apps/analysis/answer_study.py: numpy, pandas, scipy) are imported by the views that compute.
"""

from django.contrib import messages
from django.core.cache import cache
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.roles import Role, role_required
from apps.answer_studies.models import AnswerDraw
from apps.grading.models import GradingRun
from apps.surveys.models import Study, StudyKind

from .. import selectors, services
from ..answer_study_data import answer_study_fingerprint
from ..method import METHOD_TABLE, departures
from ..models import BootstrapStatus
from ..tables import table_csv_response

researcher = role_required(Role.RESEARCHER)
DATA_SECONDS = 3600


def _study(study_id: int) -> Study:
    """The answer study, or 404 for a study of scenarios (it has a survey report instead)."""
    return get_object_or_404(Study, pk=study_id, kind=StudyKind.ANSWERS)


def _drawn(study: Study) -> bool:
    return AnswerDraw.objects.filter(study=study).exists()


def _report(study_id: int):
    study = _study(study_id)
    if not _drawn(study):
        raise Http404("No answers have been drawn for this study yet.")
    data, report, bootstrap = selectors.answer_study_report_current(study=study)
    return study, data, report, bootstrap


def _sections(study: Study, report, shown) -> list[dict]:
    """The report's sections in its order, each with its tables and figures and their URLs;
    the section of the method table is the method panel. `shown`: a table as the viewer may
    read it."""
    sections = []
    for slug, heading, names in report.sections:
        if METHOD_TABLE in names:
            sections.append({"slug": "method", "heading": heading, "method": True})
            continue
        parts = []
        for name in names:
            csv_url = reverse("analysis:answer_study_table_csv", args=[study.pk, name])
            if name in report.figures:
                svg_url = reverse("analysis:answer_study_figure_svg", args=[study.pk, name])
                table = shown(report.figures[name].table)
                parts.append({"table": table, "figure": True, "svg": svg_url, "csv": csv_url})
            elif name in report.tables:
                table = shown(report.tables[name])
                parts.append({"table": table, "figure": False, "csv": csv_url})
        sections.append({"slug": slug, "heading": heading, "parts": parts})
    return sections


def _shown(data, viewer):
    """A table as `viewer` may read it: without the answers they still grade blind for
    calibration (selectors.benchmark_table_shown), as the benchmark report does."""
    run = GradingRun(pk=data.grading_run_id, sampling_run_id=data.sampling_run_id)
    return lambda table: selectors.benchmark_table_shown(table=table, run=run, viewer=viewer)


def _context(request, study: Study, data, report, bootstrap) -> dict:
    return {
        "study": study,
        "report": report,
        "bootstrap": bootstrap,
        "sections": _sections(study, report, _shown(data, request.user)),
        "answers_url": reverse("grading:answers", args=[data.grading_run_id]),
    }


@researcher
@require_GET
def answer_study_report_page(request, study_id: int):
    study = _study(study_id)
    if not _drawn(study):
        return render(request, "analysis/answer_study_report.html", {"study": study})
    if request.htmx:  # the progress of the intervals, polled while they are computed
        fingerprint = answer_study_fingerprint(study=study)
        bootstrap = selectors.answer_study_bootstrap_current(study=study, fingerprint=fingerprint)
        context = {"study": study, "bootstrap": bootstrap}
        # The sections come along only with the poll that finds the intervals done.
        if bootstrap is not None and bootstrap.status == BootstrapStatus.DONE:
            _, data, report, bootstrap = _report(study_id)
            context = _context(request, study, data, report, bootstrap)
        return render(request, "analysis/answer_study_report.html#bootstrap", context)
    study, data, report, bootstrap = _report(study_id)
    context = _context(request, study, data, report, bootstrap) | {
        "brief": _brief(report),
        "method_departures": departures(report.tables[METHOD_TABLE]),
    }
    return render(request, "analysis/answer_study_report.html", context)


def _brief(report) -> list[dict]:
    """The "In brief" panel: who and what the report rests on, the top model by people's pair
    judgments and by the rubric, and rho between people's helpfulness and the rubric score
    per answer; each number read from the report's own tables."""
    counts = [
        ("people", "People", report.people),
        ("proxies", "Proxy participants", report.proxies),
        ("answers", "Answers rated", report.answers),
        ("pairs", "Pairs compared", report.pairs),
    ]
    brief = [{"key": key, "figure": figure, "shown": f"{n:,}"} for key, figure, n in counts]
    ranking = report.tables["ranking"]
    columns = {column.key: column for column in ranking.columns}
    for key, figure, rank, value in (
        ("pairs-top", "Top model by people's pair judgments", "rank", "beats"),
        ("rubric", "Top model by rubric score", "score_rank", "score"),
    ):
        top = [row for row in ranking.rows if row[rank] == 1]
        which = f"{columns[value].label}: {columns[value].format(top[0][value])}" if top else ""
        brief.append(
            {
                "key": key,
                "figure": figure,
                "names": [row["model"] for row in top],
                "shown": "Not yet measured",
                "which": which,
            }
        )
    rho = report.tables["helpfulness-rubric"]
    row = rho.rows[0]
    column = next(c for c in rho.columns if c.key == "rho")
    brief.append(
        {
            "key": "rho",
            "figure": "Rho, people's helpfulness against the rubric score",
            "shown": column.format(row["rho"]),
            "which": f"over {row['n']:,} answers",
        }
    )
    return brief


@researcher
@require_GET
def answer_study_table_csv(request, study_id: int, name: str):
    study, data, report, _bootstrap = _report(study_id)
    table = report.tables.get(name) or (
        report.figures[name].table if name in report.figures else None
    )
    if table is None:
        raise Http404("No such table.")
    table = _shown(data, request.user)(table)
    return table_csv_response(table, filename=f"answer-study-{study.pk}-{name}.csv")


@researcher
@require_GET
def answer_study_figure_svg(request, study_id: int, name: str):
    study = _study(study_id)
    if not _drawn(study):
        raise Http404("No answers have been drawn for this study yet.")
    fingerprint = answer_study_fingerprint(study=study)
    # A figure depends on the data alone (not on the intervals): drawn once per fingerprint.
    key = f"analysis:answer-study-svg:{study.pk}:{fingerprint}:{name}"
    svg = cache.get(key)
    if svg is None:
        from ..answer_study import answer_study_report

        data = selectors.answer_study_data_cached(study=study, fingerprint=fingerprint)
        figure = answer_study_report(data).figures.get(name)
        if figure is None:
            raise Http404("No such figure.")
        svg = figure.svg()
        cache.set(key, svg, DATA_SECONDS)
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    # Opened on its own, the SVG is a document: it may style itself and run nothing.
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return response


@researcher
@require_POST
def answer_study_bootstrap(request, study_id: int):
    study = _study(study_id)
    if not _drawn(study):
        raise Http404("No answers have been drawn for this study yet.")
    _bootstrap, started = services.answer_study_bootstrap_request(study=study, user=request.user)
    if started:
        messages.success(request, "Computing the confidence intervals: this page shows progress.")
    return redirect("analysis:answer_study_report", study.pk)
