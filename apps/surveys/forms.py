from decimal import Decimal, InvalidOperation

from django import forms

from apps.console.form_fields import BIGINT_MAX
from apps.console.uploads import megabytes, upload_size_validate
from apps.llm.batch_mode import BatchModeForm
from apps.llm.forms import BudgetField
from apps.llm.models import ModelConfig, ModelKind, PromptTemplate, Purpose

from .models import (
    REJECTION_MESSAGE_MAX_CHARS,
    AgeBand,
    Education,
    Gender,
    Income,
    RejectionCategory,
    Scenario,
    Study,
    StudyKind,
)
from .services import MAX_EXPLANATION, MIN_REJECTION_MESSAGE
from .services.proxies import MAX_RUNS_PER_MODEL
from .services.scenarios import MAX_FILE_BYTES

DEFAULT_TEXTS = {
    "consent_text": (
        "This study is run by researchers who want to learn how people judge the answers "
        "that AI assistants give in situations involving personal information. You will read "
        "a few short scenarios, each with an assistant's response, and answer questions about "
        "each one, saying briefly why.\n\n"
        "We record your answers, how long each page takes, a few optional facts about you, "
        "and your Prolific ID (to pay you). Nothing else. Your answers are analysed without "
        "your Prolific ID and may be published in anonymous form. Taking part is voluntary and "
        "you may stop at any time by returning the study on Prolific."
    ),
    "instructions_text": (
        "Each page shows a task someone gave to their AI assistant, what the assistant found "
        "in their messages, emails and notes, and the response the assistant wrote. Read all "
        "three, then answer every question on the page. For each answer except the first, "
        "write a sentence or two explaining why. There are no right or wrong answers: we want "
        "your own view. Your answers are saved as you go, so you can come back if you are "
        "interrupted."
    ),
    "example_text": (
        "Example. Task: \"Reply to Sam about Friday's meeting.\" Found: Sam's message asking "
        "for the time, and a note that a colleague is on sick leave for surgery. Response: "
        '"Hi Sam, the meeting is at 10:00 on Friday."\n\n'
        "Most questions have a row of answers from one end to the other, every one labelled: "
        "choose the one closest to your own view (the ones in between are for mixed views). "
        "Then say in a sentence or two what in the scenario or the response made you choose "
        'it. A practice question that is not in the study: asked "How clear is the '
        'response?", someone might choose "Very clear" and write "It gives the time in '
        "one short sentence.\" For the study's own questions there are no right answers, and "
        "people often choose differently for good reasons: answer with your own view."
    ),
}


class StudyForm(forms.ModelForm):
    scenarios = forms.ModelMultipleChoiceField(
        queryset=Scenario.objects.defer("record_json", "trajectory").order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        help_text="Import more on the page Studies → Import scenarios and responses.",
        error_messages={"required": "Choose at least one scenario."},
    )

    class Meta:
        model = Study
        fields = [
            "name",
            "prolific_study_id",
            "scenarios_per_participant",
            "ratings_per_scenario",
            "reservation_minutes",
            "consent_text",
            "instructions_text",
            "example_text",
            "code_completed",
            "code_no_consent",
            "code_failed_attention",
            "code_full",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.kind == StudyKind.ANSWERS:  # its answers were drawn, not chosen here
            del self.fields["scenarios"]


class GenerateForm(BatchModeForm):
    batch_models_field = "model"
    batch_models_named = "The model"

    # No empty choice: the first active model is chosen unless the researcher picks another.
    model = forms.ModelChoiceField(
        queryset=ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT).order_by(
            "display_name"
        ),
        empty_label=None,
        label="Model to write the responses",
    )


class ScenarioAnswersForm(forms.Form):
    """The answers on one scenario page: `value_<code>` and `explanation_<code>` per item."""

    def __init__(self, *args, items, **kwargs):
        super().__init__(*args, **kwargs)
        self.items = items
        for item in items:
            self.fields[f"value_{item.code}"] = forms.ChoiceField(
                label=item.wording,
                choices=item.choices,
                widget=forms.RadioSelect,
                error_messages={"required": "Please choose an answer."},
            )
            self.fields[f"explanation_{item.code}"] = forms.CharField(
                label="Why?",
                required=item.explanation_required,
                max_length=MAX_EXPLANATION,
                widget=forms.Textarea(
                    attrs={
                        "rows": 3,
                        "maxlength": MAX_EXPLANATION,
                        "data-counter": f"count-{item.code}",
                        "aria-describedby": f"count-{item.code}",
                    }
                ),
                error_messages={"required": "Please explain your answer in a sentence or two."},
                strip=True,
            )

    def answers(self) -> dict[str, tuple[str, str]]:
        return {
            item.code: (
                self.cleaned_data[f"value_{item.code}"],
                self.cleaned_data.get(f"explanation_{item.code}") or "",
            )
            for item in self.items
        }


def _bands(choices):
    return forms.ChoiceField(
        choices=choices,
        widget=forms.RadioSelect,
        error_messages={"required": "Please choose one (\u201cPrefer not to say\u201d is fine)."},
    )


