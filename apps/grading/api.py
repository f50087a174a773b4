"""Grading in the API: grading runs (read, create and control through the same services as
the pages, apps/grading/views/runs.py), their judgments and scores (long lists, exported as
CSV), and calibrations."""

from decimal import Decimal

from django.db.models import F
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import serializers

from apps.console.api_lists import IdFilter, JsonObjectField, LongList, ReadViewSet, RunControls
from apps.console.api_pages import Columns
from apps.llm.batch_mode import BatchModeSerializer
from apps.llm.models import ModelConfig, ModelKind, PromptTemplate, Purpose, RunStatus
from apps.llm.params import GENERATION_PARAMS, ParamsError, params_check
from apps.runs.models import RunKind, SamplingRun

from . import services
from .errors import GradingError
from .models import Calibration, CallState, GradingMode, GradingRun, Judgment, ResponseScore
from .selectors.calibration import rater_rows_shown


class GradingRunSerializer(serializers.ModelSerializer):
    grader_name = serializers.CharField(source="grader.display_name", read_only=True)
    prompt_version = serializers.IntegerField(source="prompt.version", read_only=True)
    params = JsonObjectField(read_only=True, help_text=GradingRun.params.field.help_text)

    class Meta:
        model = GradingRun
        fields = [
            "id",
            "name",
            "sampling_run",
            "grader",
            "grader_name",
            "prompt",
            "prompt_version",
            "mode",
            "params",
            "seed",
            "status",
            "budget_usd",
            "batch_mode",
            "batch_retry",
            "created_at",
            "launched_at",
            "finished_at",
        ]


class GradingRunCreateSerializer(BatchModeSerializer):
    batch_models_field = "grader"
    batch_models_named = "The grader"

    sampling_run = serializers.PrimaryKeyRelatedField(
        queryset=SamplingRun.objects.filter(kind=RunKind.BENCHMARK),
        help_text="Its answers are graded; a run still sampling is graded as its answers come.",
    )
    grader = serializers.PrimaryKeyRelatedField(
        queryset=ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT)
    )
    mode = serializers.ChoiceField(choices=GradingMode.choices, default=GradingMode.CHECKLIST)
    prompt = serializers.PrimaryKeyRelatedField(
        queryset=PromptTemplate.objects.filter(
            purpose__in=[Purpose.GRADE_CHECKLIST, Purpose.GRADE_CRITERION]
        ),
        required=False,
        allow_null=True,
        help_text="A prompt for the mode; default: the mode's newest.",
    )
    temperature = serializers.DecimalField(
        max_digits=3,
        decimal_places=2,
        min_value=Decimal(0),
        max_value=Decimal(2),
        default=Decimal(0),
        help_text="The published auto-rater graded at temperature 0.",
    )
    params = serializers.DictField(
        required=False,
        default=dict,
        help_text="Other generation parameters for every call: "
        + ", ".join(p for p in GENERATION_PARAMS if p != "temperature")
        + ".",
    )
    budget_usd = serializers.DecimalField(
        max_digits=10,
        decimal_places=2,
        min_value=Decimal("0.01"),
        required=False,
        allow_null=True,
    )
    name = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="Empty: named after the runs and the grader.",
    )

    def validate_params(self, value):
        if "temperature" in value:
            raise serializers.ValidationError("Set the temperature in its own field.")
        try:
            return params_check(value)
        except ParamsError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def create(self, validated_data):
        data = validated_data
        temperature = data["temperature"]
        # JSON keeps a whole number as an int, as the page stores it.
        number = (
            int(temperature)
            if temperature == temperature.to_integral_value()
            else float(temperature)
        )
        return services.grading_run_create(
            sampling_run=data["sampling_run"],
            grader=data["grader"],
            mode=data["mode"],
            prompt=data.get("prompt"),
            name=data["name"],
            budget_usd=data.get("budget_usd"),
            params={**data["params"], "temperature": number},
            user=self.context["request"].user,
            **self.batch_arguments(data),
        )


class GradingRunFilter(filters.FilterSet):
    sampling_run = IdFilter(field_name="sampling_run_id")
    status = filters.ChoiceFilter(choices=RunStatus.choices)
    mode = filters.ChoiceFilter(choices=GradingMode.choices)

    class Meta:
        model = GradingRun
        fields = []


@extend_schema_view(
    create=extend_schema(request=GradingRunCreateSerializer, responses={201: GradingRunSerializer})
)
class GradingRunViewSet(RunControls, ReadViewSet):
    """An auto-rater's grading of a sampling run's answers. POST makes a draft; `launch/`
    starts it."""

    queryset = GradingRun.objects.select_related("grader", "prompt")
    serializer_class = GradingRunSerializer
    filterset_class = GradingRunFilter
    http_method_names = ["get", "post", "head", "options"]
    create_serializer_class = GradingRunCreateSerializer
    domain_error = GradingError
    controls = services.GRADING_RUN_CONTROLS


class JudgmentSerializer(serializers.ModelSerializer):
    """The grader's verdict on one criterion for one answer, pinned to the rubric version
    graded; `met` is null unless `status` is done (an error is never "not met")."""

    class Meta:
        model = Judgment
        fields = [
            "id",
            "grading_run",
            "response",
            "criterion",
            "rubric",
            "checklist",
            "status",
            "met",
            "explanation",
            "error_kind",
            "error",
            "reused_from",
            "attempts",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_ms",
            "completed_at",
        ]


