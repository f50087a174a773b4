"""Rewriting questions through the bulk engine, and a researcher's approval of a rewrite.

A job is made whole at its start: one `Rewrite` per question still to rewrite, pending, so
that progress is counted from the rows and a batch run twice repeats nothing (a done row is
never claimed again). The engine (apps/llm/engine.py, `RewriteWork` below) calls the job's
model with the job's pinned prompt while the job runs. A rewrite becomes the question's text
only when a researcher approves it, possibly edited, and then the bank's two similarity
measures are refitted (apps/questions/similarity.py).
"""

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from apps.llm import engine, leases, runs
from apps.llm.batches import batch_mode_refusal
from apps.llm.errors import PromptError
from apps.llm.models import BatchRetry, CallStatus, ModelConfig, PromptTemplate, Purpose
from apps.llm.selectors import prompt_current, prompt_render

from ..errors import QuestionError
from ..models import Question, Rewrite, RewriteJob, RewriteStatus
from ..selectors.rewriting import questions_to_rewrite
from ..similarity import tfidf_cosines, trigram_jaccard
from .bank import question_update

REJECTED = "Rejected by {user} on {when:%Y-%m-%d %H:%M}"
LEASE_STATES = leases.LeaseStates(
    waiting=RewriteStatus.PENDING, running=RewriteStatus.RUNNING, failed=RewriteStatus.FAILED
)


def rewrite_job_start(
    *,
    questions: Iterable[Question],
    model: ModelConfig,
    prompt: PromptTemplate | None = None,
    user=None,
    seed: int | None = None,
    batch_mode: bool = False,
    batch_retry: str = BatchRetry.BATCH,
) -> RewriteJob:
    """A running job with a pending rewrite for each of `questions` that is still to
    rewrite (it has an original post, no approved rewrite and none waiting); the engine
    starts on it when the caller's transaction commits. In `batch_mode` its calls go through
    the provider's batch API (apps/llm/batches.py), which the model must have."""
    if not model.active:
        raise QuestionError(f"{model.display_name} is switched off.")
    refusal = batch_mode_refusal(batch_mode=batch_mode, batch_retry=batch_retry, models=[model])
    if refusal:
        raise QuestionError(refusal)
    try:
        prompt = prompt or prompt_current(purpose=Purpose.REWRITE)
    except PromptError as exc:
        raise QuestionError(str(exc)) from exc
    if prompt.purpose != Purpose.REWRITE:
        raise QuestionError(f"{prompt} is not a prompt for rewriting posts.")
    ids = [q.pk for q in questions]
    with transaction.atomic():
        # Locked, so that two jobs started at once do not both take a question.
        todo = list(
            questions_to_rewrite()
            .filter(pk__in=ids)
            .select_for_update(of=("self",))
            .values_list("pk", flat=True)
        )
        if not todo:
            raise QuestionError(
                "None of these questions is still to rewrite: each has no original post, an "
                "approved rewrite, or a rewrite waiting."
            )
        job = RewriteJob.objects.create(
            model=model,
            prompt=prompt,
            created_by=user,
            batch_mode=batch_mode,
            batch_retry=batch_retry,
            **({} if seed is None else {"seed": seed}),
        )
        Rewrite.objects.bulk_create(Rewrite(job=job, question_id=pk) for pk in sorted(todo))
        job = runs.run_launch(REWRITE_WORK, run=job)
    return job


def rewrite_job_pause(*, job: RewriteJob) -> RewriteJob:
    return runs.run_pause(REWRITE_WORK, run=job)


def rewrite_job_resume(*, job: RewriteJob) -> RewriteJob:
    return runs.run_resume(REWRITE_WORK, run=job)


def rewrite_job_cancel(*, job: RewriteJob) -> RewriteJob:
    """For good: nothing more is asked for; the rewrites made stay, to review."""
    return runs.run_cancel(REWRITE_WORK, run=job)


def rewrite_job_retry(*, job: RewriteJob, error_kind: str = "") -> int:
    """Failed rewrites (all, or those that failed with `error_kind`) asked for again."""
    return runs.run_failed_retry(REWRITE_WORK, run=job, error_kind=error_kind)


# Every move the rewrites page makes on a job, by name (apps/llm/views.py run_control): a
# job is launched as it is made, with no budget of its own on the page.
REWRITE_JOB_CONTROLS = {
    "pause": lambda run: rewrite_job_pause(job=run),
    "resume": lambda run: rewrite_job_resume(job=run),
    "cancel": lambda run: rewrite_job_cancel(job=run),
    "retry": lambda run, error_kind: rewrite_job_retry(job=run, error_kind=error_kind),
}


