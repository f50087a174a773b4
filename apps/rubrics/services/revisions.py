"""The draft's etag and its log: every change names the revision it was made against.

A change made against an older revision than the draft's is refused with the changes made
since (RubricConflict), so that the later of two conflicting saves never overwrites the
earlier one. Each accepted change bumps the revision and records an event saying who did
what, which is both the history page and what a refused editor is shown.
"""

import datetime as dt

from django.utils import timezone

from apps.accounts.roles import Role, user_has_role

from ..errors import RubricConflict, RubricError, RubricForbidden
from ..models import (
    Criterion,
    EventAction,
    QuestionAssignment,
    Rubric,
    RubricEvent,
    RubricState,
)

# Autosave sends a criterion many times while it is typed; one person's edits to one
# criterion within this window are one event in the history.
COALESCE_EDITS = dt.timedelta(minutes=2)


def locked(rubric_id: int) -> Rubric:
    """The rubric row, locked for the rest of the transaction."""
    try:
        return Rubric.objects.select_for_update().select_related("question").get(pk=rubric_id)
    except Rubric.DoesNotExist as exc:
        raise RubricError("This rubric no longer exists.") from exc


def require_expert(user) -> None:
    if not user_has_role(user, Role.EXPERT):
        raise RubricForbidden("Only experts edit rubrics.")


def require_author(question_id: int, user) -> None:
    """Only the question's assigned author writes its rubric: a researcher assigns (or
    reassigns) them in the workspace, or an expert claims a question of an open topic."""
    assignment = (
        QuestionAssignment.objects.filter(question_id=question_id).select_related("author").first()
    )
    author = assignment.author if assignment else None
    if author is None:
        raise RubricForbidden(
            "No one is assigned to write this rubric yet. A researcher assigns its author in "
            "the workspace (or claim the question, if its topic is open for claiming)."
        )
    if author.pk != user.pk:
        name = author.get_full_name() or author.get_username()
        raise RubricForbidden(
            f"{name} is assigned to write this rubric, so only they can change or submit it. "
            "A researcher can reassign it in the workspace."
        )


def require_editable(rubric: Rubric, user) -> None:
    require_expert(user)
    require_author(rubric.question_id, user)
    if not rubric.is_editable:
        if rubric.state == RubricState.APPROVED:
            raise RubricError(
                f"Version {rubric.version} is approved and cannot be changed. "
                "Start a new version to edit it."
            )
        raise RubricError(
            f"Version {rubric.version} is {rubric.get_state_display().lower()}; "
            "it can be edited again if the reviewer requests changes."
        )


def check_revision(rubric: Rubric, revision: int | None) -> None:
    if revision is not None and revision == rubric.revision:
        return
    changes = list(
        rubric.events.filter(revision__gt=revision or 0)
        .select_related("actor")
        .order_by("revision", "pk")
    )
    who = sorted({event_actor_name(e) for e in changes}) or ["someone"]
    raise RubricConflict(
        f"Not saved: {', '.join(who)} changed this draft after you opened it. "
        "Nothing was overwritten; your change is kept below.",
        changes=changes,
        current_revision=rubric.revision,
    )


def event_actor_name(event: RubricEvent) -> str:
    if event.actor is None:
        return "someone"
    return event.actor.get_full_name() or event.actor.get_username()


def bump(
    rubric: Rubric,
    *,
    user,
    action: str,
    criterion: Criterion | None = None,
    summary: str = "",
    detail: dict | None = None,
) -> RubricEvent:
    """Count a change to the (locked) draft: a new revision and its event."""
    now = timezone.now()
    rubric.revision += 1
    rubric.updated_at = now
    rubric.save(update_fields=["revision", "updated_at"])
    detail = detail or {}
    if action == EventAction.CRITERION_EDITED and criterion is not None:
        last = rubric.events.order_by("-pk").first()
        if (
            last is not None
            and last.action == action
            and last.criterion_id == criterion.pk
            and last.actor_id == user.pk
            and now - last.created_at < COALESCE_EDITS
        ):
            last.revision, last.created_at, last.summary = rubric.revision, now, summary
            last.detail = {"before": last.detail.get("before"), "after": detail.get("after")}
            last.save(update_fields=["revision", "created_at", "summary", "detail"])
            return last
    return RubricEvent.objects.create(
        rubric=rubric,
        actor=user,
        action=action,
        revision=rubric.revision,
        criterion=criterion,
        summary=summary,
        detail=detail,
        created_at=now,
    )


def record(
    rubric: Rubric,
    *,
    user,
    action: str,
    summary: str = "",
    detail: dict | None = None,
    criterion: Criterion | None = None,
) -> RubricEvent:
    """An event that does not change the draft's content (submit, comment, approve...)."""
    return RubricEvent.objects.create(
        rubric=rubric,
        actor=user,
        action=action,
        summary=summary,
        detail=detail or {},
        criterion=criterion,
        created_at=timezone.now(),
    )


def snapshot(criterion: Criterion) -> dict:
    return {
        "text": criterion.text,
        "polarity": criterion.polarity,
        "kind": criterion.kind,
        "points": criterion.points,
    }


def criterion_like(source, *, rubric: Rubric, **fields) -> Criterion:
    """A new (unsaved) criterion of `rubric` saying what `source` says: its text, polarity,
    kind and points. `source` is a criterion, a shared criterion or an imported record."""
    return Criterion(
        rubric=rubric,
        text=source.text,
        polarity=source.polarity,
        kind=source.kind,
        points=source.points,
        **fields,
    )
