"""Expert calibration, the published protocol: for each question one answer is drawn at
random (seeded) from a configured set of models; the rubric's author grades it criterion by
criterion, blind to the auto-rater; a second researcher grades it blind too; then the two
settle every disagreement, giving the final label beside both originals. A `Calibration`
holds a grading run against those final labels.
"""

import random
from collections.abc import Iterable, Mapping

from django.db import transaction
from django.utils import timezone

from apps.accounts.roles import Role, user_has_role
from apps.llm.models import ModelConfig, run_seed
from apps.questions.models import Question
from apps.rubrics.models import QuestionAssignment
from apps.runs.models import Response, ResponseStatus, SamplingRun

from ..errors import GradingError
from ..models import (
    Calibration,
    CalibrationSample,
    CalibrationSet,
    ExpertGradeWithdrawal,
    ExpertJudgment,
    GradingRun,
)
from ..selectors.calibration import grades_done
from .rows import approved_rubrics, criteria_of

FIRST, SECOND = "first", "second"


def _name(user) -> str:
    return user.get_full_name() or user.get_username()


def calibration_draw(
    *, sampling_run: SamplingRun, model_ids: Iterable[int], seed: int
) -> list[tuple[int, Response]]:
    """(question id, drawn answer) for each question of the run that has an approved rubric
    and a finished answer from one of the models. Reproducible: questions are taken in
    ascending pk, each question's candidate answers in ascending pk, and one
    `random.Random(seed)` makes one `choice` per question, in that order; the same seed over
    the same rows draws the same answers."""
    model_ids = set(model_ids)
    question_ids = sorted(sampling_run.questions.values_list("pk", flat=True))
    rubrics = approved_rubrics(question_ids)
    candidates: dict[int, list[Response]] = {}
    answers = Response.objects.filter(
        run=sampling_run,
        status=ResponseStatus.DONE,
        model_id__in=model_ids,
        question_id__in=list(rubrics),
    ).order_by("question_id", "pk")
    for answer in answers:
        candidates.setdefault(answer.question_id, []).append(answer)
    rng = random.Random(seed)
    return [(q, rng.choice(candidates[q])) for q in question_ids if q in candidates]


def _authors(question_ids: Iterable[int], rubrics) -> dict[int, int | None]:
    """Who wrote each question's rubric: the assigned author, else whoever started the
    approved version (an imported rubric may have no assignment)."""
    assigned = dict(
        QuestionAssignment.objects.filter(
            question_id__in=list(question_ids), author__isnull=False
        ).values_list("question_id", "author_id")
    )
    return {q: assigned.get(q) or rubrics[q].created_by_id for q in question_ids}


def calibration_set_create(
    *,
    sampling_run: SamplingRun,
    models: Iterable[ModelConfig],
    second_grader,
    user,
    name: str = "",
    seed: int | None = None,
) -> CalibrationSet:
    """Draw the calibration sample and make an empty expert judgment per criterion."""
    models = list(models)
    if not user_has_role(user, Role.RESEARCHER):
        raise GradingError("Only researchers make calibration sets.")
    if not models:
        raise GradingError("Choose at least one model to draw answers from.")
    if second_grader is None or not user_has_role(second_grader, Role.RESEARCHER):
        raise GradingError("The second grader must be a researcher.")
    in_run = set(sampling_run.model_configs.values_list("pk", flat=True))
    outside = [m.display_name for m in models if m.pk not in in_run]
    if outside:
        raise GradingError(f"The sampling run has no answers from {', '.join(outside)}.")
    seed = run_seed() if seed is None else seed
    drawn = calibration_draw(sampling_run=sampling_run, model_ids=[m.pk for m in models], seed=seed)
    if not drawn:
        raise GradingError(
            "No question of this run has both an approved rubric and a finished answer from "
            "these models: there is nothing to calibrate against yet."
        )
    rubrics = approved_rubrics(q for q, _answer in drawn)
    authors = _authors([q for q, _answer in drawn], rubrics)
    _authors_check(drawn, authors, second_grader)
    criteria = criteria_of(r.pk for r in rubrics.values())
    name = name.strip() or f"{sampling_run.name}: calibration, seed {seed}"
    with transaction.atomic():
        calibration_set = CalibrationSet.objects.create(
            name=name[:200],
            sampling_run=sampling_run,
            seed=seed,
            second_grader=second_grader,
            created_by=user,
        )
        calibration_set.model_configs.set(models)
        samples = CalibrationSample.objects.bulk_create(
            CalibrationSample(
                calibration_set=calibration_set,
                question_id=q,
                response=answer,
                rubric=rubrics[q],
                author_id=authors[q],
            )
            for q, answer in drawn
        )
        ExpertJudgment.objects.bulk_create(
            ExpertJudgment(sample=sample, criterion=criterion)
            for sample in samples
            for criterion in criteria[sample.rubric_id]
        )
    return calibration_set


