"""Sampling runs and their responses in the API: read, export, and create and control runs
through the same services as the pages (apps/runs/views.py), queueing the engine's batches
as they do."""

from decimal import Decimal

from django.db.models import Count, F
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers

from apps.console.api_lists import (
    DistinctList,
    IdFilter,
    JsonObjectField,
    LongList,
    ReadViewSet,
    RunControls,
    distinct_ids,
)
from apps.console.api_pages import Columns
from apps.console.form_fields import BIGINT_MAX
from apps.llm.batch_mode import BatchModeSerializer
from apps.llm.models import ModelConfig, ModelKind, PromptTemplate, Purpose, RunStatus
from apps.llm.params import GENERATION_PARAMS, ParamsError, params_check
from apps.questions.models import LengthBucket, Question

from . import services
from .errors import RunError
from .models import Response, ResponseStatus, RunKind, SamplingRun
from .selection import question_conditions, questions_select
from .selectors import APPROVED_RUBRIC
from .services.sampling import MAX_SAMPLES


class SamplingRunSerializer(serializers.ModelSerializer):
    prompt_version = serializers.IntegerField(source="prompt.version", read_only=True)
    models = serializers.PrimaryKeyRelatedField(source="model_configs", many=True, read_only=True)
    questions_count = serializers.IntegerField(read_only=True)
    params = JsonObjectField(read_only=True, help_text=SamplingRun.params.field.help_text)
    selection = JsonObjectField(read_only=True, help_text=SamplingRun.selection.field.help_text)

    class Meta:
        model = SamplingRun
        fields = [
            "id",
            "name",
            "status",
            "prompt",
            "prompt_version",
            "models",
            "questions_count",
            "samples_per_item",
            "params",
            "seed",
            "budget_usd",
            "batch_mode",
            "batch_retry",
            "selection",
            "created_at",
            "launched_at",
            "finished_at",
        ]


class SelectionSerializer(serializers.Serializer):
    """How the questions are chosen, as on the new-run page (an empty filter does not filter)."""

    conditions = serializers.ListField(child=serializers.CharField(), required=False, default=list)
    topics = DistinctList(
        child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX),
        required=False,
        default=list,
    )
    length_buckets = serializers.ListField(
        child=serializers.ChoiceField(choices=LengthBucket.choices), required=False, default=list
    )
    prior_attempt = serializers.BooleanField(required=False, allow_null=True, default=None)
    needs_sensemaking = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="true: questions labelled as asking for sensemaking; false: labelled as not.",
    )
    needs_guidance = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="true: questions labelled as asking for guidance; false: labelled as not.",
    )

    def to_internal_value(self, data):
        # The single need type is gone (each need is its own label): a filter by it would
        # otherwise be dropped in silence and select every question.
        if isinstance(data, dict) and "need_types" in data:
            raise serializers.ValidationError(
                {
                    "need_types": "Questions are no longer chosen by one need type: give "
                    "needs_sensemaking and/or needs_guidance (true or false) instead."
                }
            )
        return super().to_internal_value(data)

    def validate_conditions(self, value):
        known = {c.key for c in question_conditions()}
        unknown = sorted(set(value) - known)
        if unknown:
            raise serializers.ValidationError(
                f"Unknown condition(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}."
            )
        return value


