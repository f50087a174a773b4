"""Reads for calibration: sets and their progress, an expert's queue, the grading and
adjudication pages, and the report that holds a grading run against the final labels.

The report pairs each final expert label with the auto-rater's judgment of the same
criterion of the same answer. A pair is left out, and counted with its reason, when the
experts have not settled it yet or the auto-rater's judgment is missing, pending or an
error; a score is compared only for an answer whose criteria (of the subset measured) all
have both labels, computed by the scoring rule on exactly those criteria.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db.models import Case, Count, Exists, F, OuterRef, Q, QuerySet, When

from apps.llm.errors import PromptError
from apps.llm.selectors import prompt_current
from apps.rubrics import scoring
from apps.rubrics.models import Kind, Polarity, Rubric, RubricState

from ..models import (
    Calibration,
    CalibrationSample,
    CalibrationSet,
    CallState,
    ExpertJudgment,
    GradingRun,
    Judgment,
)

if TYPE_CHECKING:
    # The statistics bring numpy and scipy: imported where a report is computed, not in every
    # process that loads grading.
    from stats.calibration import Agreement
    from stats.correlation import Correlation

NOT_SETTLED = "not yet settled: the experts' final label is still to be agreed"
NO_JUDGMENT = (
    "the auto-rater has no judgment of it (the answer is not graded yet in this run, or was "
    "graded against another rubric version)"
)
PENDING = "the auto-rater's judgment is not made yet"
ERROR = "the auto-rater's judgment is an error"

SUBSETS = [
    ("All criteria", None),
    ("Factual criteria", Kind.FACTUAL),
    ("Presentation criteria", Kind.PRESENTATION),
]
GROUPS = [
    ("All criteria", None, None),
    ("Factual", Kind.FACTUAL, None),
    ("Presentation", Kind.PRESENTATION, None),
    ("Should include (positive)", None, Polarity.POSITIVE),
    ("Should avoid (negative)", None, Polarity.NEGATIVE),
]
RATER_MET, RATER_NOT_MET = "rater_met", "rater_not_met"
DIRECTIONS = [
    (RATER_MET, "The auto-rater said met"),
    (RATER_NOT_MET, "The auto-rater said not met"),
]


# --- sets, progress, queues ----------------------------------------------------------------


def _progress():
    return {
        "sample_count": Count("samples", distinct=True),
        "first_count": Count(
            "samples", filter=Q(samples__first_done_at__isnull=False), distinct=True
        ),
        "second_count": Count(
            "samples", filter=Q(samples__second_done_at__isnull=False), distinct=True
        ),
        "resolved_count": Count(
            "samples", filter=Q(samples__resolved_at__isnull=False), distinct=True
        ),
    }


def calibration_sets_list():
    """Every set with its progress counts (annotated: sample_count, first_count,
    second_count, resolved_count)."""
    return (
        CalibrationSet.objects.select_related("sampling_run", "second_grader")
        .annotate(**_progress())
        .order_by("-created_at", "-pk")
    )


def calibration_set_get(*, pk: int) -> CalibrationSet | None:
    return (
        calibration_sets_list()
        .select_related("created_by")
        .prefetch_related("model_configs")
        .filter(pk=pk)
        .first()
    )


def set_samples(*, calibration_set: CalibrationSet):
    return calibration_set.samples.select_related(
        "question", "response__model", "rubric", "author"
    ).order_by("question_id")


def gradable_runs(*, calibration_set: CalibrationSet):
    """The grading runs of the set's sampling run: what it can calibrate."""
    return GradingRun.objects.filter(
        sampling_run_id=calibration_set.sampling_run_id
    ).select_related("grader", "prompt")


def expert_queue(*, user) -> dict:
    """The answers `user` is to grade (as an author or a second grader) and those whose
    disagreements they are to settle with the other grader."""
    samples = CalibrationSample.objects.select_related(
        "calibration_set", "question", "response__model"
    ).order_by("calibration_set_id", "question_id")
    to_grade = samples.filter(
        Q(author=user, first_done_at__isnull=True)
        | Q(calibration_set__second_grader=user, second_done_at__isnull=True)
    )
    to_settle = samples.filter(
        Q(author=user) | Q(calibration_set__second_grader=user),
        first_done_at__isnull=False,
        second_done_at__isnull=False,
        resolved_at__isnull=True,
    )
    return {"to_grade": list(to_grade), "to_settle": list(to_settle)}


def queue_next(*, user, after: CalibrationSample) -> CalibrationSample | None:
    """The next answer `user` has to grade, after `after` (wrapping round)."""
    waiting = expert_queue(user=user)["to_grade"]
    place = (after.calibration_set_id, after.question_id)
    later = [s for s in waiting if (s.calibration_set_id, s.question_id) > place]
    return (later or [s for s in waiting if s.pk != after.pk] or [None])[0]


