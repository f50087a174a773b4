"""Reads of the question bank."""

from ..models import Question


def question_text_frozen_because(*, question: Question) -> str:
    """Why `question`'s text can no longer change, or "" while it still can.

    Rubrics are approved against a question's text and models answer it, so once either has
    happened the text is what they are evidence about. The downstream rows are reached by the
    related names their apps give Question (`rubrics`, `responses`): the bank imports neither
    (import-linter: the question bank knows nothing downstream). A rubric version was approved
    when it has an approval date (every approved one does, by its check constraint), and stays
    so: an approved version is never edited, its successor is a new version.
    """
    if question.pk is None:
        return ""
    reasons = []
    approved = list(
        question.rubrics.filter(approved_at__isnull=False)
        .order_by("version")
        .values_list("version", flat=True)
    )
    if approved:
        versions = ", ".join(str(v) for v in approved)
        reasons.append(f"rubric version{'s' if len(approved) > 1 else ''} {versions} approved")
    answers = question.responses.count()
    if answers:
        reasons.append(f"{answers} model answer{'s' if answers > 1 else ''} sampled")
    if not reasons:
        return ""
    return (
        f"The text of {question.external_id} can no longer change: it has "
        f"{' and '.join(reasons)} against it. To ask it differently, import it as a new "
        "question with a new id."
    )
