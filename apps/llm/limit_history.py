"""An adaptive model's concurrency limit over a run (apps/llm/limits.py finds it,
apps.llm.models.LimitChange keeps its changes), beside the model's calls per second in the
run: what the run pages draw under their progress (templates/partials/run_progress.html).
Read in at most four queries whatever the run's size or its models' number, and scaled
here to the drawing, so that the template only prints it."""

import datetime as dt
import math
from dataclasses import dataclass
from typing import ClassVar

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    Max,
    Min,
    Q,
    QuerySet,
    Value,
    Window,
)
from django.db.models.functions import Cast, Extract, Floor, RowNumber

from .models import LimitChange, ModelConfig

# An adaptive model's limit and calls per second are drawn in buckets of BUCKET_SECONDS,
# widened (by whole multiples) so that a run of any length takes at most MAX_BUCKETS: what
# a poll reads and draws stays the same size however long the run goes on. The table under
# the drawing lists the last LIMIT_ROWS changes.
BUCKET_SECONDS = 5
MAX_BUCKETS = 240
LIMIT_ROWS = 50
# The drawing's viewBox, and the plot inside it: the margins hold the axes' labels.
CHART_WIDTH, CHART_HEIGHT = 600, 160
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 40, 556, 22, 134


@dataclass(frozen=True)
class ChartPoint:
    seconds: float  # since the run's launch
    value: float  # a limit (calls at once) or a rate (calls per second)


@dataclass(frozen=True)
class ChartLabel:
    x: float
    y: float
    text: str
    kind: str  # its CSS classes (static/css/assay.css, .limit-chart)


@dataclass(frozen=True)
class LimitHistory:
    """An adaptive model's concurrency limit over a run, from its launch to its last
    completion (now, while calls are in flight), beside the model's calls per second in the
    run; drawn by templates/partials/run_progress.html, which prints what is here."""

    floor: int
    ceiling: int
    current: int  # the limit at `ended_at`
    live: bool  # `ended_at` is now: calls are in flight, or none has finished yet
    started_at: dt.datetime
    ended_at: dt.datetime
    bucket_seconds: int
    cuts: int
    changes_total: int
    changes: list[LimitChange]  # the last LIMIT_ROWS, oldest first
    steps: list[ChartPoint]  # the corners of the limit's step line
    throughput: list[ChartPoint]  # calls per second, at the middle of each bucket
    limit_path: str  # an SVG path's `d`
    rate_points: str  # an SVG polyline's `points`
    labels: list[ChartLabel]
    floor_path: str
    view_box: ClassVar[str] = f"0 0 {CHART_WIDTH} {CHART_HEIGHT}"
    axes_path: ClassVar[str] = (
        f"M{PLOT_LEFT} {PLOT_TOP}V{PLOT_BOTTOM}H{PLOT_RIGHT}M{PLOT_RIGHT} {PLOT_TOP}V{PLOT_BOTTOM}"
    )
    # The legend's samples of the two lines, before and after their names at the top.
    limit_key_path: ClassVar[str] = "M0 8H16"
    rate_key_path: ClassVar[str] = f"M{CHART_WIDTH - 16} 8H{CHART_WIDTH}"


class _First(Func):
    """The first element of an array (an ordered ARRAY_AGG: the first or last of a group)."""

    template = "(%(expressions)s)[1]"
    output_field = IntegerField()


def _bucket(name: str, *, start: dt.datetime, width: int):
    """Which bucket of `width` seconds from `start` the time in field `name` falls in."""
    since = ExpressionWrapper(F(name) - Value(start), output_field=DurationField())
    return Cast(Floor(Extract(since, "epoch") / width), IntegerField())


