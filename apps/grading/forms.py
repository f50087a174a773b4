from decimal import Decimal

from django import forms

from apps.console.form_fields import IdField
from apps.llm.batch_mode import BatchModeForm
from apps.llm.forms import BudgetField, ParamsField
from apps.llm.models import ModelConfig, ModelKind, PromptTemplate, Purpose
from apps.rubrics.models import Kind, Polarity
from apps.runs.models import RunKind, SamplingRun

from .models import NOTE_MAX_CHARS, CallState, GradingMode
from .selectors.calibration import DIRECTIONS

MODE_CHOICES = [
    (GradingMode.CHECKLIST, GradingMode.CHECKLIST.label),
    (GradingMode.PER_CRITERION, GradingMode.PER_CRITERION.label),
]


class PromptChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj):
        label = f"{obj.get_purpose_display()}, version {obj.version}"
        return f"{label}: {obj.notes}" if obj.notes else label


class GradingRunForm(BatchModeForm):
    batch_models_field = "grader"
    batch_models_named = "The grader"

    sampling_run = forms.ModelChoiceField(
        queryset=SamplingRun.objects.filter(kind=RunKind.BENCHMARK).order_by("-created_at"),
        help_text="Its answers are graded; a run still sampling is graded as its answers come.",
    )
    grader = forms.ModelChoiceField(
        queryset=ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT), label="Grader model"
    )
    mode = forms.ChoiceField(
        choices=MODE_CHOICES, initial=GradingMode.CHECKLIST, widget=forms.RadioSelect
    )
    prompt = PromptChoice(
        queryset=PromptTemplate.objects.filter(
            purpose__in=[Purpose.GRADE_CHECKLIST, Purpose.GRADE_CRITERION]
        ).order_by("purpose", "-version"),
        required=False,
        label="Prompt version",
        empty_label="The newest for the mode",
        help_text="It must be a prompt for the mode chosen. Version 2 asks for the "
        "explanation before the verdict, as the published rater was asked.",
    )
    temperature = forms.DecimalField(
        initial=0,
        min_value=0,
        max_value=2,
        decimal_places=2,
        help_text="The published auto-rater graded at temperature 0.",
    )
    params = ParamsField(
        label="Other parameters (JSON)",
        refused=("temperature",),
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"max_tokens": 2000}'}),
        help_text="Generation parameters sent with every grader call; empty: none.",
    )
    budget_usd = BudgetField()
    name = forms.CharField(
        required=False, max_length=200, help_text="Empty: named after the runs and the grader."
    )

    def service_arguments(self) -> dict:
        data = self.cleaned_data
        temperature = data["temperature"]
        return {
            "sampling_run": data["sampling_run"],
            "grader": data["grader"],
            "mode": data["mode"],
            "prompt": data["prompt"],
            "name": data["name"],
            "budget_usd": data["budget_usd"],
            "params": {**data["params"], "temperature": _number(temperature)},
            **self.batch_arguments(),
        }


def _number(value: Decimal):
    """JSON keeps a float (or an int for a whole number): what litellm sends."""
    return int(value) if value == value.to_integral_value() else float(value)


class JudgmentFilterForm(forms.Form):
    """The judgments page's filters; a value that does not parse is left out."""

    status = forms.ChoiceField(choices=CallState.choices, required=False)
    met = forms.ChoiceField(choices=[("yes", "Met"), ("no", "Not met")], required=False)
    kind = forms.ChoiceField(choices=Kind.choices, required=False)
    polarity = forms.ChoiceField(choices=Polarity.choices, required=False)
    model = IdField(required=False)
    question = IdField(required=False)
    response = IdField(required=False)

    def filters(self) -> dict[str, str]:
        """Each filter as the query gives it, "" where it is absent or does not parse."""
        self.is_valid()
        data = self.cleaned_data
        return {name: "" if data.get(name) is None else str(data[name]) for name in self.fields}


