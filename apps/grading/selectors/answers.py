"""Reads for the answer viewer: a grading run's answers, filtered and sorted in SQL (a run
may have 40,000), a page of them, where one answer stands in that order with its neighbours,
and one answer in full with each criterion's verdict and the grader's explanation."""

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    F,
    FilteredRelation,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    Window,
)
from django.db.models.functions import Lag, Lead, RowNumber

from apps.questions.models import Topic
from apps.rubrics.models import Polarity
from apps.runs.models import Response

from ..bands import NAMED, Band
from ..models import CallState, GradingRun, Judgment, ResponseScore
from .calibration import rater_rows_shown
from .runs import missing_reason

# A verdict as the filter names it: the grader's answer on a criterion, or an error (never
# counted as "not met").
VERDICTS = {
    "met": ("Met", Q(status=CallState.DONE, met=True)),
    "not_met": ("Not met", Q(status=CallState.DONE, met=False)),
    "error": ("Error", Q(status=CallState.ERROR)),
}
_TIES = ("model__display_name", "sample_index", "pk")
SORTS = {
    "question": ("Question", ("question__external_id", *_TIES)),
    "score": (
        "Score, lowest first",
        (F("score").asc(nulls_last=True), "question__external_id", *_TIES),
    ),
    "-score": (
        "Score, highest first",
        (F("score").desc(nulls_last=True), "question__external_id", *_TIES),
    ),
    "model": ("Model", ("model__display_name", "question__external_id", "sample_index", "pk")),
    "topic": (
        "Topic",
        ("question__topic__order", "question__topic__name", "question__external_id", *_TIES),
    ),
}
DEFAULT_SORT = "question"


@dataclass(frozen=True)
class AnswerFilters:
    """What narrows the list (None or "": not narrowed). `criterion`, `verdict`, `kind` and
    `polarity` ask for an answer with at least one judgment in the run that has them all."""

    model: int | None = None
    topic: Topic | None = None
    question: int | None = None
    band: Band | None = None
    criterion: int | None = None
    verdict: str = ""
    kind: str = ""
    polarity: str = ""
    sort: str = DEFAULT_SORT

    @property
    def judged(self) -> bool:
        return bool(self.criterion or self.verdict or self.kind or self.polarity)

    def judgment_q(self) -> Q:
        found = Q()
        if self.criterion:
            found &= Q(criterion_id=self.criterion)
        if self.verdict:
            found &= VERDICTS[self.verdict][1]
        if self.kind:
            found &= Q(criterion__kind=self.kind)
        if self.polarity:
            found &= Q(criterion__polarity=self.polarity)
        return found


def answers_list(*, run: GradingRun, filters: AnswerFilters, viewer) -> QuerySet[Response]:
    """The sampling run's answers that `viewer` may see beside the auto-rater's output
    (rater_rows_shown), each with its score in `run` (None when it has none), filtered and
    in the order `filters.sort` names, ending on the id so that the order is total."""
    answers = Response.objects.filter(run_id=run.sampling_run_id)
    rows = (
        rater_rows_shown(answers, viewer=viewer, answer="pk")
        .annotate(mine=FilteredRelation("scores", condition=Q(scores__grading_run=run)))
        .annotate(score=F("mine__score"))
    )
    if filters.model:
        rows = rows.filter(model_id=filters.model)
    if filters.topic:
        rows = rows.filter(question__topic=filters.topic)
    if filters.question:
        rows = rows.filter(question_id=filters.question)
    if filters.band:
        rows = rows.filter(filters.band.q("score"))
    if filters.judged:
        judged = Judgment.objects.filter(grading_run=run, response=OuterRef("pk"))
        rows = rows.filter(Exists(judged.filter(filters.judgment_q())))
    return rows.order_by(*SORTS[filters.sort][1])


