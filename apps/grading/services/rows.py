"""The rows of a grading run: making them for the answers due (copying a call already made
with the same grader, prompt version, parameters, answer and rubric version), and scoring
answers from their judgments. The run's services (runs.py) and the engine's view of its
calls (work.py) both use these."""

from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from apps.llm.models import Purpose
from apps.rubrics import scoring
from apps.rubrics.models import Criterion, Rubric, RubricState
from apps.runs.models import Response, ResponseStatus

from ..models import CallState, ChecklistCall, GradingMode, GradingRun, Judgment, ResponseScore

PURPOSE = {
    GradingMode.PER_CRITERION: Purpose.GRADE_CRITERION,
    GradingMode.CHECKLIST: Purpose.GRADE_CHECKLIST,
}
MAKE_BATCH = 2000  # answers whose rows one batch makes at most


def approved_rubrics(question_ids: Iterable[int]) -> dict[int, Rubric]:
    """Each question's newest approved rubric version."""
    rubrics = (
        Rubric.objects.filter(question_id__in=set(question_ids), state=RubricState.APPROVED)
        .order_by("question_id", "-version")
        .distinct("question_id")
    )
    return {r.question_id: r for r in rubrics}


def criteria_of(rubric_ids: Iterable[int]) -> dict[int, list[Criterion]]:
    found: dict[int, list[Criterion]] = defaultdict(list)
    for criterion in Criterion.objects.filter(rubric_id__in=set(rubric_ids)).order_by(
        "rubric_id", "order", "pk"
    ):
        found[criterion.rubric_id].append(criterion)
    return found


def criteria_specs(rubric_ids: Iterable[int]) -> dict[int, list[tuple]]:
    """Each rubric's criteria in order, as (pk, polarity, kind, points): what recording and
    scoring a checklist call need, without building a model instance per criterion."""
    found: dict[int, list[tuple]] = defaultdict(list)
    rows = Criterion.objects.filter(rubric_id__in=set(rubric_ids)).order_by(
        "rubric_id", "order", "pk"
    )
    for rubric_id, *spec in rows.values_list("rubric_id", "pk", "polarity", "kind", "points"):
        found[rubric_id].append(tuple(spec))
    return found


def answers_due(run: GradingRun):
    """The sampling run's finished answers that this grading run has no rows for yet and
    that have an approved rubric to be graded against."""
    table = ChecklistCall if run.mode == GradingMode.CHECKLIST else Judgment
    graded = table.objects.filter(grading_run=run, response=OuterRef("pk"))
    approved = Rubric.objects.filter(question=OuterRef("question"), state=RubricState.APPROVED)
    return (
        Response.objects.filter(run_id=run.sampling_run_id, status=ResponseStatus.DONE)
        .filter(Exists(approved))
        .exclude(Exists(graded))
        .order_by("pk")
    )


def grading_rows_make(*, run: GradingRun, limit: int = MAKE_BATCH) -> int:
    """Make the rows that grade answers finished since the last call: a checklist call per
    answer, or a judgment per answer and criterion; copies where the same call was made
    before. Repeating it is harmless (unique constraints). How many answers it took."""
    answers = list(answers_due(run).values_list("pk", "question_id")[:limit])
    if not answers:
        return 0
    rubrics = approved_rubrics(q for _pk, q in answers)
    criteria = criteria_of(r.pk for r in rubrics.values())
    same = GradingRun.objects.filter(
        grader_id=run.grader_id, prompt_id=run.prompt_id, mode=run.mode, params=run.params
    ).exclude(pk=run.pk)
    response_ids = [pk for pk, _q in answers]
    with transaction.atomic():
        if run.mode == GradingMode.CHECKLIST:
            _checklists_make(run, answers, rubrics, criteria, same, response_ids)
        else:
            _judgments_make(run, answers, rubrics, criteria, same, response_ids)
        scores_compute(grading_run_id=run.pk, response_ids=response_ids)
    return len(answers)


def _checklists_make(run, answers, rubrics, criteria, same, response_ids) -> None:
    before = {
        (c.response_id, c.rubric_id): c
        for c in ChecklistCall.objects.filter(
            grading_run__in=same, response_id__in=response_ids, status=CallState.DONE
        )
    }
    calls, copied = [], []
    for pk, question_id in answers:
        rubric = rubrics[question_id]
        source = before.get((pk, rubric.pk))
        call = ChecklistCall(grading_run=run, response_id=pk, rubric=rubric)
        if source is not None:
            call.status, call.reused_from_id = CallState.DONE, source.reused_from_id or source.pk
            call.raw_output, call.completed_at = source.raw_output, timezone.now()
            copied.append((call, source))
        calls.append(call)
    ChecklistCall.objects.bulk_create(calls, ignore_conflicts=True)
    if not copied:
        return
    made = {
        c.response_id: c.pk
        for c in ChecklistCall.objects.filter(grading_run=run, response_id__in=response_ids)
    }
    judgments = []
    for source_judgment in Judgment.objects.filter(checklist_id__in=[s.pk for _c, s in copied]):
        judgments.append(
            Judgment(
                grading_run=run,
                response_id=source_judgment.response_id,
                criterion_id=source_judgment.criterion_id,
                rubric_id=source_judgment.rubric_id,
                checklist_id=made[source_judgment.response_id],
                status=source_judgment.status,
                met=source_judgment.met,
                explanation=source_judgment.explanation,
                reused_from_id=source_judgment.reused_from_id or source_judgment.pk,
                completed_at=timezone.now(),
            )
        )
    Judgment.objects.bulk_create(judgments, ignore_conflicts=True)


