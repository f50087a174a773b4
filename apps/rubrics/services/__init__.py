"""Every write to rubrics. Split by concern; import from here."""

from .assignments import assignment_set, question_claim, review_claim, topic_claiming_set
from .drafting import (
    draft_job_request,
    suggestion_accept,
    suggestion_reject,
)
from .editing import criterion_add, criterion_delete, criterion_move, criterion_update
from .imports import (
    rubric_import_check,
    rubric_import_commit,
    rubric_import_plan,
    rubric_import_upload,
)
from .shared import shared_criteria_current, shared_criteria_publish
from .workflow import (
    review_comment_add,
    rubric_approve,
    rubric_request_changes,
    rubric_send_back,
    rubric_start,
    rubric_submit_for_review,
)

__all__ = [
    "assignment_set",
    "criterion_add",
    "criterion_delete",
    "criterion_move",
    "criterion_update",
    "draft_job_request",
    "question_claim",
    "review_claim",
    "review_comment_add",
    "rubric_approve",
    "rubric_import_check",
    "rubric_import_commit",
    "rubric_import_plan",
    "rubric_import_upload",
    "rubric_request_changes",
    "rubric_send_back",
    "rubric_start",
    "rubric_submit_for_review",
    "shared_criteria_current",
    "shared_criteria_publish",
    "suggestion_accept",
    "suggestion_reject",
    "topic_claiming_set",
]
