import datetime as dt
import random
import re
from collections.abc import Iterable

from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce

from apps.llm.models import OFFLINE_PREFIX, PromptTemplate
from apps.llm.progress import (
    RunCounts,
    RunProgress,
    counted,
    rows_progress,
)
from apps.llm.selectors import model_params_notes, params_text, prompt_additions
from apps.questions.models import LengthBucket, Question, Topic

from .models import LEASE_STATES, Response, ResponseStatus, RunKind, SamplingRun
from .selection import question_conditions


def reference_model_ids() -> list[int]:
    run = SamplingRun.objects.filter(kind=RunKind.REFERENCE).first()
    return list(run.model_configs.filter(active=True).values_list("pk", flat=True)) if run else []


def answers_ready(
    *, question: Question, count: int = 2, rng: random.Random | None = None
) -> list[Response]:
    """Up to `count` finished answers to `question` from reference models, one per model,
    drawn at random; reading only (nothing is generated)."""
    rng = rng or random.Random()
    done = list(
        Response.objects.filter(
            question=question, model_id__in=reference_model_ids(), status=ResponseStatus.DONE
        ).select_related("model", "run")
    )
    by_model: dict[int, list[Response]] = {}
    for response in done:
        by_model.setdefault(response.model_id, []).append(response)
    models = rng.sample(sorted(by_model), min(count, len(by_model)))
    return [rng.choice(by_model[m]) for m in models]


def answers_by_ids(*, question: Question, ids: list[int]) -> list[Response]:
    found = Response.objects.filter(question=question, pk__in=ids).select_related("model", "run")
    order = {pk: i for i, pk in enumerate(ids)}
    return sorted(found, key=lambda r: order[r.pk])


def runs_overview(*, limit: int = 10) -> QuerySet[SamplingRun]:
    """The most recent benchmark runs, each with `responses_total` and `responses_done`
    (the reference run is the rubric editor's, not a researcher's run)."""
    return (
        SamplingRun.objects.filter(kind=RunKind.BENCHMARK)
        .order_by("-created_at")
        .annotate(
            responses_total=Count("responses"),
            responses_done=Count("responses", filter=Q(responses__status=ResponseStatus.DONE)),
        )[:limit]
    )


# --- the sampling-run pages -----------------------------------------------------------------

# The question condition the rubrics app registers (apps/runs/selection.py): runs sample
# the questions that can be graded unless the researcher says otherwise.
APPROVED_RUBRIC = "approved_rubric"


