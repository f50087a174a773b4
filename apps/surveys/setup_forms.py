"""The form of a study's survey item on the researcher's setup pages (setup_views.py). The
item's own checks (its code's characters, one code per study, an attention check's answer)
are the model's, run again by `survey_item_save`; this form reads the scale's labels one a
line rather than as JSON, and says on its field what a rule of the model would report as a
whole."""

from django import forms

from .models import ItemKind, SurveyItem

MAX_SCALE_LABELS = 11
MAX_LABEL_CHARS = 200


class SurveyItemForm(forms.ModelForm):
    scale_labels = forms.CharField(
        label="Scale labels",
        required=False,
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text="Labelled scales: one label a line, lowest first (every point is labelled). "
        "Yes / no items: leave empty.",
    )

    class Meta:
        model = SurveyItem
        fields = [
            "code",
            "wording",
            "kind",
            "scale_labels",
            "explanation_required",
            "group",
            "order",
            "attention_check",
            "expected_value",
            "on_page",
        ]
        widgets = {"wording": forms.Textarea(attrs={"rows": 3})}
        help_texts = {
            "code": "Letters, digits and _ only, such as H1; unique in the study. Exports and "
            "reports name the item by it.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.scale_labels and not self.is_bound:
            self.initial["scale_labels"] = "\n".join(self.instance.scale_labels)

    def clean_scale_labels(self) -> list[str]:
        labels = [line.strip() for line in self.cleaned_data["scale_labels"].splitlines()]
        labels = [label for label in labels if label]
        if len(labels) > MAX_SCALE_LABELS:
            raise forms.ValidationError(f"A scale has at most {MAX_SCALE_LABELS} points.")
        for number, label in enumerate(labels, start=1):
            if len(label) > MAX_LABEL_CHARS:
                raise forms.ValidationError(
                    f"Label {number} is longer than {MAX_LABEL_CHARS} characters."
                )
        return labels

    def clean(self):
        data = super().clean()
        kind, labels = data.get("kind"), data.get("scale_labels") or []
        if kind == ItemKind.SCALE and len(labels) < 2:
            self.add_error("scale_labels", "A labelled scale needs at least two labels.")
        if kind == ItemKind.YES_NO and labels:
            self.add_error("scale_labels", "A yes / no item has no scale labels.")
        if data.get("attention_check") and not data.get("expected_value"):
            # Said on the field, rather than as the constraint's name (attention_check_has_answer).
            self.add_error("expected_value", "An attention check needs the answer it expects.")
        return data
