"""Cosine of embeddings between every approved rewrite and its original, with an embedding
model the researcher picks: the researcher's choice of method, beside the bank's TF-IDF
cosine (apps/questions/similarity.py says what each is).

A job is made whole at its start: one pending `EmbeddingCosine` per question with an
approved rewrite, for the job's model (a question's earlier value for that model is
replaced). A worker (workers/questions.py) then works the pending rows in chunks: the two
texts of each are embedded through apps/llm (`texts_embed`: a text already embedded by the
model is read, never sent again), the cosine is computed from the two stored vectors, and
each row is written in a short transaction. A chunk whose call fails keeps the reason on
its rows and no number. Running the task again (a redelivered message, a worker that died)
goes on with the rows still pending; starting a new job for the same model replaces the
one under way, whose worker stops at its next chunk.
"""

import logging

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.llm import dispatch
from apps.llm.embeddings import texts_embed
from apps.llm.errors import LLMError
from apps.llm.models import CallStatus, ModelConfig

from ..errors import QuestionError
from ..models import (
    EmbeddingCosine,
    EmbeddingCosineJob,
    EmbeddingCosineJobStatus,
    EmbeddingCosineStatus,
    Question,
)
from ..similarity import vector_cosine

log = logging.getLogger(__name__)
CHUNK = 32  # questions per round: 64 texts, one embeddings call (apps/llm/embeddings.py)
MAX_ERROR_CHARS = 2000
UNDER_WAY = [EmbeddingCosineJobStatus.QUEUED, EmbeddingCosineJobStatus.RUNNING]
RESET = [
    "job",
    "status",
    "cosine",
    "original_embedding",
    "rewrite_embedding",
    "error",
    "error_kind",
    "computed_at",
]


def embedding_cosine_job_start(*, model: ModelConfig, user=None) -> EmbeddingCosineJob:
    """A queued job computing, with `model`, the cosine of every approved rewrite to its
    original. The caller queues its task after the transaction commits."""
    if not model.serves_embeddings:
        raise QuestionError(
            f"{model.display_name} is not an embedding model: pick a model whose kind is "
            "embeddings (console: LLM gateway, Model configs)."
        )
    if not model.active:
        raise QuestionError(f"{model.display_name} is switched off.")
    with transaction.atomic():
        # Locked, so that two jobs started at once for one model take turns here.
        ModelConfig.objects.select_for_update().filter(pk=model.pk).first()
        questions = list(
            Question.objects.filter(rewrite__isnull=False)
            .exclude(original_text="")
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if not questions:
            raise QuestionError("No question has an approved rewrite yet: nothing to compare.")
        EmbeddingCosineJob.objects.filter(model=model, status__in=UNDER_WAY).update(
            status=EmbeddingCosineJobStatus.SUPERSEDED, finished_at=timezone.now()
        )
        job = EmbeddingCosineJob.objects.create(model=model, created_by=user)
        EmbeddingCosine.objects.bulk_create(
            [EmbeddingCosine(question_id=pk, model=model, job=job) for pk in questions],
            update_conflicts=True,
            unique_fields=["question", "model"],
            update_fields=RESET,
        )
        dispatch.start("questions.embedding_cosines", job.pk)
    return job


def embedding_cosine_job_run(*, job_id: int) -> EmbeddingCosineJob | None:
    """Compute the job's pending cosines; the job, finished, or None when it is not to run
    (finished, or replaced by a newer job). Safe to run twice: only pending rows are
    worked, and only while they are still the job's."""
    claimed = EmbeddingCosineJob.objects.filter(pk=job_id, status__in=UNDER_WAY).update(
        status=EmbeddingCosineJobStatus.RUNNING,
        started_at=Coalesce(F("started_at"), timezone.now()),
    )
    if not claimed:
        return None
    job = EmbeddingCosineJob.objects.select_related("model").get(pk=job_id)
    while True:
        if not EmbeddingCosineJob.objects.filter(
            pk=job.pk, status=EmbeddingCosineJobStatus.RUNNING
        ).exists():
            return None  # replaced by a newer job for the model: it does the rest
        rows = list(
            EmbeddingCosine.objects.filter(job=job, status=EmbeddingCosineStatus.PENDING)
            .select_related("question")
            .order_by("pk")[:CHUNK]
        )
        if not rows:
            break
        _chunk_compute(job, rows)
    EmbeddingCosineJob.objects.filter(pk=job.pk, status=EmbeddingCosineJobStatus.RUNNING).update(
        status=EmbeddingCosineJobStatus.FINISHED, finished_at=timezone.now()
    )
    job.refresh_from_db()
    return job


def _chunk_compute(job: EmbeddingCosineJob, rows: list[EmbeddingCosine]) -> None:
    """Embed the rows' texts (no transaction is open across the call), then record each
    row's cosine or the reason it has none."""
    results: dict[int, dict] = {}
    callable_rows = []
    for row in rows:
        question = row.question
        if not question.original_text.strip() or not question.text.strip():
            results[row.pk] = _failure("The original or the approved text is empty.")
        else:
            callable_rows.append(row)
    texts = [t for row in callable_rows for t in (row.question.original_text, row.question.text)]
    try:
        embeddings = (
            texts_embed(model=job.model, texts=texts, caller=f"embedding-cosine-job:{job.pk}")
            if texts
            else []
        )
    except LLMError as exc:
        for row in callable_rows:
            results[row.pk] = _failure(str(exc), kind=exc.status)
    except Exception as exc:
        # Not the provider's doing (our database, a bug): these rows fail with the reason,
        # to be computed again by a new job, and the rest go on.
        log.exception("embedding cosines of job %s failed outside the gateway", job.pk)
        for row in callable_rows:
            results[row.pk] = _failure(f"{type(exc).__name__}: {exc}", kind=CallStatus.OTHER)
    else:
        now = timezone.now()
        for index, row in enumerate(callable_rows):
            original, rewrite = embeddings[2 * index], embeddings[2 * index + 1]
            try:
                cosine = vector_cosine(original.vector, rewrite.vector)
            except ValueError as exc:
                results[row.pk] = _failure(f"No cosine: {exc}.", kind=CallStatus.INVALID_OUTPUT)
                continue
            results[row.pk] = {
                "status": EmbeddingCosineStatus.DONE,
                "cosine": cosine,
                "original_embedding": original,
                "rewrite_embedding": rewrite,
                "error": "",
                "error_kind": "",
                "computed_at": now,
            }
    with transaction.atomic():
        for pk, fields in results.items():
            # Only while the row is still this job's to compute (a newer job resets it).
            EmbeddingCosine.objects.filter(
                pk=pk, job=job, status=EmbeddingCosineStatus.PENDING
            ).update(**fields)


def _failure(reason: str, *, kind: str = CallStatus.BAD_REQUEST) -> dict:
    return {
        "status": EmbeddingCosineStatus.FAILED,
        "cosine": None,
        "original_embedding": None,
        "rewrite_embedding": None,
        "error": reason[:MAX_ERROR_CHARS],
        "error_kind": kind,
        "computed_at": timezone.now(),
    }