def limit_histories(
    rows: QuerySet,
    *,
    model_field: str,
    models: list[ModelConfig],
    start: dt.datetime,
    end: dt.datetime,
    live: bool,
) -> dict[int, LimitHistory]:
    """The limit history of each of `models` (which adapt their concurrency) between
    `start` and `end`, beside its calls per second among `rows` (`model_field` names their
    model id), by model id. At most four queries, whatever the run's size or its models'
    number: the limits' changes and the completions counted by bucket, the last changes
    listed, and the limit before `start` for a model whose limit did not change since."""
    if not models:
        return {}
    ids = [m.pk for m in models]
    span = max((end - start).total_seconds(), 1.0)
    width = BUCKET_SECONDS * max(1, math.ceil(span / (BUCKET_SECONDS * MAX_BUCKETS)))
    buckets = max(1, math.ceil(span / width))
    done = {model_id: [0] * buckets for model_id in ids}
    for row in (
        rows.filter(**{f"{model_field}__in": ids}, completed_at__gte=start, completed_at__lte=end)
        .annotate(bucket=_bucket("completed_at", start=start, width=width))
        .values(model_field, "bucket")
        .order_by()
        .annotate(n=Count("pk"))
    ):
        done[row[model_field]][min(row["bucket"], buckets - 1)] += row["n"]
    changes = LimitChange.objects.filter(model_id__in=ids, at__gte=start, at__lte=end)
    stepped: dict[int, list[dict]] = {model_id: [] for model_id in ids}
    for row in (
        changes.annotate(bucket=_bucket("at", start=start, width=width))
        .values("model_id", "bucket")
        .order_by("model_id", "bucket")
        .annotate(
            n=Count("pk"),
            cuts=Count("pk", filter=Q(why=LimitChange.Why.CUT)),
            low=Min("new"),
            high=Max("new"),
            before=_First(ArrayAgg("old", order_by=("at", "pk"))),
            after=_First(ArrayAgg("new", order_by=("-at", "-pk"))),
        )
    ):
        stepped[row["model_id"]].append(row)
    unchanged = [model_id for model_id in ids if not stepped[model_id]]
    before = dict(
        LimitChange.objects.filter(model_id__in=unchanged, at__lt=start)
        .order_by("model_id", "-at", "-pk")
        .distinct("model_id")
        .values_list("model_id", "new")
        if unchanged
        else ()
    )
    listed: dict[int, list[LimitChange]] = {model_id: [] for model_id in ids}
    if len(unchanged) < len(ids):
        latest = (
            changes.order_by()  # sorted here: the model's ordering would join its table
            .annotate(
                rank=Window(
                    RowNumber(),
                    partition_by=F("model_id"),
                    order_by=(F("at").desc(), F("pk").desc()),
                )
            )
            .filter(rank__lte=LIMIT_ROWS)
        )
        for change in sorted(latest, key=lambda c: (c.at, c.pk)):
            listed[change.model_id].append(change)
    return {
        model.pk: _history(
            model,
            buckets=stepped[model.pk],
            done=done[model.pk],
            listed=listed[model.pk],
            before=before.get(model.pk),
            start=start,
            end=end,
            span=span,
            width=width,
            live=live,
        )
        for model in models
    }