# No joins: the judgments list is the longest the API serves (an answer x criterion each).
JUDGMENT_COLUMNS = Columns.of(
    id="pk",
    grading_run="grading_run_id",
    response="response_id",
    criterion="criterion_id",
    rubric="rubric_id",
    checklist="checklist_id",
    status="status",
    met="met",
    explanation="explanation",
    error_kind="error_kind",
    error="error",
    reused_from="reused_from_id",
    attempts="attempts",
    input_tokens="input_tokens",
    output_tokens="output_tokens",
    cost_usd="cost_usd",
    latency_ms="latency_ms",
    completed_at="completed_at",
)


class JudgmentFilter(filters.FilterSet):
    grading_run = IdFilter(field_name="grading_run_id")
    response = IdFilter(field_name="response_id")
    criterion = IdFilter(field_name="criterion_id")
    status = filters.ChoiceFilter(choices=CallState.choices)
    met = filters.BooleanFilter()

    class Meta:
        model = Judgment
        fields = []


class JudgmentViewSet(LongList, ReadViewSet):
    """The grader's verdicts, one per answer and criterion; `export/` streams them as CSV.
    Leaves out the answers the caller is still grading for calibration, blind to the rater."""

    queryset = Judgment.objects.all()
    serializer_class = JudgmentSerializer
    filterset_class = JudgmentFilter
    columns = JUDGMENT_COLUMNS
    export_name = "judgments"

    def filter_queryset(self, queryset):
        # Not the answers the caller still grades blind for calibration (list, row, export).
        return rater_rows_shown(super().filter_queryset(queryset), viewer=self.request.user)


def _rate(group: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.IntegerField(min_value=0),
        min_length=2,
        max_length=2,
        help_text=f"[earned, total]: how many of the rubric version's {group} earned "
        "their points, of how many there are.",
    )


class ScoreBreakdownSerializer(serializers.Serializer):
    """A score's parts (apps/grading/services/rows.py, `breakdown_json`)."""

    earned_points = serializers.IntegerField(min_value=0)
    max_points = serializers.IntegerField(min_value=0)
    positive_factual_met = _rate("positive factual criteria")
    negative_factual_avoided = _rate("negative factual criteria")
    positive_presentation_met = _rate("positive presentation criteria")
    negative_presentation_avoided = _rate("negative presentation criteria")


@extend_schema_field(ScoreBreakdownSerializer)
class BreakdownField(serializers.JSONField):
    """The stored breakdown as it is, documented as its parts."""


class ScoreSerializer(serializers.ModelSerializer):
    """An answer's score in a grading run: earned / all points of the rubric version graded
    (a positive criterion earns its points when met, a negative one when avoided), with its
    breakdown. An answer with a pending or errored judgment has none."""

    model = serializers.IntegerField(source="response.model_id", read_only=True)
    model_name = serializers.CharField(source="response.model.display_name", read_only=True)
    question = serializers.IntegerField(source="response.question_id", read_only=True)
    sample_index = serializers.IntegerField(source="response.sample_index", read_only=True)
    breakdown = BreakdownField(read_only=True)

    class Meta:
        model = ResponseScore
        fields = [
            "id",
            "grading_run",
            "response",
            "model",
            "model_name",
            "question",
            "sample_index",
            "rubric",
            "earned_points",
            "max_points",
            "score",
            "breakdown",
            "computed_at",
        ]


SCORE_COLUMNS = Columns.of(
    id="pk",
    grading_run="grading_run_id",
    response="response_id",
    model=F("response__model_id"),
    model_name=F("response__model__display_name"),
    question=F("response__question_id"),
    sample_index=F("response__sample_index"),
    rubric="rubric_id",
    earned_points="earned_points",
    max_points="max_points",
    score="score",
    breakdown="breakdown",
    computed_at="computed_at",
)


class ScoreFilter(filters.FilterSet):
    grading_run = IdFilter(field_name="grading_run_id")
    response = IdFilter(field_name="response_id")
    model = IdFilter(field_name="response__model_id")
    question = IdFilter(field_name="response__question_id")

    class Meta:
        model = ResponseScore
        fields = []


class ScoreViewSet(LongList, ReadViewSet):
    """Answers' scores in grading runs; `export/` streams them as CSV. Leaves out the answers
    the caller is still grading for calibration, blind to the rater."""

    queryset = ResponseScore.objects.select_related("response__model")
    serializer_class = ScoreSerializer
    filterset_class = ScoreFilter
    columns = SCORE_COLUMNS
    export_name = "scores"

    def filter_queryset(self, queryset):
        return rater_rows_shown(super().filter_queryset(queryset), viewer=self.request.user)


class CalibrationSerializer(serializers.ModelSerializer):
    """A grading run held against a calibration set's final (adjudicated) expert labels, for
    the grader, prompt version and rubric versions stated."""

    calibration_set_name = serializers.CharField(source="calibration_set.name", read_only=True)
    rubric_ids = serializers.ListField(child=serializers.IntegerField(), read_only=True)

    class Meta:
        model = Calibration
        fields = [
            "id",
            "calibration_set",
            "calibration_set_name",
            "grading_run",
            "grader",
            "prompt",
            "rubric_ids",
            "created_at",
        ]


class CalibrationFilter(filters.FilterSet):
    grading_run = IdFilter(field_name="grading_run_id")
    calibration_set = IdFilter(field_name="calibration_set_id")

    class Meta:
        model = Calibration
        fields = []


class CalibrationViewSet(ReadViewSet):
    """Grading runs held against experts' final labels (the report is on the calibration page)."""

    queryset = Calibration.objects.select_related("calibration_set")
    serializer_class = CalibrationSerializer
    filterset_class = CalibrationFilter
