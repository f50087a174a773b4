"""Reads of answer studies: what a draw can take from a grading run (answers scored, per
stratum), the shared criteria its rubrics carry, and what a study's draw took."""

from dataclasses import dataclass

from django.db.models import Count, Q

from apps.grading import bands
from apps.grading.models import GradingRun, ResponseScore
from apps.llm.models import ModelConfig
from apps.questions.models import Topic
from apps.rubrics.models import Rubric, SharedCriterionSet
from apps.runs.models import Response, ResponseStatus, SamplingRun
from apps.surveys.models import ParticipantKind, Study, UnitKind

from .models import AnswerDraw, StudyAnswer, StudyPair

# The two bands a stratum is one of, in the order strata are listed and drawn.
BANDS = (bands.BELOW, bands.AT_OR_ABOVE)


def band_of(score: float) -> bands.Band:
    return next(band for band in BANDS if band.holds(score))


@dataclass(frozen=True)
class Stratum:
    model_id: int
    model: str
    topic_id: int
    topic: str
    band: str  # a key of BANDS
    band_label: str
    available: int

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.model_id, self.topic_id, self.band)


def answers_shown(*, sampling_run: SamplingRun):
    """The run's answers a unit can show: finished, with text (an empty answer has nothing to
    show, and a unit must show something)."""
    return Response.objects.filter(run=sampling_run, status=ResponseStatus.DONE).exclude(text="")


def scores_drawable(*, grading_run: GradingRun):
    """The grading run's scores of the answers a draw may take: those of its own sampling
    run's answers that a unit can show, in ascending answer pk (the draw's order)."""
    shown = answers_shown(sampling_run=grading_run.sampling_run)
    return (
        ResponseScore.objects.filter(grading_run=grading_run, response__in=shown)
        .select_related("response__question", "response__model")
        .order_by("response_id")
    )


def strata_available(*, grading_run: GradingRun) -> list[Stratum]:
    """Every stratum a draw from `grading_run` has: each model of its sampling run x each topic
    of the run's questions x each band, with the answers it holds (0 for an empty one), in
    the order the draw takes them (model pk, topic pk, band)."""
    run = grading_run.sampling_run
    counts = {
        (row["response__model_id"], row["response__question__topic_id"]): row
        for row in scores_drawable(grading_run=grading_run)
        .order_by()
        .values("response__model_id", "response__question__topic_id")
        .annotate(**{band.key: Count("pk", filter=band.q("score")) for band in BANDS})
    }
    model_ids = set(run.model_configs.values_list("pk", flat=True)) | {m for m, _t in counts}
    topic_ids = set(run.questions.values_list("topic_id", flat=True)) | {t for _m, t in counts}
    models = list(ModelConfig.objects.filter(pk__in=model_ids).order_by("pk"))
    topics = list(Topic.objects.filter(pk__in=topic_ids).order_by("pk"))
    return [
        Stratum(
            model_id=model.pk,
            model=model.display_name,
            topic_id=topic.pk,
            topic=topic.name,
            band=band.key,
            band_label=band.label,
            available=counts.get((model.pk, topic.pk), {}).get(band.key, 0),
        )
        for model in models
        for topic in topics
        for band in BANDS
    ]


def shared_set_graded(*, grading_run: GradingRun) -> SharedCriterionSet | None:
    """The shared presentation criteria that the rubrics of the grading run's scores carry:
    the version most of those rubrics carry, the newer on a tie (one, unless rubrics were
    approved on either side of a new version)."""
    graded = ResponseScore.objects.filter(grading_run=grading_run).values("rubric_id")
    row = (
        Rubric.objects.filter(pk__in=graded)
        .values("shared_set")
        .annotate(n=Count("pk"))
        .order_by("-n", "-shared_set__version")
        .first()
    )
    return SharedCriterionSet.objects.get(pk=row["shared_set"]) if row else None