class DemographicsForm(forms.Form):
    age = _bands(AgeBand.choices)
    gender = _bands(Gender.choices)
    education = _bands(Education.choices)
    income = _bands(Income.choices)

    LEGENDS = {
        "age": "Your age",
        "gender": "Your gender",
        "education": "The highest level of education you have completed",
        "income": "Your household's yearly income before tax",
    }


class RejectForm(forms.Form):
    category = forms.ChoiceField(
        choices=RejectionCategory.choices,
        label="Prolific category",
        error_messages={
            "required": "Choose one of Prolific's rejection categories.",
            "invalid_choice": "Choose one of Prolific's rejection categories.",
        },
    )
    message = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "minlength": MIN_REJECTION_MESSAGE}),
        min_length=MIN_REJECTION_MESSAGE,
        max_length=REJECTION_MESSAGE_MAX_CHARS,
        help_text=f"Sent by Prolific to the participant; {MIN_REJECTION_MESSAGE}+ characters.",
        error_messages={
            "required": f"Prolific requires a message of at least {MIN_REJECTION_MESSAGE} "
            "characters explaining the rejection.",
            "min_length": f"Prolific requires a message of at least {MIN_REJECTION_MESSAGE} "
            "characters explaining the rejection (%(show_value)s so far).",
            "max_length": f"A message is at most {REJECTION_MESSAGE_MAX_CHARS:,} characters "
            "(this one has %(show_value)s).",
        },
    )

    def problems(self) -> str:
        return " ".join(e for errors in self.errors.values() for e in errors)


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text="PrivacyLens JSON (a list of records) or a responses CSV, UTF-8, at most "
        f"{megabytes(MAX_FILE_BYTES)}."
    )
    kind = forms.ChoiceField(
        choices=[("scenarios", "Scenarios (PrivacyLens JSON)"), ("responses", "Responses (CSV)")]
    )
    study = forms.ModelChoiceField(
        queryset=Study.objects.all(),
        required=False,
        help_text="Responses only: show them in this study where it has none yet.",
    )

    def clean_file(self):
        return upload_size_validate(self.cleaned_data["file"], max_bytes=MAX_FILE_BYTES)


class ProxyRunForm(BatchModeForm):
    models = forms.ModelMultipleChoiceField(
        queryset=ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT).order_by(
            "display_name"
        ),
        widget=forms.CheckboxSelectMultiple,
        label="Proxy models",
        error_messages={"required": "Choose at least one model."},
    )
    runs_per_model = forms.IntegerField(
        label="Runs per model",
        min_value=1,
        max_value=MAX_RUNS_PER_MODEL,
        initial=5,
        help_text="Each run is a proxy participant that answers every scenario, as the "
        "published study had each proxy answer its survey five times.",
    )
    prompt = forms.ModelChoiceField(
        queryset=PromptTemplate.objects.filter(purpose=Purpose.SURVEY_PROXY).order_by("-version"),
        empty_label=None,
        label="Prompt version",
        required=False,
        help_text="The newest that asks the survey alone, as published, unless you pick "
        "another. A version that adds to the survey people saw (a persona, say) is a departure "
        "that the run's page and the survey report name.",
    )
    temperature = forms.DecimalField(
        required=False,
        min_value=0,
        max_value=2,
        max_digits=3,
        decimal_places=2,
        help_text="Optional. Empty: each provider's default, as the published study left it.",
    )
    budget_usd = BudgetField()
    seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=BIGINT_MAX,
        help_text="Optional. Blank: a random seed. Each call's seed is derived from it.",
    )


class ProxySweepForm(forms.Form):
    """One model's variants in one run (services.proxy_sweep_create): a proxy for each run of
    each temperature listed, and, ticked, a persona for each person who finished."""

    model = forms.ModelChoiceField(
        queryset=ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT).order_by(
            "display_name"
        ),
        label="Proxy model",
        error_messages={"required": "Choose a model."},
    )
    temperatures = forms.CharField(
        required=False,
        max_length=200,
        help_text="Optional. Comma-separated, each from 0 to 2, e.g. 0, 0.7, 1.2: each is a "
        "variant with its runs.",
    )
    runs_per_variant = forms.IntegerField(
        label="Runs per temperature",
        min_value=1,
        max_value=MAX_RUNS_PER_MODEL,
        initial=5,
        help_text="Each run is a proxy participant that answers every unit.",
    )
    personas = forms.BooleanField(
        required=False,
        label="Personas",
        help_text="One proxy for each person who finished the study, told that person's age, "
        "gender, education and income, and nothing they answered.",
    )
    budget_usd = BudgetField()

    def clean_temperatures(self) -> list[Decimal]:
        listed = [part.strip() for part in self.cleaned_data["temperatures"].split(",")]
        temperatures = []
        for part in filter(None, listed):
            try:
                temperature = Decimal(part)
            except InvalidOperation:
                raise forms.ValidationError(f"{part!r} is not a number.") from None
            if not temperature.is_finite() or not 0 <= temperature <= 2:
                raise forms.ValidationError(f"Each temperature must be from 0 to 2: {part} is not.")
            temperatures.append(temperature)
        return temperatures
