"""The researcher's sampling-run pages (role_required(RESEARCHER), under /runs/): the list,
a new run, a run's page (the estimate before launch, live progress after), its responses
and their CSV.

Every action is a POST through one service; one that makes a run take calls again (launch,
resume, retry) starts its work itself (apps/llm/runs.py).
"""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.roles import Role, role_required
from apps.console.csv_export import copy_csv_response
from apps.llm.forms import BudgetForm
from apps.llm.models import RunStatus
from apps.llm.progress import run_urls
from apps.llm.selectors import RunBatches, run_batches
from apps.llm.views import run_control

from . import selectors, services
from .errors import RunError
from .forms import ResponseFilterForm, RunForm, SelectionForm, data_as_initial
from .models import RunKind, SamplingRun

researcher = role_required(Role.RESEARCHER)
RUNS_PER_PAGE = 25
RESPONSES_PER_PAGE = 50


def _run(run_id: int) -> SamplingRun:
    # The reference run is the rubric editor's store of answers, not a researcher's run.
    runs = SamplingRun.objects.filter(kind=RunKind.BENCHMARK).select_related("prompt")
    return get_object_or_404(runs, pk=run_id)


@researcher
@require_GET
def run_list(request):
    page = Paginator(selectors.sampling_runs(), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    counts = selectors.runs_counts(run_ids=[run.pk for run in page])
    rows = [(run, counts.get(run.pk, selectors.RunCounts())) for run in page]
    return render(request, "runs/list.html", {"page": page, "rows": rows})


@researcher
def run_new(request):
    """The form; a POST with action=count only counts the questions the filters select
    (htmx on every change, or the "Count" button without JavaScript)."""
    status, data = 200, request.POST if request.method == "POST" else None
    if data is not None and data.get("action") == "count":
        form = RunForm(initial=data_as_initial(RunForm, data))
        if request.htmx:
            return render(request, "runs/new.html#selected-count", _count_context(data))
    elif data is not None:
        form = RunForm(data)
        if form.is_valid():
            try:
                run = _create(request, form)
            except RunError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Draft saved. Check the estimate, then launch it.")
                return redirect("runs:detail", run.pk)
        status = 400
    else:
        form = RunForm()
    context = {"form": form, **_count_context(data or _initial_data(form))}
    return render(request, "runs/new.html", context, status=status)


def _initial_data(form: RunForm) -> dict:
    return {"conditions": form.fields["conditions"].initial or []}


def _count_context(data) -> dict:
    selection = SelectionForm(data)
    count = selection.questions().count() if selection.is_valid() else None
    return {"selected_count": count}


def _create(request, form: RunForm) -> SamplingRun:
    data = form.cleaned_data
    return services.sampling_run_create(
        name=data["name"],
        questions=form.questions(),
        models=data["models"],
        samples_per_item=data["samples_per_item"],
        prompt=data["prompt"],
        params=data["params"],
        budget_usd=data["budget_usd"],
        seed=data["seed"],
        selection=form.selection(),
        user=request.user,
        **form.batch_arguments(),
    )


@researcher
@require_GET
def run_detail(request, run_id: int):
    """The run's settings and, before launch, its estimate; after, its progress, which the
    page polls (the `progress` partial alone, for an htmx request) while the run runs."""
    run = _run(run_id)
    if request.htmx:  # the poll: the status badge in the heading comes along, out of band
        progress = selectors.run_progress(run=run)
        context = _controls_context(run) | {
            "progress": progress,
            "batches": _batches(run),
            "oob": True,
        }
        return render(request, "runs/detail.html#progress", context)
    models = list(run.model_configs.order_by("display_name"))
    context = _controls_context(run) | {
        "models": models,
        "questions_count": run.questions.count(),
        "selection": selectors.selection_described(selection=run.selection),
        "notes": selectors.run_fidelity_notes(run=run),
    }
    if run.status == RunStatus.DRAFT:
        context["estimate"] = services.sampling_estimate(
            questions=run.questions.only("pk"),
            models=models,
            samples_per_item=run.samples_per_item,
            prompt=run.prompt,
        )
    else:
        context["progress"] = selectors.run_progress(run=run)
        context["batches"] = _batches(run)
    return render(request, "runs/detail.html", context)


def _batches(run: SamplingRun) -> RunBatches | None:
    """A run in batch mode: its provider batches, shown with its progress."""
    return run_batches(work=services.SAMPLE_WORK.name, scope=run.pk) if run.batch_mode else None


def _controls_context(run: SamplingRun) -> dict:
    """What the run's progress and controls partials read but the progress; cancelling asks
    first (`run_cancel`)."""
    urls = run_urls(
        "runs:{move}",
        run.pk,
        poll=reverse("runs:detail", args=[run.pk]),
        failed=reverse("runs:responses", args=[run.pk]) + "?status=failed",
    )
    budget_form = BudgetForm(initial={"budget_usd": run.budget_usd})
    return {"run": run, "urls": urls, "budget_form": budget_form, "confirm_cancel": True}


@researcher
@require_POST
def run_move(request, run_id: int, move: str):
    """A move from the run page's controls; cancelling asks first."""
    run = _run(run_id)
    back = reverse("runs:detail", args=[run.pk])
    if move == "cancel" and request.POST.get("confirmed") != "yes":
        return render(request, "runs/cancel_confirm.html", {"run": run, "back": back})
    controls = services.SAMPLING_RUN_CONTROLS
    rows = ("answer", "answers")
    return run_control(
        request, run=run, move=move, controls=controls, error=RunError, rows=rows, back=back
    )


@researcher
@require_GET
def run_responses(request, run_id: int):
    run = _run(run_id)
    form = ResponseFilterForm(request.GET or None, run=run)
    filters = form.cleaned_data if form.is_valid() else {}
    responses = selectors.run_responses(
        run=run,
        model_id=getattr(filters.get("model"), "pk", None),
        status=filters.get("status", ""),
        question=filters.get("question", ""),
    )
    page = Paginator(responses, RESPONSES_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {"run": run, "form": form, "page": page, "query": query.urlencode()}
    template = "runs/responses.html#table" if request.htmx else "runs/responses.html"
    return render(request, template, context)


@researcher
@require_GET
def export_responses(request, run_id: int):
    run = _run(run_id)
    rows = selectors.responses_export(responses=run.responses.all())
    return copy_csv_response(
        rows, columns=selectors.RESPONSE_EXPORT_COLUMNS, filename=f"run-{run.pk}-responses.csv"
    )