def grades_done(*, user) -> QuerySet[CalibrationSample]:
    """The answers whose grade by `user` (as the rubric's author or the set's second grader)
    is complete, the last completed first (annotated: `done_at`, when theirs was)."""
    return (
        CalibrationSample.objects.filter(
            Q(author=user, first_done_at__isnull=False)
            | Q(calibration_set__second_grader=user, second_done_at__isnull=False)
        )
        .annotate(
            done_at=Case(When(author=user, then=F("first_done_at")), default=F("second_done_at"))
        )
        .order_by("-done_at", "-pk")
    )


def grade_last(*, user) -> CalibrationSample | None:
    """`user`'s last completed grade, the one an undo reopens, with `undoable` set: whether
    the other grade of its answer is still to come (then the two are not compared yet)."""
    last = grades_done(user=user).select_related("question").first()
    if last is not None:
        last.undoable = not (last.first_done_at and last.second_done_at)
    return last


def settle_walk(*, user, sample: CalibrationSample) -> dict:
    """The answers of `sample`'s set whose two grades are in and whose disagreements `user`
    settles, in the queue's order: the ones before and after `sample`, its place, and how
    many still have a criterion without a final label."""
    walk = list(
        CalibrationSample.objects.filter(
            Q(author=user) | Q(calibration_set__second_grader=user),
            calibration_set_id=sample.calibration_set_id,
            first_done_at__isnull=False,
            second_done_at__isnull=False,
        )
        .order_by("question_id", "pk")
        .values_list("pk", "resolved_at")
    )
    ids = [pk for pk, _resolved in walk]
    place = ids.index(sample.pk) if sample.pk in ids else None
    return {
        "previous_id": ids[place - 1] if place else None,
        "next_id": ids[place + 1] if place is not None and place + 1 < len(ids) else None,
        "place": (place or 0) + 1,
        "total": len(ids),
        "unsettled": sum(1 for _pk, resolved in walk if resolved is None),
    }


def sample_get(*, pk: int) -> CalibrationSample | None:
    return (
        CalibrationSample.objects.select_related(
            "calibration_set__second_grader",
            "question__topic",
            "response__model",
            "rubric",
            "author",
        )
        .filter(pk=pk)
        .first()
    )


def grading_rows(*, sample: CalibrationSample, turn: str) -> list[dict]:
    """The criteria to grade with this grader's own labels and notes only: never the other
    grader's, never the auto-rater's."""
    rows = sample.judgments.select_related("criterion")
    return [
        {
            "criterion": row.criterion,
            "met": getattr(row, f"{turn}_met"),
            "note": getattr(row, f"{turn}_note"),
        }
        for row in rows
    ]


def adjudication_rows(*, sample: CalibrationSample) -> dict:
    rows = list(
        sample.judgments.select_related("criterion", "first_by", "second_by", "resolved_by")
    )
    return {
        "disagreements": [r for r in rows if r.first_met != r.second_met],
        "agreements": [r for r in rows if r.first_met == r.second_met],
    }


# --- blindness to the auto-rater -----------------------------------------------------------


def _still_grading(user) -> Q:
    """Of calibration samples: those `user` has still to grade (as the set's second grader,
    or as the answer's rubric author)."""
    return Q(calibration_set__second_grader=user, second_done_at__isnull=True) | Q(
        author=user, first_done_at__isnull=True
    )


def blind_to_rater(*, user, answer: str = "response_id") -> Exists:
    """True of a row whose answer (the id at `answer`) is in a calibration set that `user`
    is still grading: until their grades of the set are in (all of the second grader's, or
    all of an author's own answers), they see none of an auto-rater's output for its
    answers, so that their labels stay their own. The report's refusal is the same rule."""
    grading_set = CalibrationSample.objects.filter(
        _still_grading(user), calibration_set_id=OuterRef("calibration_set_id")
    )
    return Exists(
        CalibrationSample.objects.filter(Exists(grading_set), response_id=OuterRef(answer))
    )


def rater_rows_shown(rows: QuerySet, *, viewer, answer: str = "response_id") -> QuerySet:
    """`rows` of an auto-rater's output (judgments, checklist calls, scores) without those
    about answers `viewer` still grades blind (`blind_to_rater`); none for nobody."""
    if viewer is None or not viewer.is_authenticated:
        return rows.none()
    return rows.exclude(blind_to_rater(user=viewer, answer=answer))


def rater_withheld(*, viewer, sampling_run_id: int) -> bool:
    """Whether `viewer` is still grading, blind, answers of this sampling run: its grading
    runs' pages and files then leave those answers' judgments out."""
    return CalibrationSample.objects.filter(
        _still_grading(viewer), calibration_set__sampling_run_id=sampling_run_id
    ).exists()


