"""What the rubric page shows, for a user: one place so every fragment agrees with the page."""

from apps.accounts.roles import Role, user_has_role
from apps.runs.models import Response, ResponseStatus

from .. import selectors
from ..models import COMMENT_MAX_CHARS, EDITABLE_STATES, POINTS, Kind, Polarity, RubricState

TEMPLATE = "rubrics/rubric.html"


def rubric_context(request, rubric, **extra) -> dict:
    user = request.user
    own, shared = selectors.rubric_criteria(rubric=rubric)
    for position, criterion in enumerate(own, start=1):
        criterion.position = position
    by_criterion, general = selectors.comments_by_criterion(rubric=rubric)
    for criterion in own + shared:
        criterion.review_comments = by_criterion.get(criterion.pk, [])
    is_expert = user_has_role(user, Role.EXPERT)
    is_reviewer = user_has_role(user, Role.REVIEWER)
    authors = selectors.rubric_authors(rubric=rubric)
    assignment = selectors.assignment_for(question=rubric.question)
    latest = rubric.question.rubrics.order_by("-version").first()
    # Only the assigned author writes (services.require_author says so to anyone else).
    writes = is_expert and assignment is not None and assignment.author_id == user.pk
    context = {
        "rubric": rubric,
        "question": rubric.question,
        "own": own,
        "shared": shared,
        "totals": selectors.criteria_totals(criteria=own + shared),
        "general_comments": general,
        "can_edit": writes and rubric.state in EDITABLE_STATES,
        "can_comment": (is_expert or is_reviewer) and rubric.state != RubricState.APPROVED,
        "can_review": is_reviewer and rubric.state == RubricState.IN_REVIEW,
        # The reference answers are for those who write and review rubrics (rubrics:samples).
        "can_see_samples": is_expert or is_reviewer,
        "is_author": user.pk in authors,
        "assignment": assignment,
        "is_latest": latest is not None and latest.pk == rubric.pk,
        "can_start_next": writes
        and rubric.state == RubricState.APPROVED
        and latest is not None
        and latest.pk == rubric.pk,
        "job": selectors.latest_draft_job(rubric=rubric),
        "suggestions": selectors.pending_suggestions(rubric=rubric),
        "polarities": Polarity.choices,
        "kinds": Kind.choices,
        "points_choices": POINTS,
        "comment_max": COMMENT_MAX_CHARS,
        "add_values": {"polarity": Polarity.POSITIVE, "kind": Kind.FACTUAL, "points": 3},
        "directions": (("up", "↑"), ("down", "↓")),
    }
    context.update(extra)
    _show_refused_edit(own, extra.get("edited"))
    return context


def _show_refused_edit(own, edited: dict | None) -> None:
    """Put a refused edit back in its row, as typed, with its errors (a form without JS)."""
    if not edited or edited.get("criterion_id") is None:
        return
    for criterion in own:
        if criterion.pk == edited["criterion_id"]:
            values = edited["values"]
            criterion.text = values.get("text", criterion.text)
            criterion.polarity = values.get("polarity", criterion.polarity)
            criterion.kind = values.get("kind", criterion.kind)
            criterion.points = values.get("points", criterion.points)
            criterion.form_errors = edited["errors"]


def with_consistency(context: dict) -> dict:
    context["similar"] = selectors.similar_questions(question=context["question"])
    return context


UNFINISHED = (ResponseStatus.PENDING, ResponseStatus.RUNNING)


def samples_context(responses: list[Response], error: str = "") -> dict:
    return {
        "samples": responses,
        "samples_error": error,
        "samples_pending": any(r.status in UNFINISHED for r in responses),
        "sample_ids": ",".join(str(r.pk) for r in responses),
        "sample_model_ids": ",".join(str(r.model_id) for r in responses),
    }
