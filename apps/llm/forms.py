from decimal import Decimal

from django import forms

from apps.console.uploads import UploadRefused, json_parse

from .models import ModelConfig
from .params import ParamsError, params_check

# The longest parameters (JSON) a researcher's form takes for a run's calls.
PARAMS_MAX_CHARS = 10_000


class ParamsField(forms.CharField):
    """Generation parameters typed as a JSON object: read as an uploaded file's JSON is (no
    NUL or lone surrogate escaped in it, which the column cannot hold; no key twice; not
    nested past reason), then checked against the allowlist (apps/llm/params.py). Empty:
    none. `refused` names parameters the form sets in fields of their own."""

    def __init__(self, *, refused: tuple[str, ...] = (), **kwargs):
        self.refused = refused
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", PARAMS_MAX_CHARS)
        super().__init__(**kwargs)

    def clean(self, value) -> dict:
        text = super().clean(value).strip()
        if not text:
            return {}
        try:
            params = json_parse(text)
        except UploadRefused as exc:
            raise forms.ValidationError(f"These parameters cannot be used: {exc}.") from exc
        for name in self.refused:
            if isinstance(params, dict) and name in params:
                raise forms.ValidationError(f"Set the {name} in its own field.")
        try:
            return params_check(params)
        except ParamsError as exc:
            raise forms.ValidationError(str(exc)) from None


class BudgetField(forms.DecimalField):
    """A run's budget in USD, as a run stores it (apps/llm/models.py `Run`): more than $0,
    or empty for none."""

    def __init__(self, **kwargs):
        kwargs.setdefault("label", "Budget (USD)")
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", "Optional. The run stops before it would spend more.")
        super().__init__(min_value=Decimal("0.01"), max_digits=12, decimal_places=2, **kwargs)


class BudgetForm(forms.Form):
    """A run's budget, set on its page (every kind of run's controls, templates/partials)."""

    budget_usd = BudgetField(help_text="Empty: no budget.")


class ModelConfigForm(forms.ModelForm):
    """A model config, on the researcher's models page and in the console alike: the
    model's own checks (ModelConfig.clean: provider in the model string, allowed parameters,
    where a key may be sent, floor under ceiling) run on save."""

    api_base = forms.URLField(
        label="API base",
        required=False,
        assume_scheme="https",  # a base typed without its scheme
        max_length=ModelConfig._meta.get_field("api_base").max_length,
        help_text=ModelConfig._meta.get_field("api_base").help_text,
    )

    class Meta:
        model = ModelConfig
        fields = [
            "display_name",
            "family",
            "version",
            "released_on",
            "litellm_model",
            "kind",
            "active",
            "api_base",
            "api_key_env",
            "timeout_seconds",
            "params",
            "max_concurrent",
            "adapts_concurrency",
            "min_concurrent",
            "requests_per_minute",
            "tokens_per_minute",
            "input_price_per_mtok",
            "output_price_per_mtok",
            "batch_api",
            "batch_discount",
            "batch_max_requests",
            "batch_max_bytes",
        ]
        widgets = {
            "released_on": forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
            "params": forms.Textarea(attrs={"rows": 3}),
        }