class SamplingRunCreateSerializer(BatchModeSerializer):
    name = serializers.CharField(max_length=SamplingRun._meta.get_field("name").max_length)
    models = distinct_ids(
        queryset=ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT), allow_empty=False
    )
    questions = distinct_ids(
        queryset=Question.objects.all(),
        required=False,
        help_text="The questions to answer; without it, those that `selection` chooses.",
    )
    selection = SelectionSerializer(
        required=False,
        help_text="Without `questions`: how to choose them. Default: every question with an "
        "approved rubric.",
    )
    samples_per_item = serializers.IntegerField(min_value=1, max_value=MAX_SAMPLES, default=5)
    prompt = serializers.PrimaryKeyRelatedField(
        queryset=PromptTemplate.objects.filter(purpose=Purpose.SAMPLE),
        required=False,
        allow_null=True,
        help_text="A sample prompt version; default: the newest.",
    )
    params = serializers.DictField(
        required=False,
        default=dict,
        help_text="Generation parameters for every call: " + ", ".join(GENERATION_PARAMS) + ".",
    )
    budget_usd = serializers.DecimalField(
        max_digits=10,
        decimal_places=2,
        min_value=Decimal("0.01"),
        required=False,
        allow_null=True,
    )
    seed = serializers.IntegerField(
        min_value=0, max_value=BIGINT_MAX, required=False, allow_null=True
    )

    def validate_params(self, value):
        try:
            return params_check(value)
        except ParamsError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def create(self, validated_data):
        data = validated_data
        if "questions" in data:
            questions, selection = data["questions"], {}  # chosen one by one, not by filters
        else:
            default = (
                [APPROVED_RUBRIC]
                if any(c.key == APPROVED_RUBRIC for c in question_conditions())
                else []
            )
            selection = dict(data.get("selection") or {"conditions": default})
            selection.setdefault("conditions", default)
            questions = questions_select(**selection)
        return services.sampling_run_create(
            name=data["name"],
            questions=questions,
            models=data["models"],
            samples_per_item=data["samples_per_item"],
            prompt=data.get("prompt"),
            params=data["params"],
            budget_usd=data.get("budget_usd"),
            seed=data.get("seed"),
            selection=selection,
            user=self.context["request"].user,
            **self.batch_arguments(data),
        )


class SamplingRunFilter(filters.FilterSet):
    status = filters.ChoiceFilter(choices=RunStatus.choices)

    class Meta:
        model = SamplingRun
        fields = []


@extend_schema_view(
    create=extend_schema(
        request=SamplingRunCreateSerializer, responses={201: SamplingRunSerializer}
    )
)
class SamplingRunViewSet(RunControls, ReadViewSet):
    """Benchmark sampling runs: questions x models x samples, with one pinned prompt version.
    POST makes a draft with every response pending; `launch/` starts it."""

    queryset = (
        SamplingRun.objects.filter(kind=RunKind.BENCHMARK)
        .select_related("prompt")
        .prefetch_related("model_configs")
        .annotate(questions_count=Count("questions", distinct=True))
    )
    serializer_class = SamplingRunSerializer
    filterset_class = SamplingRunFilter
    http_method_names = ["get", "post", "head", "options"]
    create_serializer_class = SamplingRunCreateSerializer
    domain_error = RunError
    controls = services.SAMPLING_RUN_CONTROLS


class ResponseSerializer(serializers.ModelSerializer):
    """One model's answer to one question in a run, for one sample index."""

    model_name = serializers.CharField(source="model.display_name", read_only=True)
    question_external_id = serializers.CharField(source="question.external_id", read_only=True)

    class Meta:
        model = Response
        fields = [
            "id",
            "run",
            "model",
            "model_name",
            "question",
            "question_external_id",
            "sample_index",
            "seed",
            "status",
            "text",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_ms",
            "error_kind",
            "error",
            "attempts",
            "created_at",
            "completed_at",
        ]


RESPONSE_COLUMNS = Columns.of(
    id="pk",
    run="run_id",
    model="model_id",
    model_name=F("model__display_name"),
    question="question_id",
    question_external_id=F("question__external_id"),
    sample_index="sample_index",
    seed="seed",
    status="status",
    text="text",
    input_tokens="input_tokens",
    output_tokens="output_tokens",
    cost_usd="cost_usd",
    latency_ms="latency_ms",
    error_kind="error_kind",
    error="error",
    attempts="attempts",
    created_at="created_at",
    completed_at="completed_at",
)


class ResponseFilter(filters.FilterSet):
    run = IdFilter(field_name="run_id")
    model = IdFilter(field_name="model_id")
    question = IdFilter(field_name="question_id")
    status = filters.ChoiceFilter(choices=ResponseStatus.choices)

    class Meta:
        model = Response
        fields = []


class ResponseViewSet(LongList, ReadViewSet):
    """The answers of benchmark sampling runs; `export/` streams them as CSV."""

    queryset = Response.objects.filter(run__kind=RunKind.BENCHMARK).select_related(
        "model", "question"
    )
    serializer_class = ResponseSerializer
    filterset_class = ResponseFilter
    columns = RESPONSE_COLUMNS
    export_name = "responses"
