"""User-perception studies in the API: studies, scenarios, participants and answers, read
only and pseudonymised; proxy runs read, created and controlled through the same services as
their pages (apps/surveys/proxy_views.py).

No answer carries a Prolific ID (PROLIFIC_PID) or session id: a participant is known by
`participant_pseudonym` (apps/surveys/pseudonyms.py), stable within a study and different
across studies, and empty for a proxy model.
"""

from decimal import Decimal

from django.db.models import Exists, F, OuterRef
from django.db.models.functions import Coalesce
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers

from apps.console.api_lists import (
    IdFilter,
    LongList,
    ReadViewSet,
    RunControls,
    TextListField,
    distinct_ids,
)
from apps.console.api_pages import Columns
from apps.console.form_fields import BIGINT_MAX
from apps.llm.batch_mode import BatchModeSerializer
from apps.llm.models import ModelConfig, ModelKind, RunStatus

from . import services
from .errors import SurveyError
from .models import (
    Answer,
    AssignmentStatus,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    ProxyRun,
    Scenario,
    Study,
    StudyScenario,
    StudyStatus,
    UnitKind,
)
from .pseudonyms import pseudonym_sql
from .services.proxies import MAX_RUNS_PER_MODEL


class StudySerializer(serializers.ModelSerializer):
    class Meta:
        model = Study
        fields = [
            "id",
            "name",
            "kind",
            "slug",
            "status",
            "scenarios_per_participant",
            "ratings_per_scenario",
            "reservation_minutes",
            "items_version",
            "created_at",
        ]


class StudyFilter(filters.FilterSet):
    status = filters.ChoiceFilter(choices=StudyStatus.choices)

    class Meta:
        model = Study
        fields = []


class StudyViewSet(ReadViewSet):
    """User-perception studies (their participant-facing texts and codes stay on their pages)."""

    queryset = Study.objects.all()
    serializer_class = StudySerializer
    filterset_class = StudyFilter


class ScenarioSerializer(serializers.ModelSerializer):
    toolkits = TextListField(read_only=True)

    class Meta:
        model = Scenario
        fields = [
            "id",
            "name",
            "sha256",
            "task",
            "trajectory",
            "user_name",
            "toolkits",
            "final_action",
            "imported_at",
        ]


class ScenarioFilter(filters.FilterSet):
    study = IdFilter(method="in_study", help_text="Only the scenarios of this study.")
    name = filters.CharFilter()

    class Meta:
        model = Scenario
        fields = []

    def in_study(self, queryset, name, value):
        in_study = StudyScenario.objects.filter(study_id=value, scenario_id=OuterRef("pk"))
        return queryset.filter(Exists(in_study))


class ScenarioViewSet(ReadViewSet):
    """PrivacyLens scenarios as participants are shown them (the imported record is kept
    verbatim in the console)."""

    queryset = Scenario.objects.all()
    serializer_class = ScenarioSerializer
    filterset_class = ScenarioFilter


class ParticipantSerializer(serializers.ModelSerializer):
    """A person who took part (known by a pseudonym, never by their Prolific ID) or a proxy
    model's run."""

    participant_pseudonym = serializers.CharField(
        read_only=True,
        help_text="The keyed hash standing for the Prolific ID in this study; empty for a proxy.",
    )

    class Meta:
        model = Participant
        fields = [
            "id",
            "study",
            "kind",
            "participant_pseudonym",
            "model",
            "run_index",
            "proxy_run",
            "simulated",
            "status",
            "attention_failed",
            "age",
            "gender",
            "education",
            "income",
            "review_status",
            "created_at",
            "consented_at",
            "finished_at",
        ]


class ParticipantFilter(filters.FilterSet):
    study = IdFilter(field_name="study_id")
    kind = filters.ChoiceFilter(choices=ParticipantKind.choices)
    status = filters.ChoiceFilter(choices=ParticipantStatus.choices)
    proxy_run = IdFilter(field_name="proxy_run_id")

    class Meta:
        model = Participant
        fields = []


class ParticipantViewSet(ReadViewSet):
    """People (by pseudonym, never by Prolific ID) and proxy models who answered a study."""

    queryset = Participant.objects.annotate(
        participant_pseudonym=pseudonym_sql("study_id", "prolific_pid")
    )
    serializer_class = ParticipantSerializer
    filterset_class = ParticipantFilter


class AnswerSerializer(serializers.ModelSerializer):
    """One participant's answer to one item about one unit: a scenario (`scenario` is its
    id), or in a study of answers an answer or a pair of answers (`scenario` is empty). Every
    unit has an id, a kind and a name (a scenario's, or an answer unit's label)."""

    study = serializers.IntegerField(read_only=True, source="assignment.participant.study_id")
    participant = serializers.IntegerField(read_only=True, source="assignment.participant_id")
    participant_pseudonym = serializers.CharField(read_only=True)
    participant_kind = serializers.ChoiceField(
        choices=ParticipantKind.choices, read_only=True, source="assignment.participant.kind"
    )
    scenario = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        source="assignment.study_scenario.scenario_id",
        help_text="The scenario rated; null for a unit of an answer study (a benchmark's answer "
        "or pair of answers), which has none.",
    )
    unit = serializers.IntegerField(read_only=True, source="assignment.study_scenario_id")
    unit_kind = serializers.ChoiceField(
        choices=UnitKind.choices, read_only=True, source="assignment.study_scenario.kind"
    )
    unit_name = serializers.CharField(read_only=True)
    assignment_status = serializers.ChoiceField(
        choices=AssignmentStatus.choices, read_only=True, source="assignment.status"
    )
    item_code = serializers.CharField(read_only=True, source="item.code")

    class Meta:
        model = Answer
        fields = [
            "id",
            "study",
            "participant",
            "participant_pseudonym",
            "participant_kind",
            "scenario",
            "unit",
            "unit_kind",
            "unit_name",
            "assignment",
            "assignment_status",
            "item",
            "item_code",
            "value",
            "explanation",
            "first_saved_at",
            "saved_at",
            "save_count",
        ]


