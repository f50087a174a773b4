"""The text people write has one limit each, which the column declares and the page's form
enforces, so that a form built from the model (the console's) holds the page's limit."""

import pytest

from apps.grading.models import ExpertJudgment
from apps.grading.views.calibration import GradeForm, SettleForm
from apps.questions.models import ScreeningDecision
from apps.questions.views.screening import DecisionForm
from apps.rubrics.forms import (
    CommentForm,
    CriterionForm,
    RequestChangesForm,
    SendBackForm,
    SharedCriteriaForm,
    SharedTextForm,
)
from apps.rubrics.models import (
    Criterion,
    ReviewComment,
    Rubric,
    SharedCriterion,
    SharedCriterionSet,
)
from apps.surveys.forms import RejectForm, ScenarioAnswersForm, StudyForm
from apps.surveys.models import Answer, Participant, Study


def field(model, name):
    return model._meta.get_field(name).max_length


def grade_note_limit() -> int:
    return GradeForm({}, criterion_ids=[1]).fields["note-1"].max_length


def explanation_limit() -> int:
    class Item:
        code, wording, choices, explanation_required = "H1", "?", [("1", "1")], True

    return ScenarioAnswersForm(items=[Item()]).fields["explanation_H1"].max_length


PAIRS = {
    "screening note": (
        field(ScreeningDecision, "note"),
        DecisionForm.base_fields["note"].max_length,
    ),
    "grader's note": (field(ExpertJudgment, "first_note"), grade_note_limit()),
    "second grader's note": (field(ExpertJudgment, "second_note"), grade_note_limit()),
    "final label's note": (
        field(ExpertJudgment, "resolution_note"),
        SettleForm(None, criterion_ids=[1]).fields["note-1"].max_length,
    ),
    "criterion": (field(Criterion, "text"), CriterionForm.base_fields["text"].max_length),
    "shared criterion": (
        field(SharedCriterion, "text"),
        SharedTextForm.base_fields["text"].max_length,
    ),
    "shared criteria notes": (
        field(SharedCriterionSet, "notes"),
        SharedCriteriaForm.base_fields["notes"].max_length,
    ),
    "comment": (field(ReviewComment, "body"), CommentForm.base_fields["body"].max_length),
    "request for changes": (
        field(ReviewComment, "body"),
        RequestChangesForm.base_fields["message"].max_length,
    ),
    "reason to send back": (
        field(Rubric, "reverification_reason"),
        SendBackForm.base_fields["reason"].max_length,
    ),
    "explanation": (field(Answer, "explanation"), explanation_limit()),
    "rejection message": (
        field(Participant, "rejection_message"),
        RejectForm.base_fields["message"].max_length,
    ),
    "consent text": (
        field(Study, "consent_text"),
        StudyForm.base_fields["consent_text"].max_length,
    ),
}


@pytest.mark.parametrize("text", list(PAIRS))
def test_the_column_and_the_form_give_text_the_same_limit(text):
    column, form = PAIRS[text]
    assert column is not None and column == form