def _authors_check(drawn, authors, second_grader) -> None:
    # Two different people grade every answer: one who did not write the rubric among them.
    missing = [q for q, _a in drawn if authors[q] is None]
    own = [q for q, _a in drawn if authors[q] == second_grader.pk]
    for ids, message in (
        (missing, "have no rubric author to grade them first: assign an author"),
        (own, f"have rubrics written by {_name(second_grader)}: choose another second grader"),
    ):
        if ids:
            labels = Question.objects.filter(pk__in=ids).order_by("pk")
            shown = ", ".join(q.external_id for q in labels[:5]) + (" …" if len(ids) > 5 else "")
            raise GradingError(f"{len(ids)} of the drawn questions ({shown}) {message}.")


def grader_turn(*, sample: CalibrationSample, user) -> str | None:
    """FIRST for the sample's author, SECOND for its set's second grader, else None."""
    if user is None or not user.is_authenticated:
        return None
    if sample.author_id == user.pk:
        return FIRST
    if sample.calibration_set.second_grader_id == user.pk:
        return SECOND
    return None


def _locked(sample: CalibrationSample) -> CalibrationSample:
    return (
        CalibrationSample.objects.select_for_update(of=("self",))
        .select_related("calibration_set")
        .get(pk=sample.pk)
    )


def expert_grade_save(
    *,
    sample: CalibrationSample,
    user,
    labels: Mapping[int, bool],
    notes: Mapping[int, str] | None = None,
) -> CalibrationSample:
    """Save the author's (first) or the second grader's labels, keyed by criterion id, with
    optional notes. Either may grade first: each is blind to the other. A grade may be
    saved in parts and revised until both are complete; then agreements become final and
    only the disagreements remain to settle (`disagreement_resolve`)."""
    notes = notes or {}
    with transaction.atomic():
        sample = _locked(sample)
        turn = grader_turn(sample=sample, user=user)
        if turn is None:
            raise GradingError(
                "Only the rubric's author and the set's second grader grade this answer."
            )
        if sample.first_done_at and sample.second_done_at:
            raise GradingError(
                "Both grades of this answer are in: disagreements are settled on the "
                "adjudication page."
            )
        rows = {row.criterion_id: row for row in sample.judgments.select_for_update()}
        unknown = (set(labels) | set(notes)) - set(rows)
        if unknown:
            raise GradingError("Some criteria are not in the rubric version being graded.")
        now = timezone.now()
        for criterion_id, row in rows.items():
            row.updated_at = now
            if labels.get(criterion_id) is not None:
                setattr(row, f"{turn}_met", bool(labels[criterion_id]))
            if criterion_id in notes:
                setattr(row, f"{turn}_note", (notes[criterion_id] or "").strip())
            setattr(row, f"{turn}_by", user)
        ExpertJudgment.objects.bulk_update(
            rows.values(), [f"{turn}_met", f"{turn}_note", f"{turn}_by", "updated_at"]
        )
        if all(getattr(row, f"{turn}_met") is not None for row in rows.values()):
            setattr(sample, f"{turn}_done_at", now)
            sample.save(update_fields=[f"{turn}_done_at"])
            if sample.first_done_at and sample.second_done_at:
                _agreements_finalise(sample, list(rows.values()))
    return sample


def expert_grade_undo(*, user, sample_id: int | None = None) -> CalibrationSample:
    """Reopen `user`'s last completed grade (of the answer `sample_id`, when the page that
    offered the undo named it) while the other grade of that answer is still to come: the
    grade no longer counts as done, its labels stay to be changed, and saving it again
    completes it. Undoing again reopens the grade before it. Once both grades of the answer
    are in, they are compared and settled, and the grade stands. The grade as it stood is
    kept as an `ExpertGradeWithdrawal`."""
    last = grades_done(user=user).first()
    if last is None:
        raise GradingError("You have no completed grade to undo.")
    if sample_id is not None and last.pk != sample_id:
        raise GradingError(
            "That grade is no longer your last one (it was undone already, or you completed "
            "another since): nothing was undone."
        )
    with transaction.atomic():
        # The lock `expert_grade_save` takes: an undo and the other grader's last save are
        # ordered, and the later one sees what the earlier left.
        sample = _locked(last)
        turn = grader_turn(sample=sample, user=user)
        done_at = getattr(sample, f"{turn}_done_at") if turn else None
        if done_at is None:
            raise GradingError("That grade was undone already: nothing was undone.")
        if sample.first_done_at and sample.second_done_at:
            raise GradingError(
                f"The other grade of {last.question.external_id} is in too, so the two are "
                "compared now and your grade can no longer be undone: settle any "
                "disagreement with the other grader."
            )
        rows = list(sample.judgments.order_by("criterion_id"))
        ExpertGradeWithdrawal.objects.create(
            sample=sample,
            grader=user,
            turn=turn,
            labels={str(r.criterion_id): getattr(r, f"{turn}_met") for r in rows},
            notes={str(r.criterion_id): getattr(r, f"{turn}_note") for r in rows},
            done_at=done_at,
        )
        setattr(sample, f"{turn}_done_at", None)
        sample.save(update_fields=[f"{turn}_done_at"])
    return sample


