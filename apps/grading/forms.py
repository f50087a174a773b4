from decimal import Decimal

from django import forms

from apps.llm.forms import ParamsField
from apps.llm.models import CallStatus, ModelConfig, ModelKind, PromptTemplate, Purpose
from apps.rubrics.models import Kind, Polarity
from apps.runs.models import RunKind, SamplingRun

from .models import CallState, GradingMode

MODE_CHOICES = [
    (GradingMode.CHECKLIST, GradingMode.CHECKLIST.label),
    (GradingMode.PER_CRITERION, GradingMode.PER_CRITERION.label),
]


class PromptChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj):
        label = f"{obj.get_purpose_display()}, version {obj.version}"
        return f"{label}: {obj.notes}" if obj.notes else label


class GradingRunForm(forms.Form):
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
        required=False, label="Prompt version", empty_label="The newest for the mode",
        help_text="It must be a prompt for the mode chosen. Version 2 asks for the "
        "explanation before the verdict, as the published rater was asked.",
    )  # fmt: skip
    temperature = forms.DecimalField(
        initial=0, min_value=0, max_value=2, decimal_places=2,
        help_text="The published auto-rater graded at temperature 0.",
    )  # fmt: skip
    params = ParamsField(
        label="Other parameters (JSON)", refused=("temperature",),
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"max_tokens": 2000}'}),
        help_text="Generation parameters sent with every grader call; empty: none.",
    )  # fmt: skip
    budget_usd = forms.DecimalField(
        required=False, min_value=Decimal("0.01"), max_digits=10, decimal_places=2,
        label="Budget (USD)", help_text="Calls stop before the run spends more; empty: no budget.",
    )  # fmt: skip
    name = forms.CharField(
        required=False, max_length=200, help_text="Empty: named after the runs and the grader."
    )

    def service_arguments(self) -> dict:
        data = self.cleaned_data
        temperature = data["temperature"]
        return {
            "sampling_run": data["sampling_run"], "grader": data["grader"], "mode": data["mode"],
            "prompt": data["prompt"], "name": data["name"], "budget_usd": data["budget_usd"],
            "params": {**data["params"], "temperature": _number(temperature)},
        }  # fmt: skip


def _number(value: Decimal):
    """JSON keeps a float (or an int for a whole number): what litellm sends."""
    return int(value) if value == value.to_integral_value() else float(value)


class BudgetForm(forms.Form):
    budget_usd = forms.DecimalField(
        required=False, min_value=Decimal("0.01"), max_digits=10, decimal_places=2,
        label="Budget (USD)",
    )  # fmt: skip


# Ids in a query or form: whole numbers the database's bigint holds.
ID_MAX = 2**63 - 1


def id_field() -> forms.IntegerField:
    return forms.IntegerField(required=False, min_value=1, max_value=ID_MAX)


class JudgmentFilterForm(forms.Form):
    """The judgments page's filters; a value that does not parse is left out."""

    status = forms.ChoiceField(choices=CallState.choices, required=False)
    met = forms.ChoiceField(choices=[("yes", "Met"), ("no", "Not met")], required=False)
    kind = forms.ChoiceField(choices=Kind.choices, required=False)
    polarity = forms.ChoiceField(choices=Polarity.choices, required=False)
    model = id_field()
    question = id_field()
    response = id_field()

    def filters(self) -> dict[str, str]:
        """Each filter as the query gives it, "" where it is absent or does not parse."""
        self.is_valid()
        data = self.cleaned_data
        return {name: "" if data.get(name) is None else str(data[name]) for name in self.fields}


class RetryForm(forms.Form):
    """Which errored calls to make again: every one (empty), those a worker gave up on
    ("worker", stored without a kind), or those of one kind."""

    error_kind = forms.ChoiceField(
        choices=[("", "Every kind"), ("worker", "Given up by a worker"), *CallStatus.choices],
        required=False,
    )