def _through_count(name: str) -> Coalesce:
    """How many rows a run has in one of its many-to-many tables, without joining the two
    tables into one product (18 models x 450 questions per run)."""
    through = SamplingRun._meta.get_field(name).remote_field.through
    counted = (
        through.objects.filter(samplingrun_id=OuterRef("pk"))
        .values("samplingrun_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def sampling_runs() -> QuerySet[SamplingRun]:
    """Benchmark runs, newest first, with `models_count` and `questions_count`."""
    return (
        SamplingRun.objects.filter(kind=RunKind.BENCHMARK)
        .order_by("-created_at", "-pk")
        .annotate(
            models_count=_through_count("model_configs"),
            questions_count=_through_count("questions"),
        )
    )


def runs_counts(*, run_ids: Iterable[int]) -> dict[int, RunCounts]:
    """Each run's response counts and cost so far, in one query (a page of the run list)."""
    rows = (
        Response.objects.filter(run_id__in=list(run_ids))
        .values("run_id")
        .order_by()
        .annotate(**counted(LEASE_STATES, ResponseStatus.DONE))
    )
    return {row.pop("run_id"): RunCounts(**row) for row in rows}


def run_progress(*, run: SamplingRun, now: dt.datetime | None = None) -> RunProgress:
    """Where a run stands, counted from its rows: the page polls this."""
    return rows_progress(
        Response.objects.filter(run=run),
        states=LEASE_STATES,
        done=ResponseStatus.DONE,
        model_field="model_id",
        launched_at=run.launched_at,
        now=now,
    )


def run_responses(
    *, run: SamplingRun, model_id: int | None = None, status: str = "", question: str = ""
) -> QuerySet[Response]:
    """A run's responses for browsing, filtered by model, status and question (its
    external id, or a part of its text)."""
    responses = Response.objects.filter(run=run).select_related("model", "question__topic")
    if model_id:
        responses = responses.filter(model_id=model_id)
    if status:
        responses = responses.filter(status=status)
    if question := question.strip():
        responses = responses.filter(
            Q(question__external_id__iexact=question) | Q(question__text__icontains=question)
        )
    return responses.order_by("question__external_id", "model__display_name", "sample_index", "pk")


# ModelConfig.is_offline in SQL: the model string's last segment starts with the prefix.
OFFLINE_MODEL = Q(model__litellm_model__regex=rf"(^|/){re.escape(OFFLINE_PREFIX)}[^/]*$")
# The responses export's (header, column) pairs: the run page's CSV, the console's COPY
# export (copy_csv_chunks) and a grading run's archive.
RESPONSE_EXPORT_COLUMNS = (
    ("run", "run__name"),
    ("question", "question__external_id"),
    ("topic", "question__topic__name"),
    ("model", "model__display_name"),
    ("litellm_model", "model__litellm_model"),
    ("offline", "offline"),
    ("sample_index", "sample_index"),
    ("seed", "seed"),
    ("status", "status"),
    ("error_kind", "error_kind"),
    ("error", "error"),
    ("text", "text"),
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cost_usd", "cost_usd"),
    ("latency_ms", "latency_ms"),
    ("attempts", "attempts"),
    ("completed_at", "completed_at"),
)
RESPONSE_EXPORT_HEADER = tuple(header for header, _field in RESPONSE_EXPORT_COLUMNS)
RESPONSE_EXPORT_FIELDS = tuple(field for _header, field in RESPONSE_EXPORT_COLUMNS)


def responses_export(*, responses: QuerySet[Response]) -> QuerySet[Response]:
    """The responses with what RESPONSE_EXPORT_COLUMNS names (`offline` computed in SQL),
    in the order of their ids: streamed by PostgreSQL's COPY, a 40,500-row run in flat
    memory."""
    offline = ExpressionWrapper(OFFLINE_MODEL, output_field=BooleanField())
    return responses.annotate(offline=offline).order_by("pk")


def selection_described(*, selection: dict) -> list[str]:
    """A run's stored `selection` in words, for its page."""
    labels = {c.key: c.label.lower() for c in question_conditions()}
    parts = [labels.get(key, key) for key in selection.get("conditions", [])]
    if topics := selection.get("topics"):
        names = Topic.objects.filter(pk__in=topics).values_list("name", flat=True)
        parts.append("topics: " + ", ".join(names))
    buckets = dict(LengthBucket.choices)
    if lengths := selection.get("length_buckets"):
        parts.append("length: " + ", ".join(buckets.get(b, b).lower() for b in lengths))
    prior = selection.get("prior_attempt")
    if prior is not None:
        parts.append("mentions a prior attempt" if prior else "mentions no prior attempt")
    for need in ("sensemaking", "guidance"):
        asked = selection.get(f"needs_{need}")
        if asked is not None:
            parts.append(f"asks for {need}" if asked else f"does not ask for {need}")
    # Runs chosen before the two need labels stored one list of need types.
    if need_types := selection.get("need_types"):
        parts.append("need type: " + ", ".join(str(n) for n in need_types))
    return parts


# The published benchmark put each question to each model as it is: the question alone as
# the only user message, no system message, the model's default parameters.
PUBLISHED_SAMPLE_TEXTS = frozenset({"$question", "${question}"})


def sample_prompt_departures(*, prompt: PromptTemplate) -> list[str]:
    """What a sample prompt adds to the question, in plain words (nothing: as published)."""
    return prompt_additions(prompt=prompt, published=PUBLISHED_SAMPLE_TEXTS, what="the question")


def run_fidelity_notes(*, run: SamplingRun) -> list[str]:
    """Where a sampling run departs from how the published benchmark asked its models."""
    notes = []
    if added := sample_prompt_departures(prompt=run.prompt):
        notes.append(
            "The published benchmark gave each model the question alone, as the only user "
            f"message; in this run {' and '.join(added)}."
        )
    if run.params:
        notes.append(
            "The published benchmark used each model's default parameters; this run sends "
            f"{params_text(run.params)} with every call."
        )
    return notes + model_params_notes(models=run.model_configs.order_by("display_name"))
