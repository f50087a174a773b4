from django import forms

from apps.accounts.roles import Role
from apps.questions.models import Topic

from . import selectors
from .interchange import CONVERSATIONS, POINT_MAPPINGS
from .models import POINTS, Kind, Polarity, RubricImport

POINTS_MESSAGE = "Points must be 5, 3, 2 or 1."


class CriterionForm(forms.Form):
    """The shape of a criterion from the editor; the service checks the rest (duplicates)."""

    text = forms.CharField(
        max_length=1000, error_messages={
            "required": "Write what a good answer should include or avoid: the text is empty.",
            "max_length": "Keep a criterion under 1,000 characters.",
        },
    )  # fmt: skip
    polarity = forms.ChoiceField(
        choices=Polarity.choices,
        error_messages={"required": "Choose should include or should avoid.",
                        "invalid_choice": "Choose should include or should avoid."},
    )  # fmt: skip
    kind = forms.ChoiceField(
        choices=Kind.choices,
        error_messages={"required": "Choose factual or presentation.",
                        "invalid_choice": "Choose factual or presentation."},
    )  # fmt: skip
    points = forms.TypedChoiceField(
        choices=[(p, p) for p in POINTS], coerce=int,
        error_messages={"required": POINTS_MESSAGE, "invalid_choice": POINTS_MESSAGE},
    )  # fmt: skip

    def field_errors(self) -> dict[str, str]:
        return {name: " ".join(errors) for name, errors in self.errors.items()}


class RevisionForm(forms.Form):
    revision = forms.IntegerField(min_value=0)


class CommentForm(forms.Form):
    body = forms.CharField(max_length=4000, error_messages={"required": "Write a comment first."})
    criterion = forms.IntegerField(required=False)


class AssignmentForm(forms.Form):
    author = forms.ModelChoiceField(
        queryset=selectors.people_with_role(role=Role.EXPERT), required=False
    )
    reviewer = forms.ModelChoiceField(
        queryset=selectors.people_with_role(role=Role.REVIEWER), required=False
    )


class ClaimingForm(forms.Form):
    open = forms.BooleanField(required=False)
    default_reviewer = forms.ModelChoiceField(
        queryset=selectors.people_with_role(role=Role.REVIEWER), required=False
    )


class SharedCriteriaForm(forms.Form):
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


class RubricImportForm(forms.Form):
    file = forms.FileField()
    format = forms.ChoiceField(choices=RubricImport.Format.choices)
    points_mapping = forms.ChoiceField(
        choices=[(k, label) for k, (label, _f) in POINT_MAPPINGS.items()], initial="refuse"
    )
    conversation = forms.ChoiceField(choices=list(CONVERSATIONS.items()), initial="refuse")
    default_topic = forms.ModelChoiceField(
        queryset=Topic.objects.all(), required=False, to_field_name="name",
        empty_label="(none: refuse items without a known theme)",
    )  # fmt: skip
