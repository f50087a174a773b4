from django import forms
from django.db.models import QuerySet

from apps.console.form_fields import BIGINT_MAX
from apps.llm.batch_mode import BatchModeForm
from apps.llm.forms import BudgetField, ParamsField
from apps.llm.models import ModelConfig, ModelKind, PromptTemplate, Purpose
from apps.questions.models import GUIDANCE_HELP, SENSEMAKING_HELP, LengthBucket, Question, Topic

from .models import ResponseStatus, SamplingRun
from .selection import question_conditions, questions_select
from .selectors import APPROVED_RUBRIC
from .services.sampling import MAX_SAMPLES

PRIOR_ATTEMPT = [("", "Either"), ("yes", "Mentions one"), ("no", "Mentions none")]
NEEDED = [("", "Either"), ("yes", "Asks for it"), ("no", "Labelled as not asking for it")]
YES_NO = {"yes": True, "no": False}


class ModelChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, model):
        # The page adds the "offline demo model" badge beside the offline provider's models.
        return model.display_name


class SelectionForm(forms.Form):
    """Which questions a run answers: registered conditions, topic and strata."""

    conditions = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Only questions",
    )
    topics = forms.ModelMultipleChoiceField(
        queryset=Topic.objects.all(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every topic.",
    )
    length_buckets = forms.MultipleChoiceField(
        choices=LengthBucket.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Length",
        help_text="None ticked: every length.",
    )
    prior_attempt = forms.ChoiceField(
        choices=PRIOR_ATTEMPT,
        required=False,
        label="A prior attempt to solve it",
    )
    # The two needs are labelled independently; choosing both narrows to questions with both.
    needs_sensemaking = forms.ChoiceField(
        choices=NEEDED,
        required=False,
        label="Sensemaking",
        help_text=SENSEMAKING_HELP,
    )
    needs_guidance = forms.ChoiceField(
        choices=NEEDED,
        required=False,
        label="Guidance",
        help_text=GUIDANCE_HELP,
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        conditions = question_conditions()
        self.fields["conditions"].choices = [(c.key, c.label) for c in conditions]
        if any(c.key == APPROVED_RUBRIC for c in conditions):
            self.fields["conditions"].initial = [APPROVED_RUBRIC]

    def selection(self) -> dict:
        """The filters as stored on the run (`SamplingRun.selection`)."""
        data = self.cleaned_data
        return {
            "conditions": list(data["conditions"]),
            "topics": sorted(t.pk for t in data["topics"]),
            "length_buckets": list(data["length_buckets"]),
            "prior_attempt": YES_NO.get(data["prior_attempt"]),
            "needs_sensemaking": YES_NO.get(data["needs_sensemaking"]),
            "needs_guidance": YES_NO.get(data["needs_guidance"]),
        }

    def questions(self) -> QuerySet[Question]:
        return questions_select(**self.selection())


class RunForm(SelectionForm, BatchModeForm):
    name = forms.CharField(max_length=SamplingRun._meta.get_field("name").max_length)
    models = ModelChoices(
        queryset=ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT).order_by(
            "display_name"
        ),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one model."},
    )
    samples_per_item = forms.IntegerField(
        label="Answers per question",
        min_value=1,
        max_value=MAX_SAMPLES,
        initial=5,
        help_text="Each answer is a separate call with its own seed.",
    )
    prompt = forms.ModelChoiceField(
        queryset=PromptTemplate.objects.filter(purpose=Purpose.SAMPLE).order_by("-version"),
        empty_label=None,
        label="Prompt version",
        help_text="The newest is chosen unless you pick another.",
    )
    params = ParamsField(
        label="Parameters (JSON)",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"temperature": 0.7}'}),
        help_text="Sent with every call, over each model's own. Leave empty to use the "
        "providers' defaults (the published benchmark did).",
    )
    budget_usd = BudgetField()
    seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=BIGINT_MAX,
        help_text="Optional. Blank: a random seed. The same seed asks every model the same "
        "calls again, as far as the provider honours seeds.",
    )

    field_order = ["name"]


def data_as_initial(form_class: type[forms.Form], data) -> dict:
    """A submitted form's values as `initial` for a fresh form of `form_class`, so that the
    page can be shown again (after counting the questions) without showing errors for
    fields not filled in yet. An unticked box is absent from the data: an empty list."""
    initial = {}
    for name, field in form_class.base_fields.items():
        if isinstance(field, forms.MultipleChoiceField):
            initial[name] = data.getlist(name)
        elif name in data:
            initial[name] = data.get(name)
    return initial


class ResponseFilterForm(forms.Form):
    model = forms.ModelChoiceField(
        queryset=ModelConfig.objects.none(), required=False, empty_label="Every model"
    )
    status = forms.ChoiceField(required=False)
    question = forms.CharField(required=False, max_length=200, label="Question (id or words in it)")

    def __init__(self, *args, run: SamplingRun, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].queryset = run.model_configs.order_by("display_name")
        self.fields["model"].label_from_instance = str
        self.fields["status"].choices = [("", "Any status"), *ResponseStatus.choices]
