import datetime as dt

from django.shortcuts import render
from django.utils import timezone

from apps.accounts.roles import Role, role_required

from . import selectors

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
