"""Batch mode as a run chooses it when it is made (apps/llm/batches.py sends its calls): the
two fields of the forms and of the API that choose it, which put the check every service
makes (`batches.batch_mode_refusal`) on the field."""

from django import forms
from rest_framework import serializers

from .batches import batch_mode_refusal
from .models import BatchRetry, ModelConfig

BATCH_MODE_LABEL = "Batch mode"
BATCH_RETRY_LABEL = "Failed batch lines"
BATCH_MODE_HELP = (
    "Send the calls through the provider's batch API, at the model's batch price (about half "
    "its list price), answered within 24 hours rather than at once. {who} needs a batch API "
    "(its model config says so)."
)
BATCH_RETRY_HELP = (
    "In batch mode: where a call the provider failed in a batch (a server error, an answer "
    "that failed validation) is asked again. A call a batch never ran (it expired or was "
    "cancelled) always waits for the next batch."
)


def _as_list(chosen) -> list[ModelConfig]:
    if chosen is None:
        return []
    return [chosen] if isinstance(chosen, ModelConfig) else list(chosen)


class BatchModeForm(forms.Form):
    """The two fields, for a form that makes a run; `batch_models_field` names its field of
    models (one model, or several), whose every model needs a batch API in batch mode."""

    batch_models_field = "models"
    batch_models_named = "Every model of the run"  # who needs a batch API, in the help

    batch_mode = forms.BooleanField(required=False, label=BATCH_MODE_LABEL)
    batch_retry = forms.TypedChoiceField(
        choices=BatchRetry.choices,
        initial=BatchRetry.BATCH,
        required=False,
        empty_value=BatchRetry.BATCH,
        label=BATCH_RETRY_LABEL,
        help_text=BATCH_RETRY_HELP,
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["batch_mode"].help_text = BATCH_MODE_HELP.format(who=self.batch_models_named)

    def clean(self):
        data = super().clean()
        if self.batch_models_field in data:  # else its own error says why
            problem = batch_mode_refusal(
                batch_mode=data.get("batch_mode", False),
                batch_retry=data.get("batch_retry") or BatchRetry.BATCH,
                models=_as_list(data[self.batch_models_field]),
            )
            if problem:
                self.add_error("batch_mode", problem)
        return data

    def batch_arguments(self) -> dict:
        """The two settings, as the services take them."""
        data = self.cleaned_data
        return {"batch_mode": data["batch_mode"], "batch_retry": data["batch_retry"]}


class BatchModeSerializer(serializers.Serializer):
    """The two fields, for a serializer that makes a run, as `BatchModeForm` for a form."""

    batch_models_field = "models"
    batch_models_named = "Every model of the run"

    batch_mode = serializers.BooleanField(required=False, default=False)
    batch_retry = serializers.ChoiceField(
        choices=BatchRetry.choices,
        required=False,
        default=BatchRetry.BATCH,
        help_text=BATCH_RETRY_HELP,
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["batch_mode"].help_text = BATCH_MODE_HELP.format(who=self.batch_models_named)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        problem = batch_mode_refusal(
            batch_mode=attrs["batch_mode"],
            batch_retry=attrs["batch_retry"],
            models=_as_list(attrs.get(self.batch_models_field)),
        )
        if problem:
            raise serializers.ValidationError({"batch_mode": problem})
        return attrs

    def batch_arguments(self, attrs) -> dict:
        return {"batch_mode": attrs["batch_mode"], "batch_retry": attrs["batch_retry"]}
