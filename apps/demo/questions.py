"""The question-bank demo: the path from a pool of candidate posts to rewritten, labelled
questions, with every stage left part-done so that a newcomer can carry each one on.

1. The 300 synthetic candidate posts of `data/candidate-posts-300.csv` are imported through
   the importer the console and `manage.py import_posts` use.
2. Twelve posts are drawn for each of the nine topics, with fixed seeds.
3. The two demo researchers screen the first eight of each sample. Their decisions are
   simulated, by a rule of thumb each applies a little differently (so that the agreement
   page has disagreements to show, as two people's decisions would); the last four posts
   of every sample are left for the newcomer to screen.
4. The first researcher labels the questions the pairs included, the second verifies most
   of them, again by a simulated rule; a few are left disputed and a few unlabelled.
5. An offline demo model rewrites the included questions (real calls to the offline
   provider that `make run` starts, worked by the bulk engine in this process); half of
   the rewrites are approved, the rest wait for review.

Safe to run again: each stage that already has its rows is left as it is.
"""

import hashlib
from pathlib import Path

from django.conf import settings

from apps.accounts.models import User
from apps.llm.models import ModelConfig
from apps.questions.models import (
    ExclusionReason,
    ImportBatch,
    ImportStatus,
    LabelStatus,
    Question,
    Rewrite,
    RewriteJob,
    RewriteStatus,
    Sample,
    SampledPost,
    ScreeningOutcome,
    Topic,
)
from apps.questions.services.imports import posts_import
from apps.questions.services.rewriting import (
    REWRITE_WORK,
    rewrite_approve,
    rewrite_job_start,
)
from apps.questions.services.sampling import sample_draw
from apps.questions.services.screening import screening_decide
from apps.questions.services.strata import question_label, question_label_verify

from .runs import provider_up, work_until_settled

POSTS_FILE = Path(settings.BASE_DIR) / "apps" / "demo" / "data" / "candidate-posts-300.csv"
SEED = 20261201
PER_TOPIC = 12
SCREENED = 8
REWRITER = "Offline Thorough (demo)"
LONG = "Longer than 1,000 characters"
UNCLEAR = "No clear question"


def _roll(*parts: object) -> float:
    """A number in [0, 1) fixed by `parts`: the simulated researchers' coin."""
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _decision(who: str, sampled: SampledPost) -> tuple[bool, str | None]:
    """A simulated screener: excludes what is too long, and a post it finds unclear (each
    screener finds different posts unclear, now and then)."""
    if sampled.post.body_chars >= 1000 and _roll(who, "long", sampled.pk) < 0.9:
        return False, LONG
    if _roll(who, "unclear", sampled.pk) < 0.12:
        return False, UNCLEAR
    return True, None


def _labels(who: str, question: Question) -> dict[str, bool]:
    """A simulated labeller: each label by a rule of thumb, now and then flipped. The two
    needs are judged apart, so that some questions ask for both and some for neither."""
    text = question.original_text.lower()
    labels = {
        "mentions_prior_attempt": any(
            w in text for w in ("already", "tried", "contacted", "filled in", "ran a scan")
        ),
        "needs_sensemaking": any(
            w in text for w in ("is this safe", "am i overthinking", "does a ", "no reason", "why")
        ),
        "needs_guidance": any(
            w in text for w in ("what should i do", "how do i", "options", "get it back")
        ),
    }
    for name in labels:
        if _roll(who, name, question.pk) < 0.05:
            labels[name] = not labels[name]
    return labels


def _import(researcher) -> str:
    done = ImportBatch.objects.filter(filename=POSTS_FILE.name, status=ImportStatus.DONE).first()
    if done is not None:
        return f"{done.rows} candidate posts already imported"
    batch = posts_import(path=POSTS_FILE, user=researcher)
    return f"{batch.rows} candidate posts imported"


def _samples(researcher) -> None:
    for number, topic in enumerate(Topic.objects.order_by("order")):
        if not Sample.objects.filter(topic=topic).exists():
            sample_draw(topic=topic, size=PER_TOPIC, seed=SEED + number, user=researcher)


def _screen(first, second) -> None:
    reasons = {r.text: r for r in ExclusionReason.objects.all()}
    open_posts = SampledPost.objects.filter(
        outcome=ScreeningOutcome.OPEN, position__lte=SCREENED
    ).select_related("post")
    for sampled in open_posts:
        for who in (first, second):
            if sampled.decisions.filter(researcher=who).exists():
                continue
            include, reason = _decision(who.username, sampled)
            screening_decide(
                sampled=sampled,
                researcher=who,
                include=include,
                reason=reasons[reason] if reason else None,
            )
            sampled.refresh_from_db()


def _label(first, second) -> None:
    questions = list(Question.objects.filter(source_post__isnull=False).order_by("pk"))
    for index, question in enumerate(questions):
        if index % 7 == 6:
            continue  # left for the newcomer to label
        if question.label_status == LabelStatus.UNLABELLED:
            labels = _labels(first.username, question)
            question = question_label(question=question, researcher=first, **labels)
        if question.label_status == LabelStatus.LABELLED and index % 5 != 4:
            labels = _labels(second.username, question)
            question_label_verify(question=question, researcher=second, **labels)


def _rewrite(researcher) -> str:
    model = ModelConfig.objects.filter(display_name=REWRITER).first()
    if model is None:
        return "rewriting skipped (the demo models are missing)"
    if not RewriteJob.objects.exists():
        if not provider_up():
            return f"rewriting skipped (no offline provider answers at {settings.OFFLINE_LLM_URL})"
        questions = Question.objects.filter(source_post__isnull=False).order_by("pk")
        job = rewrite_job_start(questions=questions, model=model, user=researcher, seed=SEED)
        work_until_settled(REWRITE_WORK.name, job.pk)
    done = list(Rewrite.objects.filter(status=RewriteStatus.DONE).order_by("pk"))
    approved = Question.objects.filter(rewrite_approved_at__isnull=False).count()
    if approved == 0:
        for rewrite in done[::2]:
            rewrite_approve(rewrite=rewrite, text=rewrite.text, user=researcher)
        approved = len(done[::2])
    return f"{len(done)} questions rewritten by {REWRITER}, {approved} rewrites approved"


def demo_question_bank_load() -> str:
    first = User.objects.filter(username="researcher").first()
    second = User.objects.filter(username="researcher2").first()
    if first is None or second is None:
        return "skipped (the demo researchers are missing)"
    imported = _import(first)
    _samples(first)
    _screen(first, second)
    _label(first, second)
    rewritten = _rewrite(first)
    included = SampledPost.objects.filter(outcome=ScreeningOutcome.INCLUDED).count()
    open_left = SampledPost.objects.filter(outcome=ScreeningOutcome.OPEN).count()
    return (
        f"{imported}; {SampledPost.objects.count()} sampled, {included} included, "
        f"{open_left} left to screen; {rewritten}"
    )