def grading_runs_of(*, sampling_run: SamplingRun | None):
    """The grading runs a draw may use: those with a score, of `sampling_run` if given."""
    runs = GradingRun.objects.filter(Q(scores__isnull=False)).distinct().order_by("-created_at")
    return runs.filter(sampling_run=sampling_run) if sampling_run is not None else runs


@dataclass(frozen=True)
class UnitRow:
    label: str
    kind: str
    models: str
    topic: str
    band: str
    score: float | None


def draw_units(*, study: Study) -> list[UnitRow]:
    """Each unit of an answer study with what researchers alone may see: the model(s) behind
    it, the question's topic, and an answer's band and score when drawn. In label order."""
    rows = []
    answers = StudyAnswer.objects.filter(unit__study=study).select_related(
        "unit", "response__model", "response__question__topic"
    )
    for a in answers:
        band = bands.band_get(a.band)
        rows.append(
            UnitRow(
                label=a.unit.label,
                kind=UnitKind.ANSWER.label,
                models=a.response.model.display_name,
                topic=a.response.question.topic.name,
                band=band.label if band else a.band,
                score=a.score,
            )
        )
    pairs = StudyPair.objects.filter(unit__study=study).select_related(
        "unit", "response_a__model", "response_b__model", "response_a__question__topic"
    )
    for p in pairs:
        a, b = p.response_a.model.display_name, p.response_b.model.display_name
        rows.append(
            UnitRow(
                label=p.unit.label,
                kind=UnitKind.PAIR.label,
                models=f"A: {a}; B: {b}",
                topic=p.response_a.question.topic.name,
                band="",
                score=None,
            )
        )
    return sorted(rows, key=lambda row: (row.kind != UnitKind.ANSWER.label, row.label))


def draw_of(*, study_id: int) -> AnswerDraw | None:
    return (
        AnswerDraw.objects.select_related("study", "sampling_run", "grading_run", "created_by")
        .filter(study_id=study_id)
        .first()
    )


@dataclass(frozen=True)
class StrataRow:
    """A model and topic, with each band's answers: (band label, available, a draw takes)."""

    model: str
    topic: str
    cells: list[tuple[str, int, int]]


def strata_table(*, strata: list[Stratum], per_stratum: int | None) -> list[StrataRow]:
    """The strata as the creation page lays them out, a row per model and topic; what a draw
    of `per_stratum` would take from each (None: not known yet, shown as 0)."""
    rows: dict[tuple[int, int], StrataRow] = {}
    for s in strata:
        row = rows.setdefault(
            (s.model_id, s.topic_id), StrataRow(model=s.model, topic=s.topic, cells=[])
        )
        row.cells.append((s.band_label, s.available, min(per_stratum or 0, s.available)))
    return list(rows.values())


def strata_recorded(*, strata: list[dict]) -> list[StrataRow]:
    """A draw's recorded strata (AnswerDraw.strata) laid out as strata_table lays them out,
    with what the draw took from each."""
    rows: dict[tuple[int, int], StrataRow] = {}
    for s in strata:
        band = bands.band_get(s["band"])
        row = rows.setdefault(
            (s["model_id"], s["topic_id"]), StrataRow(model=s["model"], topic=s["topic"], cells=[])
        )
        row.cells.append((band.label if band else s["band"], s["available"], s["drawn"]))
    return list(rows.values())


def answer_studies():
    """Every answer study's draw, newest first, with its study and runs, and `units` and
    `people` (who answered, simulated included) counted."""
    return (
        AnswerDraw.objects.select_related("study", "sampling_run", "grading_run")
        .annotate(
            units=Count("study__study_scenarios", distinct=True),
            people=Count(
                "study__participants",
                filter=Q(
                    study__participants__kind=ParticipantKind.HUMAN,
                    study__participants__assignments__answered_at__isnull=False,
                ),
                distinct=True,
            ),
        )
        .order_by("-created_at", "-pk")
    )
