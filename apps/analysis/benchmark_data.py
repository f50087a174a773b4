"""A grading run's scores, read once from the stored rows, for its benchmark report.

One row per scored answer (its model, question, topic, sample index, score, and the
question's prior-attempt and two need labels), read in one query; the met counts of the
judgments per model x polarity x kind aggregated in SQL (a run holds some 500,000
judgments: they never come into Python); the answers without a score, by why, from the
grading app's own selector; the calibrations of the run, by the calibration report's own
selectors. `benchmark_fingerprint` changes whenever any of it would.

pandas is imported where the frames are built: the pages import this module for its lists
and the run's models, in every web process, most of which never build one.
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import Count, F, FloatField, Max, Q, Sum
from django.db.models.functions import Cast

from apps.grading.models import CallState, ExpertJudgment, GradingRun, Judgment, ResponseScore
from apps.grading.selectors import calibration as calibration_selectors
from apps.grading.selectors import runs as run_selectors
from apps.llm.models import ModelConfig
from apps.questions.models import LabelStatus, Question, Topic
from apps.rubrics.models import Rubric
from apps.runs import selectors as sampling_selectors
from apps.runs.models import Response, ResponseStatus

from .labels import ModelName, model_names

if TYPE_CHECKING:
    import pandas as pd

# A question's strata labels count once a second researcher has verified them, or the two
# have resolved a disagreement (apps/questions/selectors/strata.py, SETTLED).
VERIFIED_LABELS = (LabelStatus.VERIFIED, LabelStatus.RESOLVED)
# A question's strata labels, as the frames' columns: a prior attempt mentioned, and each of
# the two needs the published benchmark labels independently (sensemaking, guidance).
LABELS = ["prior", "sensemaking", "guidance"]
SCORE_COLUMNS = ["response", "model", "question", "sample", "score", "rubric"]
MET_COLUMNS = ["model", "polarity", "kind", "judgments", "met"]
# Changed whenever the report is computed or laid out differently, so that a report kept in
# the cache by an older version of the code is never served.
REPORT_METHODS = 4


@dataclass(frozen=True)
class Model:
    id: int
    name: str
    family: str
    version: str
    offline: bool
    released_on: datetime.date | None = None  # the provider's release date, if known
    created_at: datetime.datetime | None = None  # when it was added to Assay
    short: str = ""  # the name a report shows (apps/analysis/labels.py); the name if empty

    @property
    def label(self) -> ModelName:
        """The name a report shows, short, with the offline mark once."""
        return ModelName(self.short or self.name, offline=self.offline)


@dataclass(frozen=True)
class RunInfo:
    """What every number of the report traces to."""

    id: int
    name: str
    status: str
    sampling_run_id: int
    sampling_run: str
    grader: str
    grader_offline: bool
    prompt: str  # purpose, as the page names it
    prompt_version: int
    mode: str
    temperature: object
    mode_key: str = ""  # GradingMode's value
    grader_params: tuple[tuple[str, object], ...] = ()
    sampling_prompt: str = ""  # "sample v2"
    sampling_params: tuple[tuple[str, object], ...] = ()
    samples_per_item: int = 0
    # Where the sampling run and the grading run depart from the published design.
    sampling_notes: tuple[str, ...] = ()
    grading_notes: tuple[str, ...] = ()

    @property
    def fidelity_notes(self) -> tuple[str, ...]:
        return (*self.sampling_notes, *self.grading_notes)

    @property
    def summary(self) -> str:
        grader = self.grader + (" (offline demo model)" if self.grader_offline else "")
        return (
            f"grading run {self.id} ({self.name}): grader {grader}, "
            f"{self.prompt.lower()} prompt version {self.prompt_version}, {self.mode.lower()}"
        )


@dataclass(frozen=True)
class CalibrationSummary:
    """The headline of one calibration of the run, as the calibration report computes it."""

    id: int
    set_name: str
    answers: int  # sampled answers in the set
    score: object  # apps.grading.selectors.calibration.ScoreRow over all criteria
    agreement: object  # AgreementRow over all criteria
    left_out: int  # pairs left out (not settled, or no usable auto-rater judgment)


@dataclass
class BenchmarkData:
    run: RunInfo
    models: list[Model]  # the models that answered in the sampling run, by name
    topics: list[tuple[str, str]]  # (slug, name) of the questions' topics, in the bank's order
    # index: question id; external_id, topic, and the labels prior, sensemaking, guidance
    # (booleans) and verified
    questions: pd.DataFrame
    scores: pd.DataFrame  # one row per scored answer (SCORE_COLUMNS + question labels)
    met: pd.DataFrame  # MET_COLUMNS: judgments of the scored answers, and how many met
    rubrics: pd.DataFrame  # rubric (id), version, question: the versions the scores used
    missing: list[dict] = field(default_factory=list)  # scores_by_model's rows, by model id
    errors: list[dict] = field(default_factory=list)  # errored judgments by kind
    calibrations: list[CalibrationSummary] = field(default_factory=list)

    def model(self, model_id: int) -> Model:
        return self.models_by_id[model_id]

    @property
    def models_by_id(self) -> dict[int, Model]:
        return {m.id: m for m in self.models}


def _run_info(run: GradingRun) -> RunInfo:
    run = GradingRun.objects.select_related("sampling_run__prompt", "grader", "prompt").get(
        pk=run.pk
    )
    return RunInfo(
        id=run.pk,
        name=run.name,
        status=run.get_status_display(),
        sampling_run_id=run.sampling_run_id,
        sampling_run=run.sampling_run.name,
        grader=run.grader.display_name,
        grader_offline=run.grader.is_offline,
        prompt=run.prompt.get_purpose_display(),
        prompt_version=run.prompt.version,
        mode=run.get_mode_display(),
        temperature=run.params.get("temperature", 0),
        mode_key=run.mode,
        grader_params=tuple(sorted(run.params.items())),
        sampling_prompt=str(run.sampling_run.prompt),
        sampling_params=tuple(sorted(run.sampling_run.params.items())),
        samples_per_item=run.sampling_run.samples_per_item,
        sampling_notes=tuple(sampling_selectors.run_fidelity_notes(run=run.sampling_run)),
        grading_notes=tuple(run_selectors.run_fidelity_notes(run)),
    )


def _models(run: GradingRun) -> list[Model]:
    answered = Response.objects.filter(run_id=run.sampling_run_id).values("model_id")
    configs = list(ModelConfig.objects.filter(pk__in=answered).order_by("display_name", "pk"))
    names = model_names([(m.display_name, m.is_offline) for m in configs])
    return [
        Model(
            id=m.pk,
            name=m.display_name,
            family=m.family,
            version=m.version,
            offline=m.is_offline,
            released_on=m.released_on,
            created_at=m.created_at,
            short=name.name,
        )
        for m, name in zip(configs, names, strict=True)
    ]


def benchmark_models(*, run: GradingRun) -> list[Model]:
    """The models a report of the run shows (those that answered in its sampling run): one
    small query, for checking a choice of models before the report is asked for."""
    return _models(run)


def _questions(run: GradingRun) -> pd.DataFrame:
    import pandas as pd

    asked = Response.objects.filter(run_id=run.sampling_run_id).values("question_id")
    rows = Question.objects.filter(pk__in=asked).values_list(
        "pk",
        "external_id",
        "topic__name",
        "mentions_prior_attempt",
        "needs_sensemaking",
        "needs_guidance",
        "label_status",
    )
    frame = pd.DataFrame(
        list(rows), columns=["question", "external_id", "topic", *LABELS, "status"]
    )
    frame["verified"] = frame["status"].isin(VERIFIED_LABELS)
    frame = frame.astype(dict.fromkeys(LABELS, bool))
    return frame.drop(columns="status").set_index("question").sort_index()


def _scores(run: GradingRun, questions: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    rows = (
        ResponseScore.objects.filter(grading_run=run)
        .order_by()
        .values_list(
            "response_id",
            "response__model_id",
            "response__question_id",
            "response__sample_index",
            "score",
            "rubric_id",
        )
    )
    with connection.cursor() as cursor:
        # The ORM's SQL, fetched as tuples straight into the frame: 40,000 rows would spend
        # longer in the ORM's per-row conversion than in the database.
        cursor.execute(*rows.query.sql_with_params())
        frame = pd.DataFrame(cursor.fetchall(), columns=SCORE_COLUMNS)
    frame = frame.astype(
        {
            "response": "int64",
            "model": "int64",
            "question": "int64",
            "sample": "int64",
            "score": "float64",
            "rubric": "int64",
        }
    )
    labels = questions[["topic", *LABELS, "verified"]]
    return frame.join(labels, on="question").sort_values("response", ignore_index=True)


def _met(run: GradingRun) -> pd.DataFrame:
    """Judgments of the scored answers, and how many were met, per model x polarity x kind:
    one GROUP BY in the database."""
    import pandas as pd

    rows = (
        Judgment.objects.filter(
            grading_run=run, status=CallState.DONE, response__scores__grading_run=run
        )
        .values_list("response__model_id", "criterion__polarity", "criterion__kind")
        .annotate(judgments=Count("pk"), met_n=Count("pk", filter=Q(met=True)))
        .order_by()
    )
    return pd.DataFrame(list(rows), columns=MET_COLUMNS)


def _rubrics(run: GradingRun) -> pd.DataFrame:
    import pandas as pd

    used = ResponseScore.objects.filter(grading_run=run).values("rubric_id")
    rows = Rubric.objects.filter(pk__in=used).values_list("pk", "version", "question_id")
    return pd.DataFrame(list(rows), columns=["rubric", "version", "question"])


def _missing(run: GradingRun, models: list[Model]) -> list[dict]:
    """scores_by_model's rows (answers, scored, errored, unanswered, pending per model),
    keyed by model id: the grading run's page counts them the same way."""
    ids = {m.name: m.id for m in models}
    rows = []
    for row in run_selectors.scores_by_model(run=run):
        model_id = ids.get(row["model__display_name"])
        if model_id is not None:
            rows.append({"model": model_id, **{k: row[k] for k in MISSING_KEYS}})
    return rows


