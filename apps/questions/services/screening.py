"""Screening in pairs: every sampled post gets two researchers' decisions, made without
seeing each other's; it is included only if both include it (the published design)."""

from django.db import transaction

from apps.accounts.roles import Role, user_has_role

from ..errors import QuestionError
from ..models import (
    LENGTH_LIMIT,
    ExclusionReason,
    LabelStatus,
    Question,
    SampledPost,
    ScreeningDecision,
    ScreeningOutcome,
    ScreeningWithdrawal,
    length_bucket_for,
)

DECISIONS_PER_POST = 2


def question_from_post(*, sampled: SampledPost) -> Question:
    """The bank's question for an included post: its body, as posted, in the sample's
    topic, to be labelled and rewritten next."""
    post = sampled.post
    if Question.objects.filter(external_id=post.external_id).exists():
        raise QuestionError(
            f"The bank already has a question with the id {post.external_id}: rename it "
            "there before this post can be included."
        )
    return Question.objects.create(
        external_id=post.external_id,
        topic_id=sampled.topic_id,
        text=post.body,
        original_text=post.body,
        source_post=post,
        length_bucket=length_bucket_for(post.body),
        label_status=LabelStatus.UNLABELLED,
    )


def _pair_outcome(sampled: SampledPost) -> str:
    """Included only if both include it, and only if its body is within the published
    length limit (1,000 characters or more is excluded, whatever the screeners said)."""
    both_include = all(d.include for d in sampled.decisions.all())
    if both_include and len(sampled.post.body) < LENGTH_LIMIT:
        return ScreeningOutcome.INCLUDED
    return ScreeningOutcome.EXCLUDED


def _checked_reason(include: bool, reason: ExclusionReason | None) -> None:
    if include and reason is not None:
        raise QuestionError("An included post has no exclusion reason.")
    if not include and reason is None:
        raise QuestionError("Choose the reason the post is excluded.")
    if reason is not None and not reason.active:
        raise QuestionError(f"“{reason}” is no longer offered as a reason: choose another.")


def screening_decide(
    *,
    sampled: SampledPost,
    researcher,
    include: bool,
    reason: ExclusionReason | None = None,
    note: str = "",
) -> ScreeningDecision:
    """Record `researcher`'s decision on a sampled post. A decision cannot be changed once
    made, and a post takes two; the second settles its outcome (and makes the question of an
    included post) in the same transaction."""
    if not user_has_role(researcher, Role.RESEARCHER):
        raise QuestionError("Only researchers screen posts.")
    _checked_reason(include, reason)
    with transaction.atomic():
        # The row lock orders two screeners deciding at once: the second waits, then sees
        # the first's decision and the count it left.
        locked = (
            SampledPost.objects.select_for_update(of=("self",))
            .select_related("post")
            .get(pk=sampled.pk)
        )
        if locked.decisions.filter(researcher=researcher).exists():
            raise QuestionError(
                "You have already screened this post, and a decision cannot be changed."
            )
        if locked.decisions_count >= DECISIONS_PER_POST:
            raise QuestionError("This post already has its two decisions: it needs no more.")
        decision = ScreeningDecision.objects.create(
            sampled=locked,
            researcher=researcher,
            include=include,
            reason=reason,
            note=note.strip(),
        )
        locked.decisions_count += 1
        if locked.decisions_count == DECISIONS_PER_POST:
            locked.outcome = _pair_outcome(locked)
            if locked.outcome == ScreeningOutcome.INCLUDED:
                question_from_post(sampled=locked)
        locked.save(update_fields=["decisions_count", "outcome"])
    decision.sampled = locked
    return decision


def screening_undo(*, researcher, decision_id: int | None = None) -> SampledPost:
    """Withdraw `researcher`'s last decision (the one with `decision_id`, when the page that
    offered the undo named it), while its post still waits for the other screener: the post
    is theirs to screen again. Undoing again withdraws the decision before it. Once the pair
    is complete its outcome stands, and so does the decision. The withdrawn decision is
    kept as a `ScreeningWithdrawal` and counts nowhere."""
    if not user_has_role(researcher, Role.RESEARCHER):
        raise QuestionError("Only researchers screen posts.")
    last = (
        ScreeningDecision.objects.filter(researcher=researcher)
        .order_by("-decided_at", "-pk")
        .first()
    )
    if last is None:
        raise QuestionError("You have no screening decision to undo.")
    if decision_id is not None and last.pk != decision_id:
        raise QuestionError(
            "That decision is no longer your last one (it was undone already, or you "
            "decided another post since): nothing was undone."
        )
    with transaction.atomic():
        # The same row lock as `screening_decide`: an undo and the other screener's decision
        # on the post are ordered, and the later one sees what the earlier left.
        locked = (
            SampledPost.objects.select_for_update(of=("self",))
            .select_related("post")
            .get(pk=last.sampled_id)
        )
        decision = locked.decisions.filter(pk=last.pk).first()
        if decision is None:
            raise QuestionError("That decision was undone already: nothing was undone.")
        if locked.decisions_count >= DECISIONS_PER_POST or locked.outcome != (
            ScreeningOutcome.OPEN
        ):
            raise QuestionError(
                f"The other screener has decided on {locked.post.external_id} too, so its "
                f"pair is complete ({locked.get_outcome_display().lower()}) and your "
                "decision can no longer be undone."
            )
        ScreeningWithdrawal.objects.create(
            sampled=locked,
            researcher=researcher,
            include=decision.include,
            reason_id=decision.reason_id,
            note=decision.note,
            decided_at=decision.decided_at,
        )
        decision.delete()
        locked.decisions_count -= 1
        locked.save(update_fields=["decisions_count"])
    return locked
