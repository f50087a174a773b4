"""Reads for rewriting: what is still to rewrite, the jobs and their progress (counted from
the rows), the rewrites waiting for review, the approved ones, and a word-level diff."""

import difflib
import re
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from apps.llm.models import RunStatus

from ..models import Question, Rewrite, RewriteJob, RewriteStatus

REJECTED_PREFIX = "Rejected by "


def _waiting_rewrites() -> QuerySet:
    """Rewrites that will still be, or are, waiting for review: done, or to be called by a
    job that goes on (running or paused)."""
    return Rewrite.objects.filter(
        Q(status=RewriteStatus.DONE)
        | Q(
            status__in=[RewriteStatus.PENDING, RewriteStatus.RUNNING],
            job__status__in=[RunStatus.RUNNING, RunStatus.PAUSED],
        )
    )


def questions_to_rewrite(*, topic=None) -> QuerySet:
    """Questions with an original post, no approved rewrite and no rewrite on its way."""
    questions = (
        Question.objects.exclude(original_text="")
        .filter(rewrite__isnull=True)
        .exclude(Exists(_waiting_rewrites().filter(question=OuterRef("pk"))))
    )
    if topic is not None:
        questions = questions.filter(topic=topic)
    return questions.select_related("topic")


def rewrite_jobs(*, limit: int = 20) -> list[RewriteJob]:
    """The latest jobs, each with its rows counted by state (`counts`)."""
    jobs = RewriteJob.objects.select_related("model", "prompt", "created_by").annotate(
        total=Count("rewrites"),
        waiting=Count("rewrites", filter=Q(rewrites__status=RewriteStatus.PENDING)),
        running=Count("rewrites", filter=Q(rewrites__status=RewriteStatus.RUNNING)),
        done=Count("rewrites", filter=Q(rewrites__status=RewriteStatus.DONE)),
        rejected=Count(
            "rewrites",
            filter=Q(
                rewrites__status=RewriteStatus.FAILED, rewrites__error__startswith=REJECTED_PREFIX
            ),
        ),
        failed_all=Count("rewrites", filter=Q(rewrites__status=RewriteStatus.FAILED)),
    )
    jobs = list(jobs[:limit])
    for job in jobs:
        job.failed = job.failed_all - job.rejected
        # Rejected rewrites were done before a researcher set them aside.
        job.finished_rows = job.done + job.failed_all
        job.percent = 100 * job.finished_rows / job.total if job.total else 100
    return jobs


def rewrites_waiting() -> QuerySet:
    """Done rewrites of questions with no approved rewrite, oldest job first."""
    return (
        Rewrite.objects.filter(status=RewriteStatus.DONE, question__rewrite__isnull=True)
        .select_related("question__topic", "job__model", "job__prompt")
        .order_by("job_id", "pk")
    )


def questions_rewritten() -> QuerySet:
    """Questions whose text is an approved rewrite, latest approval first."""
    return (
        Question.objects.filter(rewrite__isnull=False)
        .select_related(
            "topic", "rewrite__job__model", "rewrite__job__prompt", "rewrite_approved_by"
        )
        .order_by("-rewrite_approved_at")
    )


@dataclass(frozen=True)
class DiffPart:
    kind: str  # "same", "del" (only in the original) or "ins" (only in the rewrite)
    text: str
    # A change that follows the other kind of change with no space between them: the page
    # shows one, so that struck and inserted words do not run together.
    spaced: bool = False


_PIECES = re.compile(r"\s+|[^\s]+")


def rewrite_diff(*, original: str, rewrite: str) -> list[DiffPart]:
    """The differences between two texts, word by word (difflib over words and the space
    between them); runs of one kind are joined."""
    a, b = _PIECES.findall(original), _PIECES.findall(rewrite)
    parts: list[DiffPart] = []

    def add(kind: str, pieces: list[str]) -> None:
        text = "".join(pieces)
        if not text:
            return
        if parts and parts[-1].kind == kind:
            parts[-1] = DiffPart(kind, parts[-1].text + text, parts[-1].spaced)
        else:
            touching = bool(parts) and parts[-1].kind != "same" and kind != "same"
            spaced = touching and not parts[-1].text[-1].isspace() and not text[0].isspace()
            parts.append(DiffPart(kind, text, spaced))

    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            add("same", a[i1:i2])
            continue
        if op in ("delete", "replace"):
            add("del", a[i1:i2])
        if op in ("insert", "replace"):
            add("ins", b[j1:j2])
    return parts