MISSING_KEYS = ("answers", "scored", "missing", "errored", "unanswered", "pending")


def _errors(run: GradingRun) -> list[dict]:
    rows = (
        Judgment.objects.filter(grading_run=run, status=CallState.ERROR)
        .values("error_kind")
        .annotate(judgments=Count("pk"), answers=Count("response_id", distinct=True))
        .order_by("-judgments", "error_kind")
    )
    return [
        {
            "kind": row["error_kind"] or "worker",
            "label": run_selectors.error_label(row["error_kind"]),
            "judgments": row["judgments"],
            "answers": row["answers"],
        }
        for row in rows
    ]


def _calibrations(run: GradingRun) -> list[CalibrationSummary]:
    found = []
    for calibration in run.calibrations.select_related("calibration_set").order_by("pk"):
        statistics = calibration_selectors.run_statistics(
            calibration_set=calibration.calibration_set, grading_run=run
        )
        found.append(
            CalibrationSummary(
                id=calibration.pk,
                set_name=calibration.calibration_set.name,
                answers=len({p.sample.pk for p in statistics.pairs}),
                score=statistics.scores[0],
                agreement=statistics.agreements[0],
                left_out=sum(count for count, _reason in statistics.excluded),
            )
        )
    return found


def _topics(questions: pd.DataFrame) -> list[tuple[str, str]]:
    present = set(questions["topic"])
    return [
        (slug, name) for slug, name in Topic.objects.values_list("slug", "name") if name in present
    ]


