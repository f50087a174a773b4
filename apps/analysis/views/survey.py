"""The survey report's pages (role_required(RESEARCHER), under /analysis/studies/<id>/):
the report, each of its tables as CSV, each plot as SVG with its data as CSV, the bootstrap
intervals asked for and followed (htmx), and the disagreement browser.

The study's data is read once per fingerprint and kept in the cache (a report and its
plots and downloads are several requests over the same rows); a change to the data changes
the fingerprint, and so what is read. The report's statistics (apps/analysis/survey.py:
numpy, pandas, scipy) are imported by the views that compute, not with this module, which
every web process imports through the URLconf.
"""

from django.contrib import messages
from django.core.cache import cache
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.roles import Role, role_required
from apps.surveys.models import Study

from .. import selectors, services
from ..benchmark_data import grading_runs_with_scores
from ..method import METHOD_TABLE, departures
from ..models import BootstrapStatus, SurveyBootstrap
from ..survey_data import SurveyData, studies_with_answers, survey_fingerprint
from ..tables import table_csv_response

researcher = role_required(Role.RESEARCHER)
DATA_SECONDS = 3600
DISAGREEMENTS_PER_PAGE = 10
STUDIES_PER_PAGE = 25


def _data(study: Study, fingerprint: str) -> SurveyData:
    return selectors.survey_data_cached(study=study, fingerprint=fingerprint)


def _bootstrap(study: Study, fingerprint: str) -> SurveyBootstrap | None:
    return selectors.survey_bootstrap_current(study=study, fingerprint=fingerprint)


def _report(study_id: int):
    study = get_object_or_404(Study, pk=study_id)
    data, report, bootstrap = selectors.survey_report_current(study=study)
    return study, data, report, bootstrap


@researcher
@require_GET
def report_index(request):
    """Every study, with what its survey report would rest on, newest first; and every
    grading run's benchmark report, with the answers it has scored."""
    studies = Paginator(studies_with_answers(), STUDIES_PER_PAGE).get_page(request.GET.get("page"))
    runs = Paginator(grading_runs_with_scores(), STUDIES_PER_PAGE).get_page(request.GET.get("runs"))
    return render(request, "analysis/index.html", {"page": studies, "runs": runs})


@researcher
@require_GET
def survey_report_page(request, study_id: int):
    if request.htmx:  # the progress of the intervals, polled while they are computed
        study = get_object_or_404(Study, pk=study_id)
        bootstrap = _bootstrap(study, survey_fingerprint(study=study))
        report = None  # the tables come along only with the poll that finds them done
        if bootstrap is not None and bootstrap.status == BootstrapStatus.DONE:
            _study, _, report, bootstrap = _report(study_id)
        return render(
            request,
            "analysis/survey_report.html#bootstrap",
            {"study": study, "bootstrap": bootstrap, "report": report},
        )
    study, _, report, bootstrap = _report(study_id)
    figures = report.figures
    context = {
        "study": study,
        "report": report,
        "bootstrap": bootstrap,
        "distributions": [figures[name] for name in report.distributions],
        "spread": [figures[name] for name in report.spread],
        "spread_extras": [figures[name] for name in report.spread_extras],
        "sd_method": report.methods["sd-cdf"],
        "demographics": report.tables["demographics"],
        "method_departures": departures(report.tables[METHOD_TABLE]),
    }
    return render(request, "analysis/survey_report.html", context)


@researcher
@require_GET
def survey_table_csv(request, study_id: int, name: str):
    study, _, report, _bootstrap = _report(study_id)
    table = report.tables.get(name) or (
        report.figures[name].table if name in report.figures else None
    )
    if table is None:
        raise Http404("No such table.")
    return table_csv_response(table, filename=f"study-{study.pk}-{name}.csv")


@researcher
@require_GET
def survey_figure_svg(request, study_id: int, name: str):
    study = get_object_or_404(Study, pk=study_id)
    fingerprint = survey_fingerprint(study=study)
    # A figure depends on the data alone (not on the intervals), and takes matplotlib a few
    # hundred milliseconds to draw: drawn once per fingerprint.
    key = f"analysis:svg:{study.pk}:{fingerprint}:{name}"
    svg = cache.get(key)
    if svg is None:
        from ..survey import survey_report

        figure = survey_report(_data(study, fingerprint)).figures.get(name)
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
def survey_bootstrap(request, study_id: int):
    study = get_object_or_404(Study, pk=study_id)
    _bootstrap, started = services.survey_bootstrap_request(study=study, user=request.user)
    if started:
        messages.success(request, "Computing the confidence intervals: this page shows progress.")
    return redirect("analysis:survey_report", study.pk)


@researcher
@require_GET
def survey_disagreements(request, study_id: int):
    from ..survey import disagreement_detail, disagreements

    study = get_object_or_404(Study, pk=study_id)
    data = _data(study, survey_fingerprint(study=study))
    page = Paginator(disagreements(data), DISAGREEMENTS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [(d, disagreement_detail(data, d.scenario)) for d in page]
    context = {
        "study": study,
        "page": page,
        "rows": rows,
        "proxies": data.proxies,
        "simulated": data.groups[0].simulated if data.groups else False,
    }
    return render(request, "analysis/survey_disagreements.html", context)