def _history(
    model: ModelConfig,
    *,
    buckets: list[dict],
    done: list[int],
    listed: list[LimitChange],
    before: int | None,
    start: dt.datetime,
    end: dt.datetime,
    span: float,
    width: int,
    live: bool,
) -> LimitHistory:
    """One model's history, scaled to the drawing: see `limit_histories`."""
    floor = model.concurrency_floor  # where a model with no change yet stands
    level = buckets[0]["before"] if buckets else floor if before is None else before
    steps = [ChartPoint(0.0, level)]
    for row in buckets:
        at = min(row["bucket"] * width, span)
        corners = [row["before"]]
        # Within a bucket the line runs from the limit before it to the limit after it, and
        # as far beyond either as the limit went in between.
        if row["low"] < min(row["before"], row["after"]):
            corners.append(row["low"])
        if row["high"] > max(row["before"], row["after"]):
            corners.append(row["high"])
        corners.append(row["after"])
        for value in corners:
            if steps[-1] != ChartPoint(at, value):
                steps.append(ChartPoint(at, value))
        level = row["after"]
    steps.append(ChartPoint(span, level))
    # A last bucket cut short by `end` is counted with the one before it: over a moment, one
    # call would make a spike (and every poll would move the axis's top).
    spans = [[i * width, (i + 1) * width, n] for i, n in enumerate(done)]
    spans[-1][1] = span
    if len(spans) > 1 and span - spans[-1][0] < width:
        _, _, n = spans.pop()
        spans[-1][1:] = [span, spans[-1][2] + n]
    throughput = [ChartPoint((a + b) / 2, n / (b - a)) for a, b, n in spans]
    if len(throughput) == 1:
        only = throughput[0].value
        throughput = [ChartPoint(0.0, only), ChartPoint(span, only)]
    limit_top = max([model.max_concurrent, *(p.value for p in steps)])
    rate_top = _nice(max(p.value for p in throughput))

    def x(seconds: float) -> str:
        return _coordinate(PLOT_LEFT + seconds / span * (PLOT_RIGHT - PLOT_LEFT))

    def y(value: float, top: float) -> str:
        return _coordinate(PLOT_BOTTOM - value / top * (PLOT_BOTTOM - PLOT_TOP))

    path, previous = f"M{x(0)} {y(steps[0].value, limit_top)}", steps[0]
    for point in steps[1:]:
        if point.seconds != previous.seconds:
            path += f"H{x(point.seconds)}"
        if point.value != previous.value:
            path += f"V{y(point.value, limit_top)}"
        previous = point
    return LimitHistory(
        floor=floor,
        ceiling=model.max_concurrent,
        current=level,
        live=live,
        started_at=start,
        ended_at=end,
        bucket_seconds=width,
        cuts=sum(row["cuts"] for row in buckets),
        changes_total=sum(row["n"] for row in buckets),
        changes=listed,
        steps=steps,
        throughput=throughput,
        limit_path=path,
        rate_points=" ".join(f"{x(p.seconds)},{y(p.value, rate_top)}" for p in throughput),
        floor_path=f"M{PLOT_LEFT} {y(floor, limit_top)}H{PLOT_RIGHT}",
        labels=_labels(limit_top=limit_top, rate_top=rate_top, span=span),
    )


def _labels(*, limit_top: int, rate_top: float, span: float) -> list[ChartLabel]:
    """The axes' labels and the legend's names: the limit on the left, the rate on the
    right, the time since launch beneath."""
    below = PLOT_BOTTOM + 16
    return [
        ChartLabel(20, 12, "limit (calls at once)", "chart-key limit"),
        ChartLabel(CHART_WIDTH - 20, 12, "calls per second", "chart-key rate end"),
        ChartLabel(PLOT_LEFT - 4, PLOT_TOP + 4, str(limit_top), "end"),
        ChartLabel(PLOT_LEFT - 4, PLOT_BOTTOM + 4, "0", "end"),
        ChartLabel(PLOT_RIGHT + 4, PLOT_TOP + 4, f"{rate_top:g}/s", ""),
        ChartLabel(PLOT_RIGHT + 4, PLOT_BOTTOM + 4, "0/s", ""),
        ChartLabel(PLOT_LEFT, below, "launch", ""),
        ChartLabel((PLOT_LEFT + PLOT_RIGHT) // 2, below, "time since launch", "middle"),
        ChartLabel(PLOT_RIGHT, below, _duration(span), "end"),
    ]


def _nice(value: float) -> float:
    """The least of 1, 2, 2.5 and 5 times a power of ten that is at least `value` (1 for
    nothing): the top of an axis."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(s * power for s in (1, 2, 2.5, 5, 10) if value <= s * power * (1 + 1e-9))


def _coordinate(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