def rewrite_approve(*, rewrite: Rewrite, text: str, user) -> Question:
    """The (possibly edited) `text` becomes the question's text, by `question_update`'s rules
    (refused with the reason once the text is frozen; the length bucket stays the post's),
    with the rewrite, who approved it and when as its provenance. The bank's similarity
    measures are then refitted."""
    text = text.strip()
    if not text:
        raise QuestionError("The approved text is empty: write the question, or reject it.")
    with transaction.atomic():
        rewrite = Rewrite.objects.select_for_update().select_related("question").get(pk=rewrite.pk)
        question = rewrite.question
        if rewrite.status != RewriteStatus.DONE:
            raise QuestionError(f"This rewrite is {rewrite.get_status_display().lower()}.")
        if question.rewrite_id is not None:
            raise QuestionError(f"{question} already has an approved rewrite.")
        question = question_update(question=question, fields={"text": text})
        question.rewrite = rewrite
        question.rewrite_approved_by, question.rewrite_approved_at = user, timezone.now()
        question.save(update_fields=["rewrite", "rewrite_approved_by", "rewrite_approved_at"])
        rewrite_metrics_refresh()
    question.refresh_from_db()
    return question


def rewrite_reject(*, rewrite: Rewrite, user) -> Rewrite:
    """Set a rewrite aside unapproved: it leaves the review list and its question is to
    rewrite again (by another job). The row is kept, failed with who rejected it."""
    with transaction.atomic():
        rewrite = Rewrite.objects.select_for_update().select_related("question").get(pk=rewrite.pk)
        if rewrite.status != RewriteStatus.DONE or rewrite.question.rewrite_id is not None:
            raise QuestionError("Only a rewrite waiting for review can be rejected.")
        rewrite.status, rewrite.error_kind = RewriteStatus.FAILED, ""
        rewrite.error = REJECTED.format(user=user, when=timezone.localtime())
        rewrite.save(update_fields=["status", "error", "error_kind"])
    return rewrite


def rewrite_metrics_refresh() -> int:
    """Refit the TF-IDF on the bank (every original and final text) and store, for every
    question with an approved rewrite, its cosine similarity and word 3-gram overlap to the
    original. The fit is over the whole bank, so one approval moves every question's cosine
    a little: all are stored again. How many were stored."""
    questions = list(Question.objects.only("pk", "text", "original_text", "rewrite_id"))
    corpus = [t for q in questions for t in (q.original_text, q.text) if t]
    rewritten = [q for q in questions if q.rewrite_id is not None and q.original_text]
    cosines = tfidf_cosines([(q.original_text, q.text) for q in rewritten], corpus=corpus)
    for question, cosine in zip(rewritten, cosines, strict=True):
        question.rewrite_cosine = round(cosine, 6)
        question.rewrite_trigram_overlap = round(
            trigram_jaccard(question.original_text, question.text), 6
        )
    Question.objects.bulk_update(rewritten, ["rewrite_cosine", "rewrite_trigram_overlap"])
    return len(rewritten)


# --- the engine's work --------------------------------------------------------------------


class RewriteWork(runs.RunWork):
    """The engine's view of a rewrite job's rows."""

    name = "questions.rewrite"
    noun = "job"
    error = QuestionError
    model = Rewrite
    states = LEASE_STATES

    def rows(self, scope):
        return Rewrite.objects.filter(job_id=scope)

    def runs(self):
        return RewriteJob.objects.all()

    def calls(self, ids):
        calls, refused = [], []
        rewrites = Rewrite.objects.filter(pk__in=ids).select_related(
            "question", "job__model", "job__prompt"
        )
        for rewrite in rewrites:
            job = rewrite.job
            try:
                messages = prompt_render(
                    template=job.prompt, variables={"post": rewrite.question.original_text}
                )
            except PromptError as exc:
                refused.append((rewrite.pk, str(exc)))
                continue
            calls.append(
                engine.Call(
                    row_id=rewrite.pk,
                    model=job.model,
                    messages=messages,
                    purpose=Purpose.REWRITE,
                    prompt=job.prompt,
                    params={"seed": engine.call_seed(job.seed, rewrite.pk)},
                )
            )
        return calls, refused

    def record(self, results, *, owner):
        with transaction.atomic():
            rows = []
            for result, row in self.recorded(results, mine=self.held_ids(results, owner=owner)):
                if (completion := result.completion) is not None:
                    row.text = completion.text.strip()
                    row.cost_usd, row.latency_ms = completion.cost_usd, completion.latency_ms
                    row.status = RewriteStatus.DONE
                    if not row.text:
                        row.status, row.error_kind = RewriteStatus.FAILED, CallStatus.INVALID_OUTPUT
                        row.error = "The model's reply was empty."
                rows.append(row)
            engine.rows_write(rows, RECORDED_FIELDS)


RECORDED_FIELDS = [
    "status",
    "text",
    "error",
    "error_kind",
    "cost_usd",
    "latency_ms",
    "lease_owner",
    "lease_expires_at",
    "reserved_usd",
    "completed_at",
]

REWRITE_WORK = engine.register(RewriteWork())