def _judgments_make(run, answers, rubrics, criteria, same, response_ids) -> None:
    before = {
        (j.response_id, j.criterion_id): j
        for j in Judgment.objects.filter(
            grading_run__in=same, response_id__in=response_ids, status=CallState.DONE
        )
    }
    rows = []
    for pk, question_id in answers:
        rubric = rubrics[question_id]
        for criterion in criteria[rubric.pk]:
            judgment = Judgment(grading_run=run, response_id=pk, criterion=criterion, rubric=rubric)
            source = before.get((pk, criterion.pk))
            if source is not None:
                judgment.status, judgment.met = CallState.DONE, source.met
                judgment.explanation, judgment.raw_output = source.explanation, source.raw_output
                judgment.reused_from_id = source.reused_from_id or source.pk
                judgment.completed_at = timezone.now()
            rows.append(judgment)
    Judgment.objects.bulk_create(rows, ignore_conflicts=True)


def scores_compute(*, grading_run_id: int, response_ids: Iterable[int]) -> int:
    """(Re)compute the scores of these answers from their judgments, by the scoring rule
    against the rubric version graded: a score for every answer whose judgments are all
    done, none for one with any pending or errored. Deterministic; how many scored."""
    response_ids = list(set(response_ids))
    judgments = Judgment.objects.filter(
        grading_run_id=grading_run_id, response_id__in=response_ids
    ).values_list(
        "response_id",
        "rubric_id",
        "criterion_id",
        "status",
        "met",
        "criterion__polarity",
        "criterion__kind",
        "criterion__points",
    )
    by_response: dict[int, list] = defaultdict(list)
    for row in judgments:
        by_response[row[0]].append(row)
    expected = dict(
        Rubric.objects.filter(pk__in={rows[0][1] for rows in by_response.values()})
        .annotate(n=Count("criteria"))
        .values_list("pk", "n")
    )
    return _scores_store(grading_run_id, response_ids, by_response, expected)


def scores_record(*, grading_run_id: int, rows: list[tuple], expected: dict[int, int]) -> int:
    """The same as `scores_compute`, from judgments just written, without reading them
    back: `rows` are their (response, rubric, criterion, status, met, polarity, kind,
    points), `expected` each rubric's number of criteria. A checklist call's record scores
    its answers this way."""
    by_response: dict[int, list] = defaultdict(list)
    for row in rows:
        by_response[row[0]].append(row)
    return _scores_store(grading_run_id, list(by_response), by_response, expected)


def _scores_store(grading_run_id, response_ids, by_response, expected) -> int:
    """Score each answer whose judgment rows (response, rubric, criterion, status, met,
    polarity, kind, points) are complete and all done; store those, drop the others'."""
    scores, unscored = [], set(response_ids)
    for response_id, rows in by_response.items():
        rubric_id = rows[0][1]
        if len(rows) != expected[rubric_id] or any(r[3] != CallState.DONE for r in rows):
            continue
        specs = [
            scoring.ScoredCriterion(id=r[2], polarity=r[5], kind=r[6], points=r[7]) for r in rows
        ]
        breakdown = scoring.score(specs, {r[2]: r[4] for r in rows})
        scores.append(
            ResponseScore(
                grading_run_id=grading_run_id,
                response_id=response_id,
                rubric_id=rubric_id,
                earned_points=breakdown.earned_points,
                max_points=breakdown.max_points,
                score=breakdown.score,
                breakdown=breakdown_json(breakdown),
            )
        )
        unscored.discard(response_id)
    with transaction.atomic():
        if unscored:
            ResponseScore.objects.filter(
                grading_run_id=grading_run_id, response_id__in=unscored
            ).delete()
        ResponseScore.objects.bulk_create(
            scores,
            update_conflicts=True,
            unique_fields=["grading_run", "response"],
            update_fields=[
                "rubric",
                "earned_points",
                "max_points",
                "score",
                "breakdown",
                "computed_at",
            ],
        )
    return len(scores)


def breakdown_json(breakdown: scoring.ScoreBreakdown) -> dict:
    groups = (
        "positive_factual_met",
        "negative_factual_avoided",
        "positive_presentation_met",
        "negative_presentation_avoided",
    )
    return {
        "earned_points": breakdown.earned_points,
        "max_points": breakdown.max_points,
        **{g: [getattr(breakdown, g).earned, getattr(breakdown, g).total] for g in groups},
    }
