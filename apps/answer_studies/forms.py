from django import forms

from apps.grading.models import GradingRun
from apps.llm.models import run_seed
from apps.runs.models import RunKind, SamplingRun

from . import selectors
from .services import MAX_PER_STRATUM


class AnswerStudyForm(forms.Form):
    """A new answer study's draw. Its texts and completion codes start as the defaults and are
    edited on the study's own page afterwards, as a scenario study's are."""

    name = forms.CharField(max_length=200)
    sampling_run = forms.ModelChoiceField(
        queryset=SamplingRun.objects.filter(kind=RunKind.BENCHMARK).order_by("-created_at"),
        help_text="The benchmark run whose answers participants rate.",
    )
    grading_run = forms.ModelChoiceField(
        queryset=GradingRun.objects.none(),
        help_text="One of the run's grading runs with scores: each answer's score band is "
        "its, and its rubrics' shared presentation criteria become questions.",
    )
    seed = forms.IntegerField(
        min_value=0,
        max_value=2**63 - 1,
        initial=run_seed,
        help_text="The same run, grading run, seed and numbers draw the same answers.",
    )
    answers_per_stratum = forms.IntegerField(
        min_value=0,
        max_value=MAX_PER_STRATUM,
        initial=5,
        help_text="Drawn from each model, topic and score band (all of them where it has fewer).",
    )
    pairs_per_model_pair = forms.IntegerField(
        label="Pairs per two models",
        min_value=0,
        max_value=MAX_PER_STRATUM,
        initial=0,
        help_text="For every two models: questions both answered, one answer of each, to "
        "compare. 0: no pairs.",
    )
    ratings_per_unit = forms.IntegerField(
        label="Ratings per unit (k)",
        min_value=1,
        max_value=1000,
        initial=5,
        help_text="Every answer or pair gets exactly this many ratings from people.",
    )
    units_per_participant = forms.IntegerField(
        min_value=1, max_value=50, initial=5, help_text="Answers or pairs each participant rates."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        chosen = (
            self.data.get("sampling_run") if self.is_bound else self.initial.get("sampling_run")
        )
        run = run_chosen(chosen)
        self.fields["grading_run"].queryset = selectors.grading_runs_of(sampling_run=run)

    def clean(self):
        data = super().clean()
        run, grading = data.get("sampling_run"), data.get("grading_run")
        if run and grading and grading.sampling_run_id != run.pk:
            self.add_error("grading_run", "This grading run grades another sampling run.")
        return data


def run_chosen(value) -> SamplingRun | None:
    """The benchmark run a submitted id names, or None."""
    value = str(getattr(value, "pk", value) or "")
    if not (value.isascii() and value.isdigit() and len(value) < 19):
        return None
    return SamplingRun.objects.filter(kind=RunKind.BENCHMARK, pk=int(value)).first()


def grading_chosen(run: SamplingRun | None, value) -> GradingRun | None:
    """The grading run of `run` a submitted id names, or None."""
    value = str(getattr(value, "pk", value) or "")
    if run is None or not (value.isascii() and value.isdigit() and len(value) < 19):
        return None
    return GradingRun.objects.filter(sampling_run=run, pk=int(value)).first()


def per_stratum_chosen(value) -> int | None:
    value = str(value or "")
    return int(value) if value.isascii() and value.isdigit() and len(value) < 5 else None