def benchmark_data(*, run: GradingRun) -> BenchmarkData:
    models = _models(run)
    questions = _questions(run)
    return BenchmarkData(
        run=_run_info(run),
        models=models,
        topics=_topics(questions),
        questions=questions,
        scores=_scores(run, questions),
        met=_met(run),
        rubrics=_rubrics(run),
        missing=_missing(run, models),
        errors=_errors(run),
        calibrations=_calibrations(run),
    )


def benchmark_fingerprint(*, run: GradingRun) -> str:
    """A digest that changes whenever anything the report reads changes: a score computed,
    changed or dropped, a judgment made, retried or changed, an answer finished, a question's
    labels or topic, a model's name, family, version or release date, a calibration or its
    experts' labels. Kept reports are
    valid while it is the same. The run's creation time keeps two databases' runs of the same
    id apart in a shared cache."""
    scores = ResponseScore.objects.filter(grading_run=run).aggregate(
        n=Count("pk"),
        top=Max("pk"),
        last=Max("computed_at"),
        total=Sum("score"),
        # Weighted by the answer, so that two scores trading places changes it too.
        weighted=Sum(F("score") * Cast("response_id", FloatField())),
    )
    judgments = Judgment.objects.filter(grading_run=run).aggregate(
        n=Count("pk"),
        top=Max("pk"),
        last=Max("completed_at"),
        n_done=Count("pk", filter=Q(status=CallState.DONE)),
        n_error=Count("pk", filter=Q(status=CallState.ERROR)),
        n_met=Count("pk", filter=Q(met=True)),
    )
    answers = Response.objects.filter(run_id=run.sampling_run_id).aggregate(
        n=Count("pk"),
        done=Count("pk", filter=Q(status=ResponseStatus.DONE)),
        last=Max("completed_at"),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT md5(coalesce(string_agg(concat_ws(':', q.id, q.external_id, t.name,"
            " q.mentions_prior_attempt, q.needs_sensemaking, q.needs_guidance, q.label_status),"
            " ',' ORDER BY q.id), ''))"
            " FROM questions_question q JOIN questions_topic t ON t.id = q.topic_id"
            " WHERE q.id IN (SELECT question_id FROM runs_response WHERE run_id = %s)",
            [run.sampling_run_id],
        )
        questions = cursor.fetchone()[0]
        cursor.execute(
            "SELECT md5(coalesce(string_agg(concat_ws(':', m.id, m.display_name, m.family,"
            " m.litellm_model, m.version, m.released_on, m.created_at, m.params), ','"
            " ORDER BY m.id), ''))"
            " FROM llm_modelconfig m"
            " WHERE m.id IN (SELECT model_id FROM runs_response WHERE run_id = %s)",
            [run.sampling_run_id],
        )
        models = cursor.fetchone()[0]
        cursor.execute(
            "SELECT md5(coalesce(string_agg(concat_ws(':', t.id, t.name, t.order), ','"
            " ORDER BY t.id), '')) FROM questions_topic t"
        )
        topics = cursor.fetchone()[0]
    calibrations = list(
        run.calibrations.order_by("pk").values_list("pk", "calibration_set_id", "created_at")
    )
    experts = ExpertJudgment.objects.filter(
        sample__calibration_set__in=[c[1] for c in calibrations]
    ).aggregate(
        n=Count("pk"),
        last=Max("updated_at"),
        settled=Count("pk", filter=Q(final_met__isnull=False)),
    )
    head = GradingRun.objects.filter(pk=run.pk).values_list(
        "pk",
        "created_at",
        "name",
        "status",
        "grader_id",
        "prompt_id",
        "mode",
        "params",
        "sampling_run__prompt_id",
        "sampling_run__params",
        "sampling_run__samples_per_item",
    )
    text = repr(
        (
            REPORT_METHODS,
            list(head),
            sorted(scores.items()),
            sorted(judgments.items()),
            sorted(answers.items()),
            questions,
            models,
            topics,
            calibrations,
            sorted(experts.items()),
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()


def grading_runs_with_scores():
    """Grading runs, newest first, each with `scored` (answers with a score) counted."""
    return (
        GradingRun.objects.select_related("sampling_run", "grader", "prompt")
        .annotate(scored=Count("scores"))
        .order_by("-created_at", "-pk")
    )
