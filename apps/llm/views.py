import datetime as dt
from collections.abc import Callable, Mapping

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from apps.accounts.roles import Role, role_required

from . import selectors
from .forms import BudgetForm
from .models import Run, RunStatus

PERIODS = {
    "day": dt.timedelta(days=1),
    "week": dt.timedelta(days=7),
    "month": dt.timedelta(days=30),
    "all": None,
}


@role_required(Role.RESEARCHER)
def usage(request):
    period = request.GET.get("period", "all")
    span = PERIODS.get(period)
    until = timezone.now()
    since = until - span if span else None
    rows = selectors.usage_totals(since=since)
    totals = {
        key: sum((row[key] or 0) for row in rows)
        for key in (
            "attempts",
            "ok",
            "retries",
            "failed",
            "input_tokens",
            "output_tokens",
            "cost",
        )
    }
    return render(
        request,
        "llm/usage.html",
        {
            "rows": rows,
            "totals": totals,
            "period": period if span or period == "all" else "all",
            "periods": list(PERIODS),
            "since": since,
            "until": until,
        },
    )


# What a run page says once a move is made; {rows} is what the run's rows are called.
MOVE_DONE = {
    "launch": "Launched: the workers have started on it.",
    "pause": "Paused: no new calls are made; the calls in flight finish and are kept.",
    "resume": "Resumed: only the {rows} not yet done are asked for.",
    "cancel": "Cancelled: nothing more is called; the {rows} already made are kept.",
}


def run_control(
    request,
    *,
    run: Run,
    move: str,
    controls: Mapping[str, Callable],
    error: type[Exception],
    rows: tuple[str, str],
    back: str,
) -> HttpResponse:
    """What every kind of run's page posts from its controls and progress partials
    (templates/partials/run_controls.html, run_progress.html): `move` (launch, pause,
    resume, cancel, budget, retry) made by the run's own service in `controls`, whose
    `error` is shown as it is; then back to `back` with what happened. `rows` names one of
    the run's rows and several ("answer", "answers"). The caller has checked who may."""
    service = controls.get(move)
    if service is None:
        raise Http404("No such move.")
    try:
        if move == "budget":
            form = BudgetForm(request.POST)
            if not form.is_valid():
                messages.error(request, "Budget: " + " ".join(form.errors["budget_usd"]))
                return redirect(back)
            run = service(run=run, budget_usd=form.cleaned_data["budget_usd"])
            budget = f"${run.budget_usd:,.2f}" if run.budget_usd is not None else "none"
            after = " Resume the run to go on." if run.status == RunStatus.BUDGET_REACHED else ""
            done = f"Budget: {budget}.{after}"
        elif move == "retry":
            count = service(run=run, error_kind=request.POST.get("error_kind", ""))
            run.refresh_from_db(fields=["status"])
            waiting = ""
            if run.status != RunStatus.RUNNING:
                waiting = " They are asked for when you resume."
            done = f"{count:,} failed {rows[count != 1]} to ask again.{waiting}"
        else:
            service(run=run)
            done = MOVE_DONE[move].format(rows=rows[1])
    except error as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect(back)
