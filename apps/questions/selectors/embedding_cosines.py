"""Reads for the cosine of embeddings: the models that can make them, the jobs and their
progress (counted from the rows), the values and failures of a question, and the means by
model over a set of questions. Each mean carries its method and model as data."""

from dataclasses import dataclass

from django.db.models import Avg, Case, CharField, Count, Q, QuerySet, Value, When

from apps.llm.models import ModelConfig, ModelKind

from ..models import (
    EmbeddingCosine,
    EmbeddingCosineJob,
    EmbeddingCosineJobStatus,
    EmbeddingCosineStatus,
    Question,
)
from ..similarity import EMBEDDING_COSINE_CHOICE, EMBEDDING_COSINE_METHOD

DONE, FAILED, PENDING = (
    EmbeddingCosineStatus.DONE,
    EmbeddingCosineStatus.FAILED,
    EmbeddingCosineStatus.PENDING,
)


def embedding_models() -> QuerySet[ModelConfig]:
    """The models a researcher may pick to embed with."""
    return ModelConfig.objects.filter(kind=ModelKind.EMBEDDING, active=True).order_by(
        "display_name"
    )


def embedding_cosine_jobs(*, limit: int = 10) -> list[EmbeddingCosineJob]:
    """The latest jobs, each with its rows counted by state and its percent finished."""
    jobs = EmbeddingCosineJob.objects.select_related("model", "created_by").annotate(
        total=Count("cosines"),
        done=Count("cosines", filter=Q(cosines__status=DONE)),
        failed=Count("cosines", filter=Q(cosines__status=FAILED)),
        pending=Count("cosines", filter=Q(cosines__status=PENDING)),
    )
    jobs = list(jobs[:limit])
    for job in jobs:
        job.finished_rows = job.done + job.failed
        job.percent = 100 * job.finished_rows / job.total if job.total else 100
        job.under_way = job.status in (
            EmbeddingCosineJobStatus.QUEUED,
            EmbeddingCosineJobStatus.RUNNING,
        )
    return jobs


def embedding_cosines_of(*, question: Question) -> list[EmbeddingCosine]:
    """The question's cosines of embeddings (or their failures), one per model."""
    return list(
        EmbeddingCosine.objects.filter(question=question)
        .select_related("model", "original_embedding", "rewrite_embedding")
        .order_by("model__display_name")
    )


def embedding_cosine_failures(*, limit: int = 50) -> list[EmbeddingCosine]:
    """Failed cosines, latest first, with their reasons."""
    return list(
        EmbeddingCosine.objects.filter(status=FAILED)
        .select_related("question", "model")
        .order_by("-computed_at", "-pk")[:limit]
    )


@dataclass(frozen=True)
class EmbeddingCosineMean:
    """The mean cosine of embeddings by one model over some questions, with what it rests
    on and how it was computed."""

    model: ModelConfig
    mean: float | None  # None: no question has a computed value
    n: int  # questions with a computed value
    failed: int
    pending: int
    method: str = EMBEDDING_COSINE_METHOD
    choice: str = EMBEDDING_COSINE_CHOICE

    @property
    def litellm_model(self) -> str:
        return self.model.litellm_model


def embedding_cosine_means(*, questions: QuerySet[Question]) -> list[EmbeddingCosineMean]:
    """For each model that has cosines for any of `questions`: their mean, over those with
    a computed value, and how many failed or are being computed."""
    grouped = (
        EmbeddingCosine.objects.filter(question__in=questions.order_by().values("pk"))
        .values("model")
        .order_by()
        .annotate(
            mean=Avg("cosine", filter=Q(status=DONE)),
            n=Count("pk", filter=Q(status=DONE)),
            failed=Count("pk", filter=Q(status=FAILED)),
            pending=Count("pk", filter=Q(status=PENDING)),
        )
    )
    rows = list(grouped)
    models = ModelConfig.objects.in_bulk([row["model"] for row in rows])
    means = [EmbeddingCosineMean(model=models[row.pop("model")], **row) for row in rows]
    return sorted(means, key=lambda m: m.model.display_name)


def embedding_cosines_with_method(cosines: QuerySet[EmbeddingCosine]) -> QuerySet:
    """`cosines` with `method`: beside every number, how it was computed (blank where there
    is no number), for exports."""
    described = f"{EMBEDDING_COSINE_METHOD}. {EMBEDDING_COSINE_CHOICE}"
    method = Case(
        When(cosine__isnull=False, then=Value(described)),
        default=Value(""),
        output_field=CharField(),
    )
    return cosines.annotate(method=method)
