import re

from django import forms

from apps.accounts.roles import Role
from apps.console.uploads import upload_size_validate
from apps.questions.models import Topic

from . import selectors
from .interchange import CONVERSATIONS, MAX_IMPORT_BYTES, POINT_MAPPINGS
from .models import (
    COMMENT_MAX_CHARS,
    CRITERION_MAX_CHARS,
    NOTES_MAX_CHARS,
    POINTS,
    Kind,
    Polarity,
    Rubric,
    RubricImport,
)

POINTS_MESSAGE = "Points must be 5, 3, 2 or 1."


class CriterionForm(forms.Form):
    """The shape of a criterion from the editor; the service checks the rest (duplicates)."""

    text = forms.CharField(
        max_length=CRITERION_MAX_CHARS,
        error_messages={
            "required": "Write what a good answer should include or avoid: the text is empty.",
            "max_length": "Keep a criterion under 1,000 characters.",
        },
    )
    polarity = forms.ChoiceField(
        choices=Polarity.choices,
        error_messages={
            "required": "Choose should include or should avoid.",
            "invalid_choice": "Choose should include or should avoid.",
        },
    )
    kind = forms.ChoiceField(
        choices=Kind.choices,
        error_messages={
            "required": "Choose factual or presentation.",
            "invalid_choice": "Choose factual or presentation.",
        },
    )
    points = forms.TypedChoiceField(
        choices=[(p, p) for p in POINTS],
        coerce=int,
        error_messages={"required": POINTS_MESSAGE, "invalid_choice": POINTS_MESSAGE},
    )

    def field_errors(self) -> dict[str, str]:
        return {name: " ".join(errors) for name, errors in self.errors.items()}


COMMENT_TOO_LONG = (
    f"A comment is at most {COMMENT_MAX_CHARS:,} characters (this one has %(show_value)s)."
)


class CommentForm(forms.Form):
    body = forms.CharField(
        max_length=COMMENT_MAX_CHARS,
        error_messages={"required": "Write a comment first.", "max_length": COMMENT_TOO_LONG},
    )
    criterion = forms.IntegerField(required=False)


class RequestChangesForm(forms.Form):
    message = forms.CharField(
        required=False,
        max_length=COMMENT_MAX_CHARS,
        label="What should change",
        error_messages={"max_length": COMMENT_TOO_LONG},
    )


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


class SharedTextForm(forms.Form):
    """A shared criterion's text, within the editor's limit."""

    text = forms.CharField(
        max_length=CRITERION_MAX_CHARS,
        error_messages={
            "max_length": f"Keep a criterion under {CRITERION_MAX_CHARS:,} "
            "characters (this one has %(show_value)s)."
        },
    )


class SharedCriteriaForm(forms.Form):
    notes = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        max_length=NOTES_MAX_CHARS,
        error_messages={
            "max_length": f"Notes are at most {NOTES_MAX_CHARS:,} characters "
            "(these have %(show_value)s)."
        },
    )


class RubricImportForm(forms.Form):
    file = forms.FileField()
    format = forms.ChoiceField(choices=RubricImport.Format.choices)
    points_mapping = forms.ChoiceField(
        choices=[(k, label) for k, (label, _f) in POINT_MAPPINGS.items()], initial="refuse"
    )
    conversation = forms.ChoiceField(choices=list(CONVERSATIONS.items()), initial="refuse")
    default_topic = forms.ModelChoiceField(
        queryset=Topic.objects.all(),
        required=False,
        to_field_name="name",
        empty_label="(none: refuse items without a known theme)",
    )

    def clean_file(self):
        return upload_size_validate(self.cleaned_data["file"], max_bytes=MAX_IMPORT_BYTES)


# Numbers in a query or form: ASCII digits only (str.isdigit() admits "²", which int()
# refuses), and few enough of them for the database's bigint.
WHOLE_NUMBER = re.compile(r"[0-9]{1,18}", re.ASCII)


def whole_number_or_text(value: str) -> int | str:
    """A form row's number as an int, or the text as it came (the service refuses it)."""
    value = value.strip()
    return int(value) if WHOLE_NUMBER.fullmatch(value) else value


class IdListField(forms.CharField):
    """Comma-separated ids ("3,7"); at most `max_ids` are kept."""

    def __init__(self, *, max_ids: int = 4, **kwargs):
        self.max_ids = max_ids
        super().__init__(required=False, max_length=200, **kwargs)

    def to_python(self, value):
        parts = [p.strip() for p in super().to_python(value).split(",") if p.strip()]
        if not all(WHOLE_NUMBER.fullmatch(p) for p in parts):
            raise forms.ValidationError(
                "Answers are named by whole numbers separated by commas, such as 3,7."
            )
        return [int(p) for p in parts][: self.max_ids]


class SampleIdsForm(forms.Form):
    """The sample answers shown (GET `show`) or to leave out (POST `exclude`)."""

    show = IdListField()
    exclude = IdListField()

    def ids(self, name: str) -> tuple[list[int], str]:
        """(ids, "") or ([], why they were refused)."""
        if name in self.errors:
            return [], " ".join(self.errors[name])
        return self.cleaned_data.get(name) or [], ""


FRESHNESS_DAYS = 180


class FreshnessForm(forms.Form):
    days = forms.IntegerField(
        min_value=0,
        max_value=36500,
        required=False,
        error_messages={
            "invalid": "Days must be a whole number.",
            "min_value": "Days must be 0 or more.",
            "max_value": "Days must be at most 36,500 (a hundred years).",
        },
    )

    def days_or_default(self) -> tuple[int, str]:
        """(days, "") or (the default, why the given number was not used)."""
        if not self.is_valid():
            why = " ".join(self.errors["days"])
            return FRESHNESS_DAYS, f"{why} Showing {FRESHNESS_DAYS} days instead."
        days = self.cleaned_data["days"]
        return (FRESHNESS_DAYS if days is None else days), ""


class SendBackForm(forms.Form):
    rubric = forms.ModelMultipleChoiceField(
        queryset=Rubric.objects.select_related("question"),
        error_messages={
            "required": "Choose the rubrics to send back.",
            "invalid_choice": "Choose rubrics from the list: %(value)s is not one of them.",
            "invalid_pk_value": "Choose rubrics from the list: %(pk)s is not one of them.",
        },
    )
    reason = forms.CharField(required=False, max_length=COMMENT_MAX_CHARS)


def topic_chosen(query) -> Topic | None:
    """The topic a list is filtered by (`?topic=slug`), or None for any value that names no
    topic, a NUL included (PostgreSQL refuses NUL in a query's text)."""
    form = TopicFilterForm(query)
    if not form.is_valid() or not form.cleaned_data["topic"]:
        return None
    return Topic.objects.filter(slug=form.cleaned_data["topic"]).first()


class TopicFilterForm(forms.Form):
    topic = forms.SlugField(required=False, max_length=Topic._meta.get_field("slug").max_length)
