"""Grading runs' pages: the list, the form, a run's page (estimate and launch for a draft;
live progress, controls and scores after), its judgments, and its CSV exports."""

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from apps.accounts.roles import Role, role_required
from apps.console.csv_export import copy_csv_response, csv_rows
from apps.llm.forms import BudgetForm
from apps.llm.models import RunStatus
from apps.llm.progress import run_urls
from apps.llm.selectors import run_batches
from apps.llm.views import run_control
from apps.questions.models import Question
from apps.rubrics.models import Kind, Polarity
from apps.runs.models import Response

from .. import services
from ..errors import GradingError
from ..forms import GradingRunForm, JudgmentFilterForm
from ..models import CallState, GradingRun
from ..selectors import runs as selectors
from ..selectors.archive import run_archive
from ..selectors.calibration import rater_withheld

PAGE_SIZE = 50


def _run(pk: int) -> GradingRun:
    return get_object_or_404(
        GradingRun.objects.select_related("sampling_run", "grader", "prompt", "created_by"), pk=pk
    )


@role_required(Role.RESEARCHER)
def run_list(request):
    page = Paginator(selectors.grading_runs_list(), PAGE_SIZE).get_page(request.GET.get("page"))
    progress = selectors.runs_progress(runs=page.object_list)
    rows = [(run, progress.get(run.pk)) for run in page.object_list]
    return render(request, "grading/list.html", {"page": page, "rows": rows})


@role_required(Role.RESEARCHER)
def run_new(request):
    initial = {"sampling_run": request.GET.get("sampling_run")}
    form = GradingRunForm(request.POST or None, initial=initial)
    notes = []
    if request.method == "POST" and form.is_valid():
        arguments = form.service_arguments()
        notes = selectors.fidelity_notes(
            temperature=form.cleaned_data["temperature"], prompt=arguments["prompt"]
        )
        try:
            run = services.grading_run_create(**arguments, user=request.user)
            return redirect("grading:run_detail", pk=run.pk)
        except GradingError as exc:
            form.add_error(None, str(exc))
    status = 422 if request.method == "POST" else 200
    return render(request, "grading/run_new.html", {"form": form, "notes": notes}, status=status)


@role_required(Role.RESEARCHER)
def run_detail(request, pk: int):
    run = _run(pk)
    urls = run_urls("grading:run_{move}", run.pk, poll=reverse("grading:run_detail", args=[run.pk]))
    context = {
        "run": run,
        "progress": selectors.grading_progress(run=run),
        "batches": run_batches(work=services.work_for_run(run).name, scope=run.pk)
        if run.batch_mode
        else None,
        "urls": urls,
        "budget_form": BudgetForm(initial={"budget_usd": run.budget_usd}),
    }
    if request.htmx:  # the progress poll: only its partial, the heading's badge out of band
        context["oob"] = True
        response = render(request, "grading/run_detail.html#progress", context)
        if run.status != RunStatus.RUNNING:
            # The run stopped: reload the page once, so that its scores are the final ones.
            response["HX-Refresh"] = "true"
        return response
    by_model = selectors.scores_by_model(run=run)
    context |= {
        "notes": selectors.run_fidelity_notes(run),
        "by_model": by_model,
        "totals": selectors.scores_totals(by_model),
        "scoring_rule": selectors.SCORING_RULE,
        "by_topic": selectors.scores_by_topic_model(run=run),
        "estimate": selectors.grading_estimate(run=run) if run.status == RunStatus.DRAFT else None,
    }
    return render(request, "grading/run_detail.html", context)


@role_required(Role.RESEARCHER)
@require_POST
def run_move(request, pk: int, move: str):
    """A move from the run page's controls or its progress (a retry of failed calls)."""
    run = _run(pk)
    back = reverse("grading:run_detail", args=[run.pk])
    if move == "retry":
        back += "#progress"
    controls = services.GRADING_RUN_CONTROLS
    rows = ("call", "calls")
    return run_control(
        request, run=run, move=move, controls=controls, error=GradingError, rows=rows, back=back
    )


@role_required(Role.RESEARCHER)
def judgments(request, pk: int):
    run = _run(pk)
    filters = JudgmentFilterForm(request.GET).filters()
    rows = selectors.judgments_list(run=run, filters=filters, viewer=request.user)
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    query = urlencode({k: v for k, v in filters.items() if v})
    # Reports link here for one question or one answer: the page names what it is narrowed to.
    question, answer = bool(filters["question"]), bool(filters["response"])
    context = {
        "run": run,
        "page": page,
        "filters": filters,
        "query": query,
        "withheld": rater_withheld(viewer=request.user, sampling_run_id=run.sampling_run_id),
        "statuses": CallState.choices,
        "kinds": Kind.choices,
        "polarities": Polarity.choices,
        "models": run.sampling_run.model_configs.all(),
        "question": Question.objects.filter(pk=filters["question"]).first() if question else None,
        "answer": Response.objects.select_related("model", "question")
        .filter(pk=filters["response"], run_id=run.sampling_run_id)
        .first()
        if answer
        else None,
    }
    return render(request, "grading/run_judgments.html", context)


def _csv(header, rows, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(csv_rows(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@role_required(Role.RESEARCHER)
def export_judgments(request, pk: int):
    run = _run(pk)
    return copy_csv_response(
        selectors.judgments_export(run=run, viewer=request.user),
        columns=selectors.JUDGMENT_EXPORT,
        filename=f"grading-{run.pk}-judgments.csv",
    )


@role_required(Role.RESEARCHER)
def export_scores(request, pk: int):
    run = _run(pk)
    header, rows = selectors.scores_export(run=run, viewer=request.user)
    return _csv(header, rows, f"grading-{run.pk}-scores.csv")


@role_required(Role.RESEARCHER)
def export_everything(request, pk: int):
    """responses.csv, judgments.csv, scores.csv and manifest.json in one ZIP, streamed."""
    run = _run(pk)
    archive = run_archive(
        run=run, made_at=timezone.now(), made_by=request.user.get_username(), viewer=request.user
    )
    response = StreamingHttpResponse(archive, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="grading-{run.pk}-everything.zip"'
    return response
