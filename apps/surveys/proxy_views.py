"""The researcher's proxy-run pages (role_required(RESEARCHER), under /studies/<id>/proxies/):
a study's proxy runs and the forms for a new run or sweep, and a run's page (the estimate
before launch, live progress after, polled by htmx).

Every action is a POST through one service; one that makes a run take calls again (launch,
resume, retry) starts its work itself (apps/llm/runs.py).
"""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.roles import Role, role_required
from apps.llm.errors import PromptError
from apps.llm.forms import BudgetForm
from apps.llm.models import RunStatus
from apps.llm.progress import run_urls
from apps.llm.selectors import RunBatches, run_batches
from apps.llm.views import run_control

from . import selectors, services
from .errors import SurveyError
from .forms import ProxyRunForm, ProxySweepForm
from .models import ProxyRun, Study

researcher = role_required(Role.RESEARCHER)


def _run(study_id: int, run_id: int) -> ProxyRun:
    runs = ProxyRun.objects.select_related("study", "prompt")
    return get_object_or_404(runs, pk=run_id, study_id=study_id)


def _run_form(study: Study, data=None) -> ProxyRunForm:
    try:
        prompt = selectors.proxy_prompt_default(kind=study.kind)
    except PromptError:
        prompt = None  # the service says so when the form is sent
    return ProxyRunForm(data, initial={"prompt": prompt})


def _runs_page(request, study: Study, *, form, sweep_form, status: int = 200):
    runs = selectors.proxy_runs_overview(study=study)
    polling = any(run.status == RunStatus.RUNNING for run, _counts in runs)
    context = {
        "study": study,
        "form": form,
        "sweep_form": sweep_form,
        "runs": runs,
        "polling": polling,
    }
    if request.htmx and request.method == "GET":  # the poll: the table of runs alone
        return render(request, "surveys/proxy_runs.html#runs", context)
    return render(request, "surveys/proxy_runs.html", context, status=status)


@researcher
def proxy_runs(request, study_id: int):
    """The study's proxy runs, and the forms that make a draft run or sweep; with
    HX-Request, the table of runs alone, which the page polls while one of them runs."""
    study = get_object_or_404(Study, pk=study_id)
    form = _run_form(study, request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                run = services.proxy_run_create(
                    study=study,
                    models=data["models"],
                    runs_per_model=data["runs_per_model"],
                    temperature=data["temperature"],
                    budget_usd=data["budget_usd"],
                    seed=data["seed"],
                    user=request.user,
                    prompt=data["prompt"],
                    **form.batch_arguments(),
                )
            except SurveyError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Draft saved. Check the estimate, then launch it.")
                return redirect("surveys:proxy_run", study.pk, run.pk)
        status = 400
    return _runs_page(request, study, form=form, sweep_form=ProxySweepForm(), status=status)


@researcher
@require_POST
def proxy_sweep_create(request, study_id: int):
    """The sweep form of the proxy runs page: a draft sweep, or the page with its errors."""
    study = get_object_or_404(Study, pk=study_id)
    sweep_form = ProxySweepForm(request.POST)
    if sweep_form.is_valid():
        data = sweep_form.cleaned_data
        try:
            run = services.proxy_sweep_create(
                study=study,
                model=data["model"],
                temperatures=data["temperatures"],
                personas=data["personas"],
                runs_per_variant=data["runs_per_variant"],
                budget_usd=data["budget_usd"],
                user=request.user,
            )
        except SurveyError as exc:
            sweep_form.add_error(None, str(exc))
        else:
            messages.success(request, "Draft sweep saved. Check the estimate, then launch it.")
            return redirect("surveys:proxy_run", study.pk, run.pk)
    return _runs_page(request, study, form=_run_form(study), sweep_form=sweep_form, status=400)


@researcher
@require_GET
def proxy_run(request, study_id: int, run_id: int):
    run = _run(study_id, run_id)
    if request.htmx:  # the poll: the status badge in the heading comes along, out of band
        progress = selectors.proxy_run_progress(run=run)
        context = _controls_context(run) | {
            "progress": progress,
            "batches": _batches(run),
            "oob": True,
        }
        return render(request, "surveys/proxy_run.html#progress", context)
    models = list(run.model_configs.order_by("display_name"))
    context = _controls_context(run) | {
        "study": run.study,
        "models": models,
        "units": selectors.study_units_by_kind(study=run.study),
        "items": services.proxy_items(study=run.study),
        "notes": selectors.proxy_run_fidelity_notes(run=run, models=models),
        "variants": selectors.proxy_sweep_variants(run=run) if run.is_sweep else [],
    }
    if run.status == RunStatus.DRAFT:
        # A sweep's one model has as many proxies as its variants' runs and personas.
        proxies = run.participants.count() if run.is_sweep else run.runs_per_model
        context["estimate"] = services.proxy_estimate(
            study=run.study, models=models, runs_per_model=proxies, prompt=run.prompt
        )
    else:
        context["progress"] = selectors.proxy_run_progress(run=run)
        context["batches"] = _batches(run)
    return render(request, "surveys/proxy_run.html", context)


def _batches(run: ProxyRun) -> RunBatches | None:
    """A run in batch mode: its provider batches, shown with its progress."""
    return run_batches(work=services.PROXY_WORK.name, scope=run.pk) if run.batch_mode else None


def _controls_context(run: ProxyRun) -> dict:
    """What the run's progress and controls partials read but the progress."""
    args = [run.study_id, run.pk]
    urls = run_urls("surveys:proxy_run_{move}", *args, poll=reverse("surveys:proxy_run", args=args))
    budget_form = BudgetForm(initial={"budget_usd": run.budget_usd})
    return {"run": run, "urls": urls, "budget_form": budget_form}


@researcher
@require_POST
def proxy_run_move(request, study_id: int, run_id: int, move: str):
    """A move from the run page's controls or its progress (a retry of failed calls)."""
    run = _run(study_id, run_id)
    back = reverse("surveys:proxy_run", args=[study_id, run.pk])
    controls = services.PROXY_RUN_CONTROLS
    rows = ("call", "calls")
    return run_control(
        request, run=run, move=move, controls=controls, error=SurveyError, rows=rows, back=back
    )