NOTE_TOO_LONG = f"A note is at most {NOTE_MAX_CHARS:,} characters (this one has %(show_value)s)."


def note_field() -> forms.CharField:
    return forms.CharField(
        required=False, max_length=NOTE_MAX_CHARS, error_messages={"max_length": NOTE_TOO_LONG}
    )


class GradeForm(forms.Form):
    """A grade of one answer, in part or whole: `met-<criterion id>` ("1" met, "0" not) and
    `note-<criterion id>` for each of the answer's criteria. A note not sent is left as it
    was; an empty one is cleared."""

    def __init__(self, data, *, criterion_ids):
        super().__init__(data)
        self.criterion_ids = list(criterion_ids)
        for pk in self.criterion_ids:
            self.fields[f"met-{pk}"] = forms.ChoiceField(
                choices=[("1", "Met"), ("0", "Not met")], required=False
            )
            self.fields[f"note-{pk}"] = note_field()

    def labels(self) -> dict[int, bool]:
        data = self.cleaned_data
        return {pk: data[f"met-{pk}"] == "1" for pk in self.criterion_ids if data[f"met-{pk}"]}

    def notes(self) -> dict[int, str]:
        return {
            pk: self.cleaned_data[f"note-{pk}"]
            for pk in self.criterion_ids
            if f"note-{pk}" in self.data
        }

    def row_error(self, pk: int) -> str:
        return " ".join([*self.errors.get(f"met-{pk}", []), *self.errors.get(f"note-{pk}", [])])


class SettleForm(forms.Form):
    """The final labels of an answer's disagreements, sent together: `final-<criterion id>`
    ("1" met, "0" not met, absent: not settled now), `note-<criterion id>` (a note sent
    replaces the one kept), `pick-<criterion id>` to select a criterion, and the `author`
    button that gives every selected criterion the rubric author's label."""

    author = forms.BooleanField(required=False)

    def __init__(self, data, *, criterion_ids):
        super().__init__(data)
        self.criterion_ids = list(criterion_ids)
        for pk in self.criterion_ids:
            self.fields[f"final-{pk}"] = forms.ChoiceField(
                choices=[("1", "Met"), ("0", "Not met")], required=False
            )
            self.fields[f"note-{pk}"] = note_field()
            self.fields[f"pick-{pk}"] = forms.BooleanField(required=False)

    def finals(self) -> dict[int, bool]:
        data = self.cleaned_data
        return {pk: data[f"final-{pk}"] == "1" for pk in self.criterion_ids if data[f"final-{pk}"]}

    def notes(self) -> dict[int, str]:
        return {
            pk: self.cleaned_data[f"note-{pk}"]
            for pk in self.criterion_ids
            if f"note-{pk}" in self.data
        }

    def from_author(self) -> list[int]:
        """The selected criteria, when the author's-label button was pressed."""
        if not self.cleaned_data["author"]:
            return []
        return [pk for pk in self.criterion_ids if self.cleaned_data[f"pick-{pk}"]]

    def row_error(self, pk: int) -> str:
        return " ".join([*self.errors.get(f"final-{pk}", []), *self.errors.get(f"note-{pk}", [])])


class UndoForm(forms.Form):
    """Undo: the answer whose grade the page offered to reopen, so that a second press of
    the key, or a second tab, never reopens the grade before it unseen."""

    sample = IdField(required=False)


class ReportFilterForm(forms.Form):
    """The report's filters and the grading run to compare with; a value that does not
    parse is left out."""

    kind = forms.ChoiceField(choices=Kind.choices, required=False)
    polarity = forms.ChoiceField(choices=Polarity.choices, required=False)
    model = IdField(required=False)
    direction = forms.ChoiceField(choices=DIRECTIONS, required=False)
    compare = IdField(required=False)

    def values(self) -> dict:
        self.is_valid()
        return {name: self.cleaned_data.get(name) for name in self.fields}