ANSWER_COLUMNS = Columns.of(
    id="pk",
    study=F("assignment__participant__study_id"),
    participant=F("assignment__participant_id"),
    participant_pseudonym=F("participant_pseudonym"),
    participant_kind=F("assignment__participant__kind"),
    scenario=F("assignment__study_scenario__scenario_id"),
    unit=F("assignment__study_scenario_id"),
    unit_kind=F("assignment__study_scenario__kind"),
    unit_name=F("unit_name"),
    assignment="assignment_id",
    assignment_status=F("assignment__status"),
    item="item_id",
    item_code=F("item__code"),
    value="value",
    explanation="explanation",
    first_saved_at="first_saved_at",
    saved_at="saved_at",
    save_count="save_count",
)


class AnswerFilter(filters.FilterSet):
    study = IdFilter(field_name="assignment__participant__study_id")
    participant = IdFilter(field_name="assignment__participant_id")
    item = IdFilter(field_name="item_id")
    item_code = filters.CharFilter(field_name="item__code")
    scenario = IdFilter(field_name="assignment__study_scenario__scenario_id")
    unit = IdFilter(field_name="assignment__study_scenario_id")
    participant_kind = filters.ChoiceFilter(
        field_name="assignment__participant__kind", choices=ParticipantKind.choices
    )

    class Meta:
        model = Answer
        fields = []


class AnswerViewSet(LongList, ReadViewSet):
    """Every answer to every item, pseudonymised; `export/` streams them as CSV."""

    queryset = Answer.objects.select_related(
        "assignment__participant", "assignment__study_scenario", "item"
    ).annotate(
        participant_pseudonym=pseudonym_sql(
            "assignment__participant__study_id", "assignment__participant__prolific_pid"
        ),
        # StudyScenario.name, read in the same statement
        unit_name=Coalesce(
            "assignment__study_scenario__scenario__name", "assignment__study_scenario__label"
        ),
    )
    serializer_class = AnswerSerializer
    filterset_class = AnswerFilter
    columns = ANSWER_COLUMNS
    export_name = "answers"


class ProxyRunSerializer(serializers.ModelSerializer):
    models = serializers.PrimaryKeyRelatedField(source="model_configs", many=True, read_only=True)
    prompt_version = serializers.IntegerField(source="prompt.version", read_only=True)

    class Meta:
        model = ProxyRun
        fields = [
            "id",
            "study",
            "models",
            "runs_per_model",
            "prompt",
            "prompt_version",
            "temperature",
            "seed",
            "budget_usd",
            "batch_mode",
            "batch_retry",
            "status",
            "created_at",
            "launched_at",
            "finished_at",
        ]


class ProxyRunCreateSerializer(BatchModeSerializer):
    study = serializers.PrimaryKeyRelatedField(queryset=Study.objects.all())
    models = distinct_ids(
        queryset=ModelConfig.objects.filter(active=True, kind=ModelKind.CHAT), allow_empty=False
    )
    runs_per_model = serializers.IntegerField(
        min_value=1,
        max_value=MAX_RUNS_PER_MODEL,
        default=5,
        help_text="Each run is a proxy participant that answers every scenario.",
    )
    temperature = serializers.DecimalField(
        max_digits=3,
        decimal_places=2,
        min_value=Decimal(0),
        max_value=Decimal(2),
        required=False,
        allow_null=True,
        help_text="Empty: each provider's default, as the published study left it.",
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

    def create(self, validated_data):
        data = validated_data
        return services.proxy_run_create(
            study=data["study"],
            models=data["models"],
            runs_per_model=data["runs_per_model"],
            temperature=data.get("temperature"),
            budget_usd=data.get("budget_usd"),
            seed=data.get("seed"),
            user=self.context["request"].user,
            **self.batch_arguments(data),
        )


class ProxyRunFilter(filters.FilterSet):
    study = IdFilter(field_name="study_id")
    status = filters.ChoiceFilter(choices=RunStatus.choices)

    class Meta:
        model = ProxyRun
        fields = []


@extend_schema_view(
    create=extend_schema(request=ProxyRunCreateSerializer, responses={201: ProxyRunSerializer})
)
class ProxyRunViewSet(RunControls, ReadViewSet):
    """Models answering a study's survey as participants. POST makes a draft run with its
    proxy participants and every call pending; `launch/` starts it."""

    queryset = ProxyRun.objects.select_related("prompt").prefetch_related("model_configs")
    serializer_class = ProxyRunSerializer
    filterset_class = ProxyRunFilter
    http_method_names = ["get", "post", "head", "options"]
    create_serializer_class = ProxyRunCreateSerializer
    domain_error = SurveyError
    controls = services.PROXY_RUN_CONTROLS
