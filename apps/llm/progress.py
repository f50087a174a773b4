"""Where a bulk run stands, counted from the rows that stand for its calls (apps/llm/engine.py):
what every run page (sampling runs, proxy runs) shows and polls. Counted in two aggregate
queries whatever the run's size, never from counters, and for the models that find their
concurrency by themselves (apps/llm/limits.py), their limit's history beside their calls per
second (apps/llm/limit_history.py), in at most four more. And the urls those pages' progress
and controls partials (templates/partials/run_progress.html, run_controls.html) poll and post
to."""

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import (
    Avg,
    Count,
    DecimalField,
    Max,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.functions import Coalesce
from django.urls import path, reverse
from django.utils import timezone

from .leases import LeaseStates
from .limit_history import LimitHistory, limit_histories
from .models import CallStatus, ModelConfig

RATE_WINDOW_SECONDS = 60
GAVE_UP_LABEL = "The worker stopped repeatedly"
# The `error_kind` a retry form sends for rows a worker gave up on (stored as ""): what the
# runs' retry services take for them.
GAVE_UP_KEY = "worker"
# What a run page's controls and progress post to, each a route of its own.
RUN_MOVES = ("launch", "pause", "resume", "cancel", "budget", "retry")


@dataclass(frozen=True)
class RunCounts:
    total: int = 0
    done: int = 0
    failed: int = 0
    pending: int = 0
    running: int = 0
    cost_usd: Decimal = Decimal(0)

    @property
    def finished(self) -> int:
        return self.done + self.failed

    @property
    def percent(self) -> float:
        return 100 * self.finished / self.total if self.total else 0.0


@dataclass(frozen=True)
class ModelProgress:
    model: ModelConfig
    counts: RunCounts
    mean_latency_ms: float | None
    # None: the model keeps to a fixed concurrency, or the run has not been launched.
    limits: LimitHistory | None = None


@dataclass(frozen=True)
class ErrorKind:
    key: str  # what the retry form sends
    label: str
    count: int


@dataclass(frozen=True)
class RunProgress:
    counts: RunCounts
    calls_per_second: float
    eta_seconds: float | None  # None: nothing is being answered to measure by
    errors: list[ErrorKind] = field(default_factory=list)
    models: list[ModelProgress] = field(default_factory=list)
    measured_at: dt.datetime | None = None

    @property
    def eta_at(self) -> dt.datetime | None:
        if self.eta_seconds is None or self.measured_at is None:
            return None
        return self.measured_at + dt.timedelta(seconds=self.eta_seconds)


def counted(states: LeaseStates, done: str, **extra) -> dict:
    """The aggregates of `RunCounts` over rows with these states."""
    return {
        "total": Count("pk"),
        "done": Count("pk", filter=Q(status=done)),
        "failed": Count("pk", filter=Q(status=states.failed)),
        "pending": Count("pk", filter=Q(status=states.waiting)),
        "running": Count("pk", filter=Q(status=states.running)),
        "cost_usd": Coalesce(Sum("cost_usd"), Decimal(0), output_field=DecimalField()),
        **extra,
    }


def rows_progress(
    rows: QuerySet,
    *,
    states: LeaseStates,
    done: str,
    model_field: str,
    launched_at: dt.datetime | None,
    now: dt.datetime | None = None,
) -> RunProgress:
    """A run's progress from its rows: counts and cost by model (`model_field` names the
    rows' model id), calls per second over the last minute, time left, errors by kind, and
    each adaptive model's limit history since the launch (none before it)."""
    now = now or timezone.now()
    since = now - dt.timedelta(seconds=RATE_WINDOW_SECONDS)
    grouped = list(
        rows.values(model_field)
        .order_by()
        .annotate(
            **counted(
                states,
                done,
                recent=Count("pk", filter=Q(completed_at__gte=since)),
                latency=Avg("latency_ms", filter=Q(status=done)),
                last=Max("completed_at"),
            )
        )
    )
    models = ModelConfig.objects.in_bulk([row[model_field] for row in grouped])
    histories = {}
    if launched_at is not None:
        last = max((row["last"] for row in grouped if row["last"]), default=None)
        # Drawn up to now while calls are in flight (or before any has finished), else up
        # to the last one: a paused, cancelled or finished run's drawing stands still.
        live = last is None or any(row["running"] for row in grouped)
        histories = limit_histories(
            rows,
            model_field=model_field,
            models=[m for m in models.values() if m.adapts_concurrency],
            start=launched_at,
            end=max(launched_at, now if live else last),
            live=live,
        )
    per_model, recent = [], 0
    for row in grouped:
        recent += row.pop("recent")
        latency = row.pop("latency")
        del row["last"]
        model = models[row.pop(model_field)]
        per_model.append(
            ModelProgress(
                model=model,
                counts=RunCounts(**row),
                mean_latency_ms=latency,
                limits=histories.get(model.pk),
            )
        )
    per_model.sort(key=lambda m: m.model.display_name)
    counts = RunCounts(
        **{
            name: sum((getattr(m.counts, name) for m in per_model), start)
            for name, start in (
                ("total", 0),
                ("done", 0),
                ("failed", 0),
                ("pending", 0),
                ("running", 0),
                ("cost_usd", Decimal(0)),
            )
        }
    )
    # Over the last minute, or since launch when the run is younger than that.
    window = RATE_WINDOW_SECONDS
    if launched_at is not None:
        window = max(1.0, min(window, (now - launched_at).total_seconds()))
    rate = recent / window
    left = counts.pending + counts.running
    eta = left / rate if rate and left else None
    return RunProgress(
        counts=counts,
        calls_per_second=rate,
        eta_seconds=eta,
        errors=rows_errors(rows, failed=states.failed),
        models=per_model,
        measured_at=now,
    )


def rows_errors(rows: QuerySet, *, failed: str) -> list[ErrorKind]:
    """Failed rows by kind of error, most first."""
    grouped = rows.filter(status=failed).values("error_kind").order_by().annotate(n=Count("pk"))
    labels = dict(CallStatus.choices)
    errors = [
        ErrorKind(
            key=row["error_kind"] or GAVE_UP_KEY,
            label=labels.get(row["error_kind"], row["error_kind"])
            if row["error_kind"]
            else GAVE_UP_LABEL,
            count=row["n"],
        )
        for row in grouped
    ]
    return sorted(errors, key=lambda e: (-e.count, e.label))


def run_paths(prefix: str, view, *, name: str, moves=RUN_MOVES) -> list:
    """The routes of a run page's moves, for a urlconf: `prefix` + each of `moves` + "/" to
    `view` (which takes the move as `move`), named `name` with the move in place of
    `{move}`; `run_urls` reverses them."""
    return [
        path(f"{prefix}{move}/", view, {"move": move}, name=name.format(move=move))
        for move in moves
    ]


def run_urls(route: str, *args, moves=RUN_MOVES, **more: str) -> dict[str, str]:
    """The urls of a run's progress and controls partials: each of `moves` reversed from
    `route` with the move in place of `{move}` ("runs:{move}") and `args`, and `more` as given
    (`poll`: the page the progress polls; `failed`: where the failed rows are read). The
    partials offer no move whose url is missing."""
    return {move: reverse(route.format(move=move), args=args) for move in moves} | more