def answers_blind(*, viewer, sampling_run_id: int) -> set[int]:
    """The ids of this sampling run's answers that `viewer` still grades blind, for the
    reports that list answers one by one."""
    return set(
        CalibrationSample.objects.filter(
            blind_to_rater(user=viewer), calibration_set__sampling_run_id=sampling_run_id
        ).values_list("response_id", flat=True)
    )


def set_blind_for(*, calibration_set: CalibrationSet, viewer) -> bool:
    """Whether an answer of the set is one `viewer` still grades blind (in this set or in
    another that drew it too): its reports, which show the auto-rater's verdicts, are then
    not for them."""
    return calibration_set.samples.filter(blind_to_rater(user=viewer)).exists()


def expert_labels_shown(rows: QuerySet[ExpertJudgment], *, viewer) -> QuerySet[ExpertJudgment]:
    """`rows` of expert labels without those of answers `viewer` grades whose two grades are
    not both in: each grader labels blind to the other and may revise until both are in (the
    grading page shows them their own alone). Others see every row."""
    if viewer is None or not viewer.is_authenticated:
        return rows.none()
    open_sample = CalibrationSample.objects.filter(
        Q(author=viewer) | Q(calibration_set__second_grader=viewer),
        Q(first_done_at__isnull=True) | Q(second_done_at__isnull=True),
    )
    return rows.exclude(sample__in=open_sample)


# --- the report ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One criterion of one sampled answer: the final expert label and the auto-rater's."""

    sample: CalibrationSample
    row: ExpertJudgment
    rater_met: bool | None
    explanation: str
    excluded: str = ""  # the reason the pair is left out, or ""

    @property
    def criterion(self):
        return self.row.criterion


@dataclass(frozen=True)
class ScoreRow:
    label: str
    correlation: Correlation | None
    n: int
    excluded: int  # answers left out: a criterion of theirs lacks one of the labels
    unsettled: int = 0  # of those, answers with a criterion the experts have not settled yet

    @property
    def rater_missing(self) -> int:
        """Answers left out for the auto-rater's label alone (the experts' are settled)."""
        return self.excluded - self.unsettled


@dataclass(frozen=True)
class AgreementRow:
    label: str
    agreement: Agreement | None
    n: int


@dataclass
class RunStatistics:
    grading_run: GradingRun
    pairs: list[Pair]
    scores: list[ScoreRow] = field(default_factory=list)
    agreements: list[AgreementRow] = field(default_factory=list)
    excluded: list[tuple[int, str]] = field(default_factory=list)  # (count, reason)
    scored_missing: int = 0  # answers of the set without an auto-rater score in this run


def report_pairs(*, calibration_set: CalibrationSet, grading_run: GradingRun) -> list[Pair]:
    samples = {s.pk: s for s in set_samples(calibration_set=calibration_set)}
    rows = (
        ExpertJudgment.objects.filter(sample__calibration_set=calibration_set)
        .select_related("criterion")
        .order_by("sample__question_id", "criterion__order", "criterion_id")
    )
    rater = {
        (j["response_id"], j["criterion_id"]): j
        for j in Judgment.objects.filter(
            grading_run=grading_run, response_id__in=[s.response_id for s in samples.values()]
        ).values("response_id", "criterion_id", "status", "met", "explanation")
    }
    pairs = []
    for row in rows:
        sample = samples[row.sample_id]
        judgment = rater.get((sample.response_id, row.criterion_id))
        reason = ""
        if row.final_met is None:
            reason = NOT_SETTLED
        elif judgment is None:
            reason = NO_JUDGMENT
        elif judgment["status"] == CallState.ERROR:
            reason = ERROR
        elif judgment["status"] != CallState.DONE:
            reason = PENDING
        pairs.append(
            Pair(
                sample=sample,
                row=row,
                rater_met=judgment["met"] if judgment else None,
                explanation=judgment["explanation"] if judgment else "",
                excluded=reason,
            )
        )
    return pairs


def _score(pairs: list[Pair], verdict) -> float:
    specs = [
        scoring.ScoredCriterion(
            id=p.criterion.pk,
            polarity=p.criterion.polarity,
            kind=p.criterion.kind,
            points=p.criterion.points,
        )
        for p in pairs
    ]
    return scoring.score(specs, {p.criterion.pk: verdict(p) for p in pairs}).score


