"""A rubric version's life: started, submitted, commented, sent back, approved."""

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from apps.accounts.roles import Role, user_has_role
from apps.questions.models import Question

from ..errors import RubricError, RubricForbidden
from ..models import (
    OPEN_STATES,
    Criterion,
    EventAction,
    Origin,
    QuestionAssignment,
    ReviewComment,
    Rubric,
    RubricState,
)
from ..selectors import rubric_authors
from .editing import normalise_text
from .revisions import criterion_like, locked, record, require_author, require_editable
from .shared import shared_criteria_copy, shared_criteria_current


def rubric_start(*, question: Question, user) -> Rubric:
    """The question's open version, or a new one: version 1 with the shared criteria, or
    version n+1 copying the latest approved version's own criteria."""
    if not user_has_role(user, Role.EXPERT):
        raise RubricForbidden("Only experts start rubrics.")
    require_author(question.pk, user)
    return rubric_version_open(question=question, user=user, action=EventAction.CREATED)


def rubric_version_open(*, question: Question, user, action: str, reason: str = "") -> Rubric:
    """The open version of `question`, made if there is none (no permission check: callers
    check)."""
    open_rubric = question.rubrics.filter(state__in=OPEN_STATES).first()
    if open_rubric is not None:
        return open_rubric
    shared = shared_criteria_current()
    try:
        with transaction.atomic():
            return _create_version(
                question=question, user=user, shared=shared, action=action, reason=reason
            )
    except IntegrityError:
        # Two people started at once; the other one's version is the open one.
        open_rubric = question.rubrics.filter(state__in=OPEN_STATES).first()
        if open_rubric is None:
            raise
        return open_rubric


def _create_version(*, question, user, shared, action, reason) -> Rubric:
    latest = question.rubrics.filter(state=RubricState.APPROVED).order_by("-version").first()
    number = (question.rubrics.aggregate(v=Max("version"))["v"] or 0) + 1
    rubric = Rubric.objects.create(
        question=question,
        version=number,
        based_on=latest,
        shared_set=shared,
        created_by=user,
        updated_at=timezone.now(),
        reverification_reason=reason,
    )
    if latest is not None:
        Criterion.objects.bulk_create(
            criterion_like(
                c,
                rubric=rubric,
                order=c.order,
                origin=c.origin,
                derived_from=c,
                created_by=c.created_by,
            )
            for c in latest.criteria.exclude(origin=Origin.SHARED)
        )
    shared_criteria_copy(rubric=rubric, criterion_set=shared)
    if action == EventAction.CREATED:
        summary = f"From version {latest.version}" if latest else "New rubric"
        record(rubric, user=user, action=action, summary=summary)
    elif action == EventAction.SENT_BACK:
        record(rubric, user=user, action=action, summary=reason)
    # IMPORTED is recorded by the importer, with the file it came from.
    return rubric


def rubric_submit_for_review(*, rubric: Rubric, user) -> Rubric:
    with transaction.atomic():
        rubric = locked(rubric.pk)
        require_editable(rubric, user)
        if not rubric.criteria.exclude(origin=Origin.SHARED).exists():
            raise RubricError("Add at least one criterion of your own before submitting.")
        rubric.state = RubricState.IN_REVIEW
        rubric.submitted_by, rubric.submitted_at = user, timezone.now()
        rubric.updated_at = rubric.submitted_at
        rubric.save(update_fields=["state", "submitted_by", "submitted_at", "updated_at"])
        record(rubric, user=user, action=EventAction.SUBMITTED)
    return rubric