def answers_page(rows: QuerySet[Response], *, run: GradingRun) -> QuerySet[Response]:
    """What the list shows of each answer: its model, question and topic, score and points,
    and whether a judgment of it is an error (why it has no score). The answer's text is
    left behind: only the answer shown in full needs it."""
    errored = Judgment.objects.filter(
        grading_run=run, response=OuterRef("pk"), status=CallState.ERROR
    )
    return (
        rows.select_related("model", "question__topic")
        .defer("text", "error")
        .annotate(
            earned=F("mine__earned_points"),
            max_points=F("mine__max_points"),
            score_pct=ExpressionWrapper(F("score") * 100, output_field=FloatField()),
            has_error=Exists(errored),
        )
    )


@dataclass(frozen=True)
class Place:
    """Where an answer stands in the list: its position (from 1) and its neighbours' ids."""

    position: int
    previous: int | None
    next: int | None


def answer_place(rows: QuerySet[Response], *, answer_id: int) -> Place | None:
    """`answer_id`'s place in `rows` (None when it is not among them), in one query: the
    window runs over the filtered rows and the outer query keeps one, since a filter on the
    id beside a window would be applied before it (and every answer would be first)."""
    order = rows.query.order_by
    windowed = (
        rows.annotate(
            listed_id=F("pk"),
            position=Window(RowNumber(), order_by=order),
            before=Window(Lag("pk"), order_by=order),
            after=Window(Lead("pk"), order_by=order),
        )
        .order_by()
        .values("listed_id", "position", "before", "after")
    )
    sql, params = windowed.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT position, before, after FROM ({sql}) AS listed WHERE listed.listed_id = %s",  # noqa: S608
            [*params, answer_id],
        )
        found = cursor.fetchone()
    return None if found is None else Place(*found)


@dataclass
class CriterionRow:
    judgment: Judgment
    verdict: str  # met, not_met, error or pending
    earned: int | None  # points earned; None while there is no verdict
    matches: bool  # one of the judgments the filters asked for

    @property
    def criterion(self):
        return self.judgment.criterion


@dataclass
class AnswerShown:
    answer: Response
    score: ResponseScore | None
    criteria: list[CriterionRow]
    band: Band | None
    missing: str = ""  # why there is no score
    rubric_versions: list[int] = field(default_factory=list)

    @property
    def score_pct(self) -> float | None:
        return None if self.score is None else 100 * self.score.score


def answer_shown(*, run: GradingRun, answer_id: int, filters: AnswerFilters) -> AnswerShown:
    """One answer in full (the caller has found it among those the viewer may see): its
    question, text, score in `run` and each of its judgments in the rubric's order."""
    answer = Response.objects.select_related("model", "question__topic").get(pk=answer_id)
    score = ResponseScore.objects.filter(grading_run=run, response_id=answer_id).first()
    judgments = (
        Judgment.objects.filter(grading_run=run, response_id=answer_id)
        .select_related("criterion", "rubric")
        .order_by("criterion__order", "criterion_id")
    )
    if filters.judged:
        judgments = judgments.annotate(
            matches=ExpressionWrapper(filters.judgment_q(), output_field=BooleanField())
        )
    else:
        judgments = judgments.annotate(matches=Value(False))
    rows = [_criterion_row(j) for j in judgments]
    missing = ""
    if score is None:
        errored = any(row.verdict == "error" for row in rows)
        missing = missing_reason(has_error=errored, answer_status=answer.status)
    return AnswerShown(
        answer=answer,
        score=score,
        criteria=rows,
        band=None if score is None else band_of(score.score),
        missing=missing,
        rubric_versions=sorted({row.judgment.rubric.version for row in rows}),
    )


def _criterion_row(judgment: Judgment) -> CriterionRow:
    if judgment.status == CallState.ERROR:
        return CriterionRow(judgment, "error", None, judgment.matches)
    if judgment.status != CallState.DONE:
        return CriterionRow(judgment, "pending", None, judgment.matches)
    verdict = "met" if judgment.met else "not_met"
    # A positive criterion earns its points when met, a negative one when avoided.
    earns = judgment.met == (judgment.criterion.polarity == Polarity.POSITIVE)
    return CriterionRow(
        judgment, verdict, judgment.criterion.points if earns else 0, judgment.matches
    )


def band_of(score: float) -> Band | None:
    """The named band (below 65% or 65% or more) a score falls in."""
    return next((band for band in NAMED if band.holds(score)), None)
