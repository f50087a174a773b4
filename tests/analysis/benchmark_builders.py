"""Grading runs with chosen scores, for the benchmark report's tests.

Rows are stored as the apps store them: a sampling run's `Response`s, a grading run's
`Judgment`s (one per answer and criterion, each met or not, or an error), and the scores
computed from those judgments by the grading app's own service (`scores_compute`), so that
every score is the scoring rule's. A score is asked for as a number: each question's rubric
has twenty positive criteria of one point (SCORE_RUBRIC), and a score of 0.65 is thirteen of
them met. A question may carry a rubric of its own, its verdicts given one by one.

`bench_committed` builds a world once for a test module, outside the tests' transactions,
and deletes it afterwards; `bench_make` builds one inside a test.
"""

import contextlib
from dataclasses import dataclass, field

from django.utils import timezone

from apps.grading.models import (
    Calibration,
    CalibrationSample,
    CalibrationSet,
    CallState,
    ExpertJudgment,
    GradingMode,
    GradingRun,
    Judgment,
)
from apps.grading.services import scores_compute
from apps.llm.models import ModelConfig, PromptTemplate, Purpose, RunStatus
from apps.questions.models import LabelStatus, Question
from apps.rubrics.models import Criterion, Rubric, RubricState, SharedCriterionSet
from apps.runs.models import Response, ResponseStatus, SamplingRun
from tests.factories import ModelConfigFactory, question_make

SCORE_RUBRIC = [("positive", "factual", 1)] * 20
ERROR, FAILED, UNGRADED = "error", "failed", "ungraded"


@dataclass
class Q:
    """A question of the world: its topic and strata labels, and its rubric's criteria as
    (polarity, kind, points)."""

    key: str
    topic: str = "accounts"
    prior: bool = False
    sensemaking: bool = False  # the two needs, labelled independently: both, one or neither
    guidance: bool = True
    verified: bool = True
    criteria: list = field(default_factory=lambda: list(SCORE_RUBRIC))


@dataclass
class Bench:
    sampling: SamplingRun
    grading: GradingRun
    models: dict[str, ModelConfig]
    questions: dict[str, Question]
    rubrics: dict[str, Rubric]
    responses: dict[tuple[str, str, int], Response]

    def answer(self, model: str, question: str, sample: int = 0) -> Response:
        return self.responses[(model, question, sample)]


def _model(name: str, family: str) -> ModelConfig:
    """A model named `name`; a name starting "offline-" is one of the offline provider's."""
    slug = name.lower().replace(" ", "-")
    return ModelConfigFactory(
        display_name=name, family=family, litellm_model=f"openai/{slug}", version=slug[-8:]
    )


def _rubric(question: Question, criteria: list) -> Rubric:
    now = timezone.now()
    rubric = Rubric.objects.create(
        question=question,
        version=1,
        state=RubricState.APPROVED,
        updated_at=now,
        approved_at=now,
        verified_at=now,
        shared_set=SharedCriterionSet.objects.order_by("-version").first(),
    )
    Criterion.objects.bulk_create(
        Criterion(
            rubric=rubric,
            text=f"Criterion {i} of {question.external_id}",
            polarity=polarity,
            kind=kind,
            points=points,
            order=i,
        )
        for i, (polarity, kind, points) in enumerate(criteria)
    )
    return rubric


def _verdicts(value, criteria: list) -> list[bool]:
    if isinstance(value, list | tuple):
        assert len(value) == len(criteria), "one verdict per criterion"
        return list(value)
    met = round(value * len(criteria))
    assert abs(met / len(criteria) - value) < 1e-9, f"{value} is not a count of criteria met"
    return [i < met for i in range(len(criteria))]


def bench_make(
    *,
    models: dict[str, str],
    questions: list[Q],
    answers: dict[tuple[str, str], list],
    name: str = "Bench",
) -> Bench:
    """`models`: name -> family. `answers`: (model, question key) -> one entry per sample:
    a score (a multiple of 1/len(criteria)), a list of verdicts, ERROR (its first judgment
    is an error), FAILED (the sampling run failed to answer) or UNGRADED (answered, not yet
    graded)."""
    made = {name_: _model(name_, family) for name_, family in models.items()}
    asked = {}
    for spec in questions:
        asked[spec.key] = question_make(
            topic=spec.topic,
            external_id=spec.key,
            mentions_prior_attempt=spec.prior,
            needs_sensemaking=spec.sensemaking,
            needs_guidance=spec.guidance,
            label_status=LabelStatus.VERIFIED if spec.verified else LabelStatus.LABELLED,
        )
    rubrics = {spec.key: _rubric(asked[spec.key], spec.criteria) for spec in questions}
    sampling = SamplingRun.objects.create(
        name=f"{name}: sampling",
        status=RunStatus.FINISHED,
        prompt=PromptTemplate.objects.filter(purpose=Purpose.SAMPLE).order_by("-version").first(),
        samples_per_item=max((len(v) for v in answers.values()), default=1),
    )
    sampling.model_configs.set(made.values())
    sampling.questions.set(asked.values())
    now = timezone.now()
    responses = {}
    for (model, key), samples in answers.items():
        for index, value in enumerate(samples):
            status = ResponseStatus.FAILED if value == FAILED else ResponseStatus.DONE
            responses[(model, key, index)] = Response(
                run=sampling,
                model=made[model],
                question=asked[key],
                sample_index=index,
                status=status,
                text=f"Answer {index} of {model} to {key}.",
                completed_at=now,
            )
    Response.objects.bulk_create(responses.values())
    bench = Bench(
        sampling=sampling,
        grading=None,
        models=made,
        questions=asked,
        rubrics=rubrics,
        responses=responses,
    )
    bench.grading = grading_add(bench, answers=answers, name=name)
    return bench


