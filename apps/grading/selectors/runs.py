"""Reads for the grading-run pages, exports and commands: progress counted from the rows
(never from Redis or chords), the estimate before launch, scores by model and topic with
what is missing and why, the judgments' long list."""

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import (
    Avg,
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    FilteredRelation,
    IntegerField,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Length
from django.utils import timezone

from apps.llm import costs
from apps.llm.limit_history import limit_histories
from apps.llm.models import ModelConfig, PromptTemplate, RunStatus
from apps.llm.progress import ModelProgress, RunCounts
from apps.rubrics.models import Criterion, Rubric, RubricState
from apps.runs.models import Response, ResponseStatus, SamplingRun

from ..models import CallState, ChecklistCall, GradingMode, GradingRun, Judgment
from .calibration import blind_to_rater, rater_rows_shown

RATE_WINDOW_SECONDS = 60
# What the published auto-rater did (docs/architecture.md, "Fidelity to the published designs").
PUBLISHED_TEMPERATURE = 0
# Checklist prompts list every criterion: about this many characters each, as the engine's
# own reservation reckons (apps/grading/services/work.py).
CHECKLIST_CHARS_PER_CRITERION = 300
SCORING_RULE = (
    "Score = earned points / all points of the rubric version graded; a positive criterion "
    "earns its points when met, a negative criterion earns its points when avoided."
)


def grading_runs_list() -> QuerySet[GradingRun]:
    return GradingRun.objects.select_related("sampling_run", "grader", "prompt").order_by(
        "-created_at"
    )


def grading_runs_recent(*, limit: int = 5) -> list[GradingRun]:
    """For the researcher's home panel (grading/home_researcher_panel.html)."""
    return list(grading_runs_list()[:limit])


def call_table(run: GradingRun):
    """The rows that stand for this run's grader calls: one per answer in checklist mode,
    one per answer and criterion in per-criterion mode."""
    return ChecklistCall if run.mode == GradingMode.CHECKLIST else Judgment


def runs_progress(*, runs) -> dict[int, dict]:
    """For a page of runs: calls done (or errored) of those made so far, and cost, by run
    (two aggregate queries, one per mode)."""
    found: dict[int, dict] = {}
    runs = list(runs)
    for table, mode in (
        (ChecklistCall, GradingMode.CHECKLIST),
        (Judgment, GradingMode.PER_CRITERION),
    ):
        ids = [r.pk for r in runs if r.mode == mode]
        if not ids:
            continue
        rows = (
            table.objects.filter(grading_run_id__in=ids)
            .values("grading_run_id")
            .annotate(
                total=Count("pk"),
                finished=Count("pk", filter=Q(status__in=[CallState.DONE, CallState.ERROR])),
                cost=Sum("cost_usd"),
            )
        )
        for row in rows:
            found[row["grading_run_id"]] = row
    return found


def fidelity_notes(*, temperature, prompt: PromptTemplate | None) -> list[str]:
    """Where a grading run departs from the published auto-rater's design, in plain words."""
    notes = []
    if temperature is not None and Decimal(str(temperature)) != PUBLISHED_TEMPERATURE:
        notes.append(
            f"The published auto-rater graded at temperature 0; this run uses {temperature}."
        )
    if prompt is not None and not explanation_first(prompt):
        notes.append(
            f"The published auto-rater was asked for its explanation before its verdict; "
            f"{prompt} asks for the verdict first."
        )
    return notes


def explanation_first(prompt: PromptTemplate) -> bool:
    notes = prompt.notes.lower()
    return "explanation comes before the verdict" in notes or "explanation first" in notes


def run_fidelity_notes(run: GradingRun) -> list[str]:
    return fidelity_notes(temperature=run.params.get("temperature", 0), prompt=run.prompt)


@dataclass(frozen=True)
class GradingEstimate:
    answers: int
    calls: int
    cost_usd: Decimal | None  # None: nobody knows the grader's price
    sampling_running: bool
    answers_waiting: int  # answers the sampling run has not finished yet
    batch_cost_usd: Decimal | None = None  # in batch mode; None: unpriced, or no batch API


def grading_estimate(*, run: GradingRun) -> GradingEstimate:
    """What launching would ask for now: a call per answer done so far with an approved
    rubric (checklist), or per such answer and criterion of its rubric (per criterion);
    cost, live and in batch mode, from the prompts' length and the grader's recent output
    (apps/llm/costs.py)."""
    approved = Rubric.objects.filter(question=OuterRef("question"), state=RubricState.APPROVED)
    answers = Response.objects.filter(run_id=run.sampling_run_id).filter(Exists(approved))
    done = answers.filter(status=ResponseStatus.DONE)
    newest = (
        Rubric.objects.filter(question=OuterRef("question"), state=RubricState.APPROVED)
        .order_by("-version")
        .values("pk")[:1]
    )
    per_answer = done.annotate(
        rubric_id=Subquery(newest),
        chars=Length("text") + Length("question__text"),
    ).values_list("rubric_id", "chars")
    rows = list(per_answer)
    criteria = dict(
        Criterion.objects.filter(rubric_id__in={r for r, _c in rows})
        .values("rubric_id")
        .annotate(n=Count("pk"))
        .values_list("rubric_id", "n")
    )
    prompt_chars = len(run.prompt.system_text) + len(run.prompt.user_text)
    checklist = run.mode == GradingMode.CHECKLIST
    calls = len(rows) if checklist else sum(criteria.get(r, 0) for r, _c in rows)
    tokens_in = 0
    for rubric_id, chars in rows:
        n = criteria.get(rubric_id, 0)
        if checklist:
            tokens_in += costs.tokens_in(chars + prompt_chars + CHECKLIST_CHARS_PER_CRITERION * n)
        else:
            tokens_in += costs.tokens_in(chars + prompt_chars) * n
    out = costs.typical_output_tokens(run.grader, run.prompt.purpose) * calls
    cost = costs.call_cost(costs.price_per_mtok(run.grader), tokens_in=tokens_in, tokens_out=out)
    sampling = run.sampling_run
    return GradingEstimate(
        answers=len(rows),
        calls=calls,
        cost_usd=cost,
        batch_cost_usd=costs.batch_cost(run.grader, cost),
        sampling_running=sampling.status not in (RunStatus.FINISHED, RunStatus.CANCELLED),
        answers_waiting=answers.filter(
            status__in=[ResponseStatus.PENDING, ResponseStatus.RUNNING]
        ).count(),
    )


@dataclass
class Progress:
    calls: dict[str, int]
    calls_total: int
    judgments: dict[str, int]
    judgments_total: int
    rate_per_second: float
    eta_seconds: float | None
    cost_usd: Decimal
    budget_usd: Decimal | None
    errors: list[dict] = field(default_factory=list)  # key (what a retry sends), label, count
    reused: int = 0
    answers_waiting: int = 0
    running: bool = False
    measured_at: dt.datetime | None = None
    # The grader, with its limit's history, when it finds its concurrency by itself.
    models: list[ModelProgress] = field(default_factory=list)

    # The grader calls as every run's progress partial reads a run's rows
    # (templates/partials/run_progress.html, apps/llm/progress.py).
    @property
    def counts(self) -> RunCounts:
        return RunCounts(
            total=self.calls_total,
            done=self.calls["done"],
            failed=self.calls["error"],
            pending=self.calls["pending"],
            running=self.calls["running"],
            cost_usd=self.cost_usd,
        )

    @property
    def calls_per_second(self) -> float:
        return self.rate_per_second

    @property
    def eta_at(self) -> dt.datetime | None:
        if self.eta_seconds is None or self.measured_at is None:
            return None
        return self.measured_at + dt.timedelta(seconds=self.eta_seconds)


def grading_progress(*, run: GradingRun, now: dt.datetime | None = None) -> Progress:
    """Counted from the rows: the grader calls by state, the judgments by verdict (pending
    includes the verdicts a checklist call still to answer will give, so that met + not met
    + error + pending is every judgment the run will have for the answers it has taken),
    the rate over the last minute, cost against budget, errors by kind, calls reused."""
    now = now or timezone.now()
    table = call_table(run)
    window = now - dt.timedelta(seconds=RATE_WINDOW_SECONDS)
    counted = table.objects.filter(grading_run=run).aggregate(
        n_pending=Count("pk", filter=Q(status=CallState.PENDING)),
        n_running=Count("pk", filter=Q(status=CallState.RUNNING)),
        n_done=Count("pk", filter=Q(status=CallState.DONE)),
        n_error=Count("pk", filter=Q(status=CallState.ERROR)),
        reused=Count("pk", filter=Q(reused_from__isnull=False)),
        recent=Count(
            "pk",
            filter=Q(
                completed_at__gte=window,
                reused_from__isnull=True,
                status__in=[CallState.DONE, CallState.ERROR],
            ),
        ),
        cost=Sum("cost_usd"),
        last=Max("completed_at"),
        latency=Avg("latency_ms", filter=Q(status=CallState.DONE, reused_from__isnull=True)),
    )
    last, latency = counted.pop("last"), counted.pop("latency")
    calls = {k.removeprefix("n_"): v for k, v in counted.items()}
    # Aliases unlike the fields they filter on: an aggregate named "met" would shadow met.
    counted = Judgment.objects.filter(grading_run=run).aggregate(
        n_met=Count("pk", filter=Q(status=CallState.DONE, met=True)),
        n_not_met=Count("pk", filter=Q(status=CallState.DONE, met=False)),
        n_error=Count("pk", filter=Q(status=CallState.ERROR)),
        n_pending=Count("pk", filter=Q(status__in=[CallState.PENDING, CallState.RUNNING])),
    )
    judgments = {k.removeprefix("n_"): v for k, v in counted.items()}
    if run.mode == GradingMode.CHECKLIST:
        judgments["pending"] += (
            ChecklistCall.objects.filter(
                grading_run=run, status__in=[CallState.PENDING, CallState.RUNNING]
            ).aggregate(n=Count("rubric__criteria"))["n"]
            or 0
        )
    errors = [
        {
            "key": row["error_kind"] or "worker",
            "label": error_label(row["error_kind"]),
            "count": row["n"],
        }
        for row in table.objects.filter(grading_run=run, status=CallState.ERROR)
        .values("error_kind")
        .annotate(n=Count("pk"))
        .order_by("-n", "error_kind")
    ]
    rate = calls.pop("recent") / RATE_WINDOW_SECONDS
    reused, cost = calls.pop("reused"), calls.pop("cost") or Decimal(0)
    left = calls["pending"] + calls["running"]
    progress = Progress(
        calls=calls,
        calls_total=sum(calls.values()),
        judgments=judgments,
        judgments_total=sum(judgments.values()),
        rate_per_second=rate,
        eta_seconds=left / rate if rate and left else None,
        cost_usd=cost,
        budget_usd=run.budget_usd,
        errors=errors,
        reused=reused,
        answers_waiting=answers_ungraded(run).count(),
        running=run.status == RunStatus.RUNNING,
        measured_at=now,
    )
    if run.grader.adapts_concurrency and run.launched_at is not None:
        live = last is None or bool(calls["running"])
        made = table.objects.filter(grading_run=run, reused_from__isnull=True)
        histories = limit_histories(
            made.annotate(grader_id=Value(run.grader_id, output_field=IntegerField())),
            model_field="grader_id",
            models=[run.grader],
            start=run.launched_at,
            end=max(run.launched_at, now if live else last),
            live=live,
        )
        progress.models = [
            ModelProgress(
                model=run.grader,
                counts=progress.counts,
                mean_latency_ms=latency,
                limits=histories[run.grader_id],
            )
        ]
    return progress


def answers_ungraded(run: GradingRun) -> QuerySet[Response]:
    """Answers of the sampling run with an approved rubric that this run has no rows for
    yet: finished ones are taken by its next batch, the rest when they finish."""
    graded = call_table(run).objects.filter(grading_run=run, response=OuterRef("pk"))
    approved = Rubric.objects.filter(question=OuterRef("question"), state=RubricState.APPROVED)
    return (
        Response.objects.filter(run_id=run.sampling_run_id)
        .exclude(status=ResponseStatus.FAILED)
        .filter(Exists(approved))
        .exclude(Exists(graded))
    )


def error_label(kind: str) -> str:
    from apps.llm.models import CallStatus

    if not kind:
        return "Worker gave up (its lease ran out every time)"
    return CallStatus(kind).label if kind in CallStatus.values else kind


def _answers_scored(run: GradingRun) -> QuerySet[Response]:
    """The sampling run's answers, each joined to its score in this run (if any) and marked
    when one of its judgments is an error."""
    # One set of the answers with an errored judgment, hashed once, rather than a look-up
    # per answer (PostgreSQL re-read the run's errored judgments for each of 40,500 answers).
    errored = Judgment.objects.filter(grading_run=run, status=CallState.ERROR).values("response_id")
    return (
        Response.objects.filter(run_id=run.sampling_run_id)
        .annotate(mine=FilteredRelation("scores", condition=Q(scores__grading_run=run)))
        .annotate(has_error=ExpressionWrapper(Q(pk__in=errored), output_field=BooleanField()))
    )


def _score_groups(run: GradingRun, *keys: str) -> list[dict]:
    rows = (
        _answers_scored(run)
        .values(*keys)
        .annotate(
            answers=Count("pk"),
            scored=Count("mine__pk"),
            mean=Avg("mine__score"),
            errored=Count("pk", filter=Q(has_error=True, mine__pk__isnull=True)),
            unanswered=Count("pk", filter=~Q(status=ResponseStatus.DONE)),
        )
        .order_by(*keys)
    )
    groups = []
    for row in rows:
        row["missing"] = row["answers"] - row["scored"]
        row["pending"] = row["missing"] - row["errored"] - row["unanswered"]
        row["mean_pct"] = None if row["mean"] is None else 100 * row["mean"]
        if "model__litellm_model" in row:
            row["offline"] = ModelConfig(litellm_model=row["model__litellm_model"]).is_offline
        groups.append(row)
    return groups


def scores_by_model(*, run: GradingRun) -> list[dict]:
    """Per model: mean score, n scored, and the answers with no score, by why: an error
    judgment (regrade it), not answered by the sampling run, or still being graded."""
    return _score_groups(run, "model__display_name", "model__litellm_model")


def scores_by_topic_model(*, run: GradingRun) -> list[dict]:
    return _score_groups(
        run, "question__topic__name", "model__display_name", "model__litellm_model"
    )


def scores_totals(groups: list[dict]) -> dict:
    keys = ("answers", "scored", "missing", "errored", "pending", "unanswered")
    return {k: sum(g[k] for g in groups) for k in keys}


def judgments_list(*, run: GradingRun, filters: dict, viewer) -> QuerySet[Judgment]:
    """The run's judgments that `viewer` may read (rater_rows_shown), filtered by status,
    verdict (met: yes/no), criterion kind, polarity, model, question and response (ids)."""
    rows = rater_rows_shown(Judgment.objects.filter(grading_run=run), viewer=viewer).select_related(
        "response__question", "response__model", "criterion", "rubric"
    )
    if filters.get("status") in CallState.values:
        rows = rows.filter(status=filters["status"])
    if filters.get("met") in ("yes", "no"):
        rows = rows.filter(status=CallState.DONE, met=filters["met"] == "yes")
    if filters.get("kind"):
        rows = rows.filter(criterion__kind=filters["kind"])
    if filters.get("polarity"):
        rows = rows.filter(criterion__polarity=filters["polarity"])
    if str(filters.get("model") or "").isdigit():
        rows = rows.filter(response__model_id=int(filters["model"]))
    if str(filters.get("question") or "").isdigit():
        rows = rows.filter(response__question_id=int(filters["question"]))
    if str(filters.get("response") or "").isdigit():
        rows = rows.filter(response_id=int(filters["response"]))
    return rows.order_by("response_id", "criterion__order", "criterion_id")


JUDGMENT_EXPORT = (
    ("grading run", "grading_run_id"),
    ("response id", "response_id"),
    ("question", "response__question__external_id"),
    ("topic", "response__question__topic__name"),
    ("model", "response__model__display_name"),
    ("sample index", "response__sample_index"),
    ("rubric id", "rubric_id"),
    ("rubric version", "rubric__version"),
    ("criterion id", "criterion_id"),
    ("criterion", "criterion__text"),
    ("polarity", "criterion__polarity"),
    ("kind", "criterion__kind"),
    ("points", "criterion__points"),
    ("status", "status"),
    ("met", "met"),
    ("explanation", "explanation"),
    ("error kind", "error_kind"),
    ("error", "error"),
    ("reused", "is_reused"),
)


def judgments_export(*, run: GradingRun, viewer) -> QuerySet[Judgment]:
    """The judgments `viewer` may read in long format, one row per answer and criterion,
    with what JUDGMENT_EXPORT names: for the console's COPY export (copy_csv_chunks), which
    streams them in flat memory."""
    return (
        rater_rows_shown(Judgment.objects.filter(grading_run=run), viewer=viewer)
        .annotate(is_reused=Q(reused_from__isnull=False) | Q(checklist__reused_from__isnull=False))
        .order_by("response_id", "criterion__order", "criterion_id")
    )


BREAKDOWN_GROUPS = (
    "positive_factual_met",
    "negative_factual_avoided",
    "positive_presentation_met",
    "negative_presentation_avoided",
)
SCORE_HEADER = [
    "grading run",
    "response id",
    "model",
    "question",
    "topic",
    "sample index",
    "rubric id",
    "rubric version",
    "status",
    "score",
    "earned points",
    "max points",
    *[f"{g} {part}" for g in BREAKDOWN_GROUPS for part in ("earned", "total")],
    "missing reason",
]


WITHHELD = "withheld: you are grading this answer blind to the auto-rater (calibration)"


def scores_export(*, run: GradingRun, viewer):
    """One row per answer of the sampling run: its score and breakdown, or status
    "missing" and why there is none (for `viewer`, withheld where they still grade the
    answer blind: blind_to_rater)."""
    rows = (
        _answers_scored(run)
        .annotate(
            withheld=blind_to_rater(user=viewer, answer="pk"),
            score_value=F("mine__score"),
            earned=F("mine__earned_points"),
            max_points=F("mine__max_points"),
            breakdown=F("mine__breakdown"),
            rubric_pk=F("mine__rubric_id"),
            rubric_version=F("mine__rubric__version"),
        )
        .order_by("pk")
        .values_list(
            "pk",
            "model__display_name",
            "question__external_id",
            "question__topic__name",
            "sample_index",
            "rubric_pk",
            "rubric_version",
            "score_value",
            "earned",
            "max_points",
            "breakdown",
            "has_error",
            "status",
            "withheld",
        )
    )

    def lines():
        for (
            pk,
            model,
            question,
            topic,
            index,
            rubric_id,
            version,
            score,
            earned,
            max_points,
            breakdown,
            has_error,
            status,
            withheld,
        ) in rows.iterator(chunk_size=2000):
            if withheld:
                score, breakdown = None, None
            groups = []
            for group in BREAKDOWN_GROUPS:
                groups.extend((breakdown or {}).get(group) or ["", ""])
            if score is None:
                reason = (
                    WITHHELD
                    if withheld
                    else missing_reason(has_error=has_error, answer_status=status)
                )
                yield [
                    run.pk,
                    pk,
                    model,
                    question,
                    topic,
                    index,
                    "",
                    "",
                    "missing",
                    "",
                    "",
                    "",
                    *groups,
                    reason,
                ]
            else:
                yield [
                    run.pk,
                    pk,
                    model,
                    question,
                    topic,
                    index,
                    rubric_id,
                    version,
                    "scored",
                    score,
                    earned,
                    max_points,
                    *groups,
                    "",
                ]

    return SCORE_HEADER, lines()


def missing_reason(*, has_error: bool, answer_status: str) -> str:
    if has_error:
        return "a judgment is an error: retry it"
    if answer_status != ResponseStatus.DONE:
        return f"the answer is {ResponseStatus(answer_status).label.lower()} in the sampling run"
    return "not graded yet"


def sampling_counts(*, run: SamplingRun) -> dict:
    """A sampling run's answers by state, its failures by kind, and its cost (one
    aggregate query and one grouped)."""
    found = Response.objects.filter(run=run).aggregate(
        **{s: Count("pk", filter=Q(status=s)) for s in ResponseStatus.values},
        cost=Sum("cost_usd"),
    )
    cost = found.pop("cost") or Decimal(0)
    errors = [
        (row["error_kind"] or "worker", error_label(row["error_kind"]), row["n"])
        for row in Response.objects.filter(run=run, status=ResponseStatus.FAILED)
        .values("error_kind")
        .annotate(n=Count("pk"))
        .order_by("-n", "error_kind")
    ]
    return {"states": found, "total": sum(found.values()), "errors": errors, "cost": cost}
