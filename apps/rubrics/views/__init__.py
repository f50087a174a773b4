from .drafting import samples, suggest, suggestion_accept, suggestion_reject, suggestions
from .editing import criterion_add, criterion_delete, criterion_edit, criterion_move
from .pages import claim, history, index, question, rubric, start
from .research import (
    assign,
    export,
    freshness,
    import_preview,
    import_upload,
    shared_criteria,
    topic_claiming,
    workspace,
)
from .review import approve, claim_review, comment, request_changes, start_next, submit

__all__ = [
    "approve",
    "assign",
    "claim",
    "claim_review",
    "comment",
    "criterion_add",
    "criterion_delete",
    "criterion_edit",
    "criterion_move",
    "export",
    "freshness",
    "history",
    "import_preview",
    "import_upload",
    "index",
    "question",
    "request_changes",
    "rubric",
    "samples",
    "shared_criteria",
    "start",
    "start_next",
    "submit",
    "suggest",
    "suggestion_accept",
    "suggestion_reject",
    "suggestions",
    "topic_claiming",
    "workspace",
]