def grading_add(bench: Bench, *, answers: dict[tuple[str, str], list], name: str) -> GradingRun:
    """Another grading run of the bench's sampling run (a grader of its own), whose verdicts
    make these scores; an answer it is not given stays ungraded in it."""
    criteria = {
        key: list(rubric.criteria.order_by("order")) for key, rubric in bench.rubrics.items()
    }
    grader = _model(f"offline-grader ({name})", "Offline")
    grading = GradingRun.objects.create(
        name=name,
        sampling_run=bench.sampling,
        grader=grader,
        mode=GradingMode.CHECKLIST,
        prompt=PromptTemplate.objects.filter(purpose=Purpose.GRADE_CHECKLIST)
        .order_by("-version")
        .first(),
        status=RunStatus.FINISHED,
        params={"temperature": 0},
    )
    now = timezone.now()
    judgments, graded = [], []
    for (model, key), samples in answers.items():
        for index, value in enumerate(samples):
            if value in (FAILED, UNGRADED):
                continue
            response = bench.responses[(model, key, index)]
            graded.append(response.pk)
            errored = value == ERROR
            listed = criteria[key]
            verdicts = [True] * len(listed) if errored else _verdicts(value, listed)
            for position, (criterion, met) in enumerate(zip(listed, verdicts, strict=True)):
                error = errored and position == 0
                judgments.append(
                    Judgment(
                        grading_run=grading,
                        response=response,
                        criterion=criterion,
                        rubric=bench.rubrics[key],
                        status=CallState.ERROR if error else CallState.DONE,
                        met=None if error else met,
                        error_kind="invalid_output" if error else "",
                        error="The grader's answer was bad." if error else "",
                        explanation="" if error else f"Judged {'met' if met else 'not met'}.",
                        completed_at=now,
                    )
                )
    Judgment.objects.bulk_create(judgments, batch_size=2000)
    scores_compute(grading_run_id=grading.pk, response_ids=graded)
    return grading


def calibration_make(
    bench: Bench, *, labels: dict[tuple[str, str, int], list[bool | None]], name: str = "Experts"
) -> Calibration:
    """A calibration set over the given answers with these final expert labels (one per
    criterion, None: not settled yet), and the grading run calibrated against it."""
    now = timezone.now()
    calibration_set = CalibrationSet.objects.create(name=name, sampling_run=bench.sampling)
    for (model, key, index), finals in labels.items():
        response = bench.answer(model, key, index)
        sample = CalibrationSample.objects.create(
            calibration_set=calibration_set,
            question=bench.questions[key],
            response=response,
            rubric=bench.rubrics[key],
            first_done_at=now,
            second_done_at=now,
            resolved_at=now if all(f is not None for f in finals) else None,
        )
        criteria = bench.rubrics[key].criteria.order_by("order")
        ExpertJudgment.objects.bulk_create(
            ExpertJudgment(sample=sample, criterion=c, first_met=f, second_met=f, final_met=f)
            for c, f in zip(criteria, finals, strict=True)
        )
    return Calibration.objects.create(
        calibration_set=calibration_set,
        grading_run=bench.grading,
        grader=bench.grading.grader,
        prompt=bench.grading.prompt,
        rubric_ids=[r.pk for r in bench.rubrics.values()],
    )


def bench_delete(bench: Bench) -> None:
    """Every row `bench_make` and `calibration_make` made, children first."""
    CalibrationSet.objects.filter(sampling_run=bench.sampling).delete()
    graders = list(
        GradingRun.objects.filter(sampling_run=bench.sampling).values_list("grader_id", flat=True)
    )
    for run in GradingRun.objects.filter(sampling_run=bench.sampling):
        run.delete()
    Response.objects.filter(run=bench.sampling).delete()
    bench.sampling.delete()
    Rubric.objects.filter(pk__in=[r.pk for r in bench.rubrics.values()]).delete()
    Question.objects.filter(pk__in=[q.pk for q in bench.questions.values()]).delete()
    ModelConfig.objects.filter(pk__in=[m.pk for m in bench.models.values()] + graders).delete()


@contextlib.contextmanager
def bench_committed(django_db_blocker, **kwargs):
    """A world built once and committed, for a module's tests (each of which runs in a
    transaction that is rolled back, so the world they see is always this one); deleted
    when the module is done."""
    from django.contrib.auth.models import Group

    from tests.conftest import reseed

    with django_db_blocker.unblock():
        if not Group.objects.filter(name="expert").exists():
            reseed()  # an earlier transactional test flushed the seeded rows
        made = kwargs.pop("build", bench_make)(**kwargs)
    try:
        yield made
    finally:
        with django_db_blocker.unblock():
            for bench in made if isinstance(made, tuple | list) else [made]:
                bench_delete(bench)