def _agreements_finalise(sample: CalibrationSample, rows) -> None:
    agreed = [row for row in rows if row.first_met == row.second_met]
    for row in agreed:
        row.final_met = row.first_met
    ExpertJudgment.objects.bulk_update(agreed, ["final_met", "updated_at"])
    if len(agreed) == len(rows):
        sample.resolved_at = timezone.now()
        sample.save(update_fields=["resolved_at"])


def disagreement_resolve(
    *, sample: CalibrationSample, user, criterion_id: int, final_met: bool, note: str = ""
) -> ExpertJudgment:
    """The label the two graders agreed on for a criterion they graded differently; either
    of them records it (both original labels stay as given)."""
    with transaction.atomic():
        sample = _locked(sample)
        if grader_turn(sample=sample, user=user) is None:
            raise GradingError("Only the answer's two graders settle its disagreements.")
        if not (sample.first_done_at and sample.second_done_at):
            raise GradingError("Both graders must finish grading this answer first.")
        row = sample.judgments.select_for_update().filter(criterion_id=criterion_id).first()
        if row is None:
            raise GradingError("That criterion is not in the rubric version being graded.")
        if row.first_met == row.second_met:
            raise GradingError("Both graders gave this criterion the same label: it is final.")
        row.final_met, row.resolved_by = bool(final_met), user
        row.resolution_note = (note or "").strip()
        row.save(update_fields=["final_met", "resolved_by", "resolution_note", "updated_at"])
        if not sample.judgments.filter(final_met__isnull=True).exists():
            sample.resolved_at = sample.resolved_at or timezone.now()
            sample.save(update_fields=["resolved_at"])
    return row


def disagreements_settle(
    *,
    sample: CalibrationSample,
    user,
    finals: Mapping[int, bool],
    notes: Mapping[int, str] | None = None,
    from_author: Iterable[int] = (),
) -> CalibrationSample:
    """Record, in one go, the final labels of several criteria the two graders labelled
    differently: `finals` {criterion id: met}, and the criteria of `from_author` take the
    rubric author's label (the first grade). Either grader records them; a note sent
    replaces the one kept. Nothing is saved if any criterion is not a disagreement of the
    answer."""
    notes = notes or {}
    from_author = set(from_author)
    with transaction.atomic():
        sample = _locked(sample)
        if grader_turn(sample=sample, user=user) is None:
            raise GradingError("Only the answer's two graders settle its disagreements.")
        if not (sample.first_done_at and sample.second_done_at):
            raise GradingError("Both graders must finish grading this answer first.")
        rows = {row.criterion_id: row for row in sample.judgments.select_for_update()}
        named = set(finals) | set(notes) | from_author
        if named - set(rows):
            raise GradingError("Some criteria are not in the rubric version being graded.")
        agreed = [c for c in named if rows[c].first_met == rows[c].second_met]
        if agreed:
            raise GradingError(
                f"{len(agreed)} of the criteria sent have the same label from both graders: "
                "those are final already. Nothing was saved."
            )
        now, changed = timezone.now(), []
        for criterion_id in sorted(named):
            row = rows[criterion_id]
            final = row.first_met if criterion_id in from_author else finals.get(criterion_id)
            if final is None and criterion_id not in notes:
                continue
            if final is not None:
                row.final_met, row.resolved_by = bool(final), user
            if criterion_id in notes:
                row.resolution_note = (notes[criterion_id] or "").strip()
            row.updated_at = now
            changed.append(row)
        ExpertJudgment.objects.bulk_update(
            changed, ["final_met", "resolved_by", "resolution_note", "updated_at"]
        )
        if all(row.final_met is not None for row in rows.values()):
            sample.resolved_at = sample.resolved_at or now
            sample.save(update_fields=["resolved_at"])
    return sample


def calibration_create(
    *, calibration_set: CalibrationSet, grading_run: GradingRun, user
) -> Calibration:
    """Hold a grading run against the set's final labels, for its grader, prompt version and
    the rubric versions the answers were labelled on. Opening it again returns the same
    calibration (one per set and run)."""
    if not user_has_role(user, Role.RESEARCHER):
        raise GradingError("Only researchers calibrate grading runs.")
    if grading_run.sampling_run_id != calibration_set.sampling_run_id:
        raise GradingError(
            "The grading run grades another sampling run's answers than the ones in this set."
        )
    rubric_ids = sorted(set(calibration_set.samples.values_list("rubric_id", flat=True)))
    calibration, _made = Calibration.objects.get_or_create(
        calibration_set=calibration_set,
        grading_run=grading_run,
        defaults={
            "grader_id": grading_run.grader_id,
            "prompt_id": grading_run.prompt_id,
            "rubric_ids": rubric_ids,
            "created_by": user,
        },
    )
    return calibration