def score_rows(pairs: list[Pair]) -> list[ScoreRow]:
    """Pearson r of answer scores, auto-rater against expert-final, over all criteria and
    over each kind alone (the score computed over that subset)."""
    from stats.correlation import pearson

    by_sample: dict[int, list[Pair]] = {}
    for pair in pairs:
        by_sample.setdefault(pair.sample.pk, []).append(pair)
    result = []
    for label, kind in SUBSETS:
        rater, expert, excluded, unsettled = [], [], 0, 0
        for sample_pairs in by_sample.values():
            chosen = [p for p in sample_pairs if kind is None or p.criterion.kind == kind]
            if not chosen:
                continue
            if any(p.excluded for p in chosen):
                excluded += 1
                unsettled += any(p.excluded == NOT_SETTLED for p in chosen)
                continue
            rater.append(_score(chosen, lambda p: p.rater_met))
            expert.append(_score(chosen, lambda p: p.row.final_met))
        result.append(
            ScoreRow(
                label=label,
                correlation=pearson(rater, expert),
                n=len(rater),
                excluded=excluded,
                unsettled=unsettled,
            )
        )
    return result


def agreement_rows(pairs: list[Pair]) -> list[AgreementRow]:
    """Per-criterion label agreement, overall, by kind and by polarity."""
    from stats.calibration import label_agreement

    used = [p for p in pairs if not p.excluded]
    result = []
    for label, kind, polarity in GROUPS:
        chosen = [
            p
            for p in used
            if (kind is None or p.criterion.kind == kind)
            and (polarity is None or p.criterion.polarity == polarity)
        ]
        agreement = label_agreement(
            [p.rater_met for p in chosen], [p.row.final_met for p in chosen]
        )
        result.append(AgreementRow(label=label, agreement=agreement, n=len(chosen)))
    return result


def run_statistics(*, calibration_set: CalibrationSet, grading_run: GradingRun) -> RunStatistics:
    pairs = report_pairs(calibration_set=calibration_set, grading_run=grading_run)
    reasons = Counter(p.excluded for p in pairs if p.excluded)
    scored = set(
        grading_run.scores.filter(
            response_id__in={p.sample.response_id for p in pairs}
        ).values_list("response_id", flat=True)
    )
    return RunStatistics(
        grading_run=grading_run,
        pairs=pairs,
        scores=score_rows(pairs),
        agreements=agreement_rows(pairs),
        excluded=[(count, reason) for reason, count in reasons.most_common()],
        scored_missing=len({p.sample.response_id for p in pairs} - scored),
    )


def side_by_side(columns: list[RunStatistics]) -> dict:
    """The statistics of one or two runs as rows of cells, for a table with a column each."""
    return {
        "score_rows": [
            (row.label, [column.scores[i] for column in columns])
            for i, row in enumerate(columns[0].scores)
        ],
        "agreement_rows": [
            (row.label, [column.agreements[i] for column in columns])
            for i, row in enumerate(columns[0].agreements)
        ],
    }


def disagreements(
    pairs: list[Pair],
    *,
    kind: str = "",
    polarity: str = "",
    model_id: int | None = None,
    direction: str = "",
) -> list[Pair]:
    """The pairs where the auto-rater's verdict differs from the final expert label."""
    found = [p for p in pairs if not p.excluded and p.rater_met != p.row.final_met]
    if kind:
        found = [p for p in found if p.criterion.kind == kind]
    if polarity:
        found = [p for p in found if p.criterion.polarity == polarity]
    if model_id:
        found = [p for p in found if p.sample.response.model_id == model_id]
    if direction:
        found = [p for p in found if p.rater_met is (direction == RATER_MET)]
    return found


def calibration_get(*, pk: int) -> Calibration | None:
    return (
        Calibration.objects.select_related(
            "calibration_set__sampling_run",
            "calibration_set__second_grader",
            "grading_run__grader",
            "grading_run__prompt",
            "grader",
            "prompt",
            "created_by",
        )
        .filter(pk=pk)
        .first()
    )


def calibration_changes(*, calibration: Calibration) -> list[str]:
    """What changed since the calibration was made: a newer approved rubric version of one
    of its questions, a newer grading prompt version, another grader on the run."""
    changes = []
    held = Rubric.objects.filter(pk__in=calibration.rubric_ids).select_related("question")
    held_by_question = {r.question_id: r for r in held}
    newest = (
        Rubric.objects.filter(question_id__in=list(held_by_question), state=RubricState.APPROVED)
        .order_by("question_id", "-version")
        .distinct("question_id")
    )
    for rubric in newest:
        old = held_by_question[rubric.question_id]
        if rubric.pk != old.pk and rubric.version > old.version:
            changes.append(
                f"{old.question.external_id}: rubric version {rubric.version} was approved "
                f"since; this calibration holds for version {old.version}."
            )
    try:
        current = prompt_current(purpose=calibration.prompt.purpose)
    except PromptError:
        current = calibration.prompt
    if current.pk != calibration.prompt_id and current.version > calibration.prompt.version:
        changes.append(
            f"A newer grading prompt, version {current.version}, exists; this calibration "
            f"holds for version {calibration.prompt.version}."
        )
    if calibration.grading_run.grader_id != calibration.grader_id:
        changes.append(f"The grading run's grader is now {calibration.grading_run.grader}.")
    return changes
