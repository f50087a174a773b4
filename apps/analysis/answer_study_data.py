"""An answer study's data, read once from the stored rows, for its report.

People and proxies on the answer items come from the survey report's own reader
(`survey_data`: people after exclusions, each proxy model and each sweep variant a group).
Beside them, what the benchmark knows of the same answers: each unit's answer (or pair of
answers), its model, topic, band and rubric score in the draw's grading run; the auto-rater's
verdict on the rubric criterion made from each presentation item's shared criterion; the pair
judgments (which of two answers helps more) of people and proxies; and every model's mean
rubric score over the whole grading run.

numpy and pandas are imported where the frames are built: the pages import this module for
its fingerprint, in every web process, most of which never build one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db.models import Count, F, FloatField, Max, Q, Sum
from django.db.models.functions import Cast

from apps.answer_studies.models import AnswerDraw, CriterionItem, StudyAnswer, StudyPair
from apps.grading.models import CallState, GradingRun, Judgment, ResponseScore
from apps.surveys.models import (
    Answer,
    AssignmentStatus,
    ItemKind,
    ParticipantKind,
    StudyScenario,
    UnitKind,
)

from .benchmark_data import Model, RunInfo, _run_info, benchmark_models
from .errors import AnalysisError
from .survey_data import (
    PEOPLE,
    SurveyData,
    _excluded_humans,
    proxy_key,
    survey_data,
    survey_fingerprint,
)

if TYPE_CHECKING:
    import pandas as pd

    from apps.surveys.models import Study

# Changed whenever a statistic of the report is computed differently, so that intervals kept
# for the data (by fingerprint) are never shown beside an estimate made another way.
REPORT_METHODS = 1
UNIT_COLUMNS = [
    "unit",
    "pk",
    "label",
    "kind",
    "response_id",
    "model_id",
    "model_label",
    "topic",
    "band",
    "score",
    "score_drawn",
    "response_b_id",
    "model_b_id",
    "model_b_label",
]
VERDICT_COLUMNS = ["unit", "item", "criterion", "met", "response_id"]
PAIR_COLUMNS = ["group", "rater", "unit", "item", "model_a", "model_b", "outcome"]
SCORE_COLUMNS = ["model_id", "model_label", "mean_score", "n", "questions"]


@dataclass(frozen=True)
class PresentationCriterion:
    """A presentation item (yes / no) and the shared criterion it puts to people."""

    item: str  # the survey item's code
    wording: str  # the item's wording, as people read it
    criterion: int  # the shared criterion's id
    text: str  # the criterion as the rubric holds it
    polarity: str  # "positive" (should include) or "negative" (should avoid)


@dataclass
class AnswerStudyData:
    study: Study
    survey: SurveyData  # people and proxies on the answer items (pair items left out)
    # One row per unit, in unit order (`unit` is its index in survey.scenarios): pk, label,
    # kind ("answer" | "pair"), response_id, model_id, model_label, topic, band, score (its
    # rubric score in the grading run; nan without one), score_drawn (as drawn); for a pair,
    # the first answer's response and model, and response_b_id, model_b_id, model_b_label.
    units: pd.DataFrame
    # The auto-rater's verdicts: unit, item (the presentation item's code), criterion (shared
    # criterion id), met (bool), response_id; only judgments made (done).
    verdicts: pd.DataFrame
    # One row per pair judgment: group (people, or a proxy's group key), rater (participant),
    # unit, item, model_a, model_b (model ids of the answers shown as A and B), outcome.
    pairs: pd.DataFrame
    # Per model of the sampling run: model_id, model_label, mean_score (the mean over its
    # questions of the mean of each question's scored samples, as the benchmark report's
    # Table 3), n (scored answers), questions.
    model_scores: pd.DataFrame
    grading_run_id: int
    sampling_run_id: int
    draw: AnswerDraw | None = None
    run: RunInfo | None = None  # the grading run, as the benchmark report describes it
    models: list[Model] = field(default_factory=list)  # the sampling run's, by name
    criteria: list[PresentationCriterion] = field(default_factory=list)

    @property
    def answer_units(self) -> pd.DataFrame:
        return self.units[self.units["kind"] == UnitKind.ANSWER]

    @property
    def pair_units(self) -> pd.DataFrame:
        return self.units[self.units["kind"] == UnitKind.PAIR]

    def model_label(self, model_id: int) -> str:
        return next((m.label for m in self.models if m.id == model_id), str(model_id))


def _draw(study: Study) -> AnswerDraw:
    draw = (
        AnswerDraw.objects.select_related("sampling_run", "grading_run").filter(study=study).first()
    )
    if draw is None:
        raise AnalysisError(f"{study} shows no benchmark answers: it has no answer draw.")
    return draw


def _units(study: Study, grading_run: GradingRun, models: list[Model]) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    # The order survey_data reads the units in: a unit's index is the same in both.
    units = list(StudyScenario.objects.filter(study=study).select_related("scenario"))
    answers = {
        a.unit_id: a
        for a in StudyAnswer.objects.filter(unit__study=study).select_related(
            "response__question__topic"
        )
    }
    pairs = {
        p.unit_id: p
        for p in StudyPair.objects.filter(unit__study=study).select_related(
            "response_a__question__topic", "response_b"
        )
    }
    shown = [a.response_id for a in answers.values()]
    scores = dict(
        ResponseScore.objects.filter(grading_run=grading_run, response_id__in=shown).values_list(
            "response_id", "score"
        )
    )
    labels = {m.id: m.label for m in models}
    rows = []
    for index, unit in enumerate(units):
        row = dict.fromkeys(UNIT_COLUMNS)
        row |= {"unit": index, "pk": unit.pk, "label": unit.name, "kind": unit.kind}
        if (answer := answers.get(unit.pk)) is not None:
            response = answer.response
            row |= {
                "response_id": response.pk,
                "model_id": response.model_id,
                "model_label": labels.get(response.model_id),
                "topic": response.question.topic.name,
                "band": answer.band,
                "score": scores.get(response.pk, np.nan),
                "score_drawn": answer.score,
            }
        elif (pair := pairs.get(unit.pk)) is not None:
            row |= {
                "response_id": pair.response_a_id,
                "model_id": pair.response_a.model_id,
                "model_label": labels.get(pair.response_a.model_id),
                "topic": pair.response_a.question.topic.name,
                "response_b_id": pair.response_b_id,
                "model_b_id": pair.response_b.model_id,
                "model_b_label": labels.get(pair.response_b.model_id),
            }
        rows.append(row)
    frame = pd.DataFrame(rows, columns=UNIT_COLUMNS)
    frame["score"] = frame["score"].astype(float)
    frame["score_drawn"] = frame["score_drawn"].astype(float)
    return frame


def _criteria(study: Study) -> list[PresentationCriterion]:
    return [
        PresentationCriterion(
            item=c.item.code,
            wording=c.item.wording,
            criterion=c.criterion_id,
            text=c.criterion.text,
            polarity=c.criterion.polarity,
        )
        for c in CriterionItem.objects.filter(item__study=study, item__attention_check=False)
        .select_related("item", "criterion")
        # In the survey's items' order, as the report lists them.
        .order_by("item__order", "item__code")
    ]


def _verdicts(
    units: pd.DataFrame, criteria: list[PresentationCriterion], grading_run: GradingRun
) -> pd.DataFrame:
    import pandas as pd

    answers = units[units["kind"] == UnitKind.ANSWER]
    unit_of = dict(zip(answers["response_id"], answers["unit"], strict=True))
    item_of = {c.criterion: c.item for c in criteria}
    rows = (
        Judgment.objects.filter(
            grading_run=grading_run,
            response_id__in=list(unit_of),
            criterion__shared_source_id__in=list(item_of),
            status=CallState.DONE,
        )
        .order_by("response_id", "criterion__order", "pk")
        .values_list("response_id", "criterion__shared_source_id", "met")
    )
    found, seen = [], set()
    for response, shared, met in rows:
        # A rubric holds a shared criterion once; should it hold it twice, the first counts.
        if (response, shared) in seen:
            continue
        seen.add((response, shared))
        found.append((unit_of[response], item_of[shared], shared, bool(met), response))
    return pd.DataFrame(found, columns=VERDICT_COLUMNS)


def _pairs(study: Study, units: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    excluded, _reasons = _excluded_humans(study)
    pair_units = units[units["kind"] == UnitKind.PAIR].set_index("pk")
    rows = (
        Answer.objects.filter(
            assignment__study_scenario__study=study,
            assignment__study_scenario__kind=UnitKind.PAIR,
            item__kind=ItemKind.PAIR,
            item__attention_check=False,
            value__in=["a", "b", "equal"],
            assignment__status__in=[AssignmentStatus.COMPLETED, AssignmentStatus.PROXY],
        )
        .exclude(assignment__participant_id__in=excluded)
        .order_by("assignment__study_scenario_id", "assignment__participant_id", "item__code")
        .values_list(
            "assignment__participant_id",
            "assignment__participant__kind",
            "assignment__participant__model_id",
            "assignment__participant__variant",
            "assignment__study_scenario_id",
            "item__code",
            "value",
        )
    )
    found = []
    for rater, kind, model_id, variant, unit_pk, item, value in rows:
        if unit_pk not in pair_units.index:
            continue  # a pair unit whose answers are not linked: nothing to rank
        unit = pair_units.loc[unit_pk]
        group = PEOPLE if kind == ParticipantKind.HUMAN else proxy_key(model_id, variant)
        found.append(
            (group, rater, int(unit["unit"]), item, unit["model_id"], unit["model_b_id"], value)
        )
    return pd.DataFrame(found, columns=PAIR_COLUMNS)


def _model_scores(grading_run: GradingRun, models: list[Model]) -> pd.DataFrame:
    import pandas as pd

    rows = ResponseScore.objects.filter(grading_run=grading_run).values_list(
        "response__model_id", "response__question_id", "score"
    )
    scores = pd.DataFrame(list(rows), columns=["model_id", "question", "score"])
    per_question = scores.groupby(["model_id", "question"])["score"].mean()
    found = []
    for model in models:
        mine = scores[scores["model_id"] == model.id]
        means = per_question.get(model.id) if len(mine) else None
        found.append(
            {
                "model_id": model.id,
                "model_label": model.label,
                "mean_score": float(means.mean()) if means is not None else float("nan"),
                "n": len(mine),
                "questions": 0 if means is None else len(means),
            }
        )
    return pd.DataFrame(found, columns=SCORE_COLUMNS)


def answer_study_data(*, study: Study) -> AnswerStudyData:
    draw = _draw(study)
    grading_run = draw.grading_run
    models = benchmark_models(run=grading_run)
    units = _units(study, grading_run, models)
    criteria = _criteria(study)
    return AnswerStudyData(
        study=study,
        survey=survey_data(study=study),
        units=units,
        verdicts=_verdicts(units, criteria, grading_run),
        pairs=_pairs(study, units),
        model_scores=_model_scores(grading_run, models),
        grading_run_id=grading_run.pk,
        sampling_run_id=draw.sampling_run_id,
        draw=draw,
        run=_run_info(grading_run),
        models=models,
        criteria=criteria,
    )


def answer_study_fingerprint(*, study: Study) -> str:
    """A digest that changes whenever anything the report reads changes: the survey's
    answers and participants (the survey report's fingerprint), the units' links to the
    benchmark's answers, the presentation items' criteria, and the grading run's scores and
    the verdicts on the drawn answers. Kept results are valid while it is the same."""
    draw = AnswerDraw.objects.filter(study=study).values("pk", "grading_run_id").first()
    if draw is None:
        return hashlib.sha256(
            repr((REPORT_METHODS, survey_fingerprint(study=study))).encode()
        ).hexdigest()
    run = draw["grading_run_id"]
    answers = StudyAnswer.objects.filter(unit__study=study)
    shown = list(answers.values_list("response_id", flat=True))
    links = (
        sorted(answers.values_list("unit_id", "response_id")),
        sorted(
            StudyPair.objects.filter(unit__study=study).values_list(
                "unit_id", "response_a_id", "response_b_id"
            )
        ),
        sorted(
            CriterionItem.objects.filter(item__study=study).values_list("item_id", "criterion_id")
        ),
    )
    scores = ResponseScore.objects.filter(grading_run_id=run).aggregate(
        n=Count("pk"),
        top=Max("pk"),
        last=Max("computed_at"),
        total=Sum("score"),
        # Weighted by the answer, so that two scores trading places changes it too.
        weighted=Sum(F("score") * Cast("response_id", FloatField())),
    )
    judgments = Judgment.objects.filter(grading_run_id=run, response_id__in=shown).aggregate(
        n=Count("pk"),
        top=Max("pk"),
        last=Max("completed_at"),
        n_done=Count("pk", filter=Q(status=CallState.DONE)),
        n_met=Count("pk", filter=Q(met=True)),
    )
    text = repr(
        (
            REPORT_METHODS,
            survey_fingerprint(study=study),
            draw,
            links,
            sorted(scores.items()),
            sorted(judgments.items()),
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()