def review_comment_add(
    *, rubric: Rubric, user, body: str, criterion_id: int | None = None
) -> ReviewComment:
    body = (body or "").strip()
    if not body:
        raise RubricError("Write a comment first.", field_errors={"body": "Write a comment first."})
    if not user_has_role(user, Role.EXPERT, Role.REVIEWER):
        raise RubricError("Only experts and reviewers comment on rubrics.")
    with transaction.atomic():
        rubric = locked(rubric.pk)
        if rubric.state == RubricState.APPROVED:
            raise RubricError(f"Version {rubric.version} is approved; comments are closed.")
        criterion = None
        if criterion_id is not None:
            criterion = rubric.criteria.filter(pk=criterion_id).first()
            if criterion is None:
                raise RubricError("That criterion is no longer in this version.")
        comment = ReviewComment.objects.create(
            rubric=rubric,
            criterion=criterion,
            author=user,
            body=body,
            criterion_text=criterion.text if criterion else "",
        )
        record(
            rubric,
            user=user,
            action=EventAction.COMMENTED,
            criterion=criterion,
            summary=body,
            detail={"on": criterion.text if criterion else "the whole rubric"},
        )
    return comment


def _require_reviewer(rubric: Rubric, user) -> None:
    if not user_has_role(user, Role.REVIEWER):
        raise RubricError("Only reviewers approve rubrics or request changes.")
    if rubric.state != RubricState.IN_REVIEW:
        raise RubricError(
            f"Version {rubric.version} is {rubric.get_state_display().lower()}, not in review."
        )
    if user.pk in rubric_authors(rubric=rubric):
        raise RubricError("You wrote or edited this version, so another reviewer must review it.")
    assigned = QuestionAssignment.objects.filter(question_id=rubric.question_id).first()
    if assigned and assigned.reviewer_id and assigned.reviewer_id != user.pk:
        raise RubricError(f"{assigned.reviewer} is the reviewer of this question.")


def rubric_request_changes(*, rubric: Rubric, user, message: str = "") -> Rubric:
    message = (message or "").strip()
    with transaction.atomic():
        rubric = locked(rubric.pk)
        _require_reviewer(rubric, user)
        open_comments = rubric.comments.filter(resolved_at=None).exists()
        if not message and not open_comments:
            raise RubricError(
                "Say what should change: comment on a criterion or write a message.",
                field_errors={"message": "Say what should change."},
            )
        if message:
            ReviewComment.objects.create(rubric=rubric, author=user, body=message)
        rubric.state = RubricState.CHANGES_REQUESTED
        rubric.updated_at = timezone.now()
        rubric.save(update_fields=["state", "updated_at"])
        record(rubric, user=user, action=EventAction.CHANGES_REQUESTED, summary=message)
    return rubric


def rubric_approve(*, rubric: Rubric, user) -> Rubric:
    with transaction.atomic():
        rubric = locked(rubric.pk)
        _require_reviewer(rubric, user)
        now = timezone.now()
        rubric.state = RubricState.APPROVED
        rubric.approved_by, rubric.approved_at, rubric.verified_at = user, now, now
        rubric.updated_at = now
        rubric.save(
            update_fields=["state", "approved_by", "approved_at", "verified_at", "updated_at"]
        )
        rubric.comments.filter(resolved_at=None).update(resolved_at=now)
        QuestionAssignment.objects.filter(question_id=rubric.question_id, reviewer=None).update(
            reviewer=user
        )
        record(rubric, user=user, action=EventAction.APPROVED)
    return rubric


def rubric_send_back(*, rubric: Rubric, user, reason: str) -> Rubric:
    """Ask for an approved rubric to be verified again: version n+1 opens as a draft."""
    if not user_has_role(user, Role.RESEARCHER):
        raise RubricError("Only researchers send rubrics back for re-verification.")
    reason = normalise_text(reason)
    if not reason:
        raise RubricError("Say why the rubric needs verifying again.")
    if rubric.state != RubricState.APPROVED:
        raise RubricError(f"{rubric.question} v{rubric.version} is not approved.")
    open_rubric = rubric.question.rubrics.filter(state__in=OPEN_STATES).first()
    if open_rubric is not None:
        raise RubricError(
            f"{rubric.question} already has version {open_rubric.version} being worked on."
        )
    return rubric_version_open(
        question=rubric.question, user=user, action=EventAction.SENT_BACK, reason=reason
    )
