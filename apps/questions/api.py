"""The question bank in the API: topics and questions, read only (docs/api.md)."""

from django.db.models import Prefetch
from django_filters import rest_framework as filters
from rest_framework import serializers

from apps.console.api_lists import IdFilter, ReadViewSet

from .models import EmbeddingCosine, LabelStatus, LengthBucket, Question, Topic
from .selectors import needs_labelled
from .selectors.strata import labels_as_shown, labels_blind_to
from .similarity import (
    COSINE_CHOICE,
    COSINE_METHOD,
    EMBEDDING_COSINE_CHOICE,
    EMBEDDING_COSINE_METHOD,
)


class TopicSerializer(serializers.ModelSerializer):
    class Meta:
        model = Topic
        fields = ["id", "slug", "name", "order"]


class EmbeddingCosineSerializer(serializers.ModelSerializer):
    """A cosine of embeddings (the researcher's choice of method and model), or why there
    is none: `cosine` is null unless `status` is done."""

    model = serializers.CharField(source="model.display_name", read_only=True)
    litellm_model = serializers.CharField(source="model.litellm_model", read_only=True)
    method = serializers.SerializerMethodField()

    class Meta:
        model = EmbeddingCosine
        fields = ["model", "litellm_model", "status", "cosine", "error", "method", "computed_at"]

    def get_method(self, obj) -> str:
        return f"{EMBEDDING_COSINE_METHOD}. {EMBEDDING_COSINE_CHOICE}"


def _label(source: str) -> serializers.BooleanField:
    return serializers.BooleanField(
        source=f"{source}_shown",
        allow_null=True,
        read_only=True,
        help_text="Null while the labels wait for another researcher to verify them, for "
        "everyone but their labeller (the verifier gives theirs without seeing them).",
    )


class QuestionSerializer(serializers.ModelSerializer):
    topic_slug = serializers.CharField(source="topic.slug", read_only=True)
    mentions_prior_attempt = _label("mentions_prior_attempt")
    needs_sensemaking = _label("needs_sensemaking")
    needs_guidance = _label("needs_guidance")
    rewrite_cosine_method = serializers.SerializerMethodField(
        help_text="How rewrite_cosine was computed (empty when there is none)."
    )
    rewrite_embedding_cosines = EmbeddingCosineSerializer(
        source="embedding_cosines", many=True, read_only=True
    )

    class Meta:
        model = Question
        fields = [
            "id",
            "external_id",
            "topic",
            "topic_slug",
            "text",
            "original_text",
            "length_bucket",
            "mentions_prior_attempt",
            "needs_sensemaking",
            "needs_guidance",
            "label_status",
            "rewrite_cosine",
            "rewrite_cosine_method",
            "rewrite_embedding_cosines",
            "rewrite_trigram_overlap",
            "created_at",
        ]

    def get_rewrite_cosine_method(self, obj) -> str:
        return "" if obj.rewrite_cosine is None else f"{COSINE_METHOD}. {COSINE_CHOICE}"


class QuestionFilter(filters.FilterSet):
    topic = IdFilter(field_name="topic_id")
    topic_slug = filters.CharFilter(field_name="topic__slug")
    length_bucket = filters.ChoiceFilter(choices=LengthBucket.choices)
    # false: labelled as not asking for it (an unlabelled question is neither true nor false).
    needs_sensemaking = filters.BooleanFilter(method="needs_filter")
    needs_guidance = filters.BooleanFilter(method="needs_filter")
    label_status = filters.ChoiceFilter(choices=LabelStatus.choices)
    mentions_prior_attempt = filters.BooleanFilter(method="label_filter")
    external_id = filters.CharFilter()

    class Meta:
        model = Question
        fields = []

    def needs_filter(self, queryset, name, value):
        return self._shown(queryset).filter(needs_labelled(**{name: value}))

    def label_filter(self, queryset, name, value):
        return self._shown(queryset).filter(**{name: value})

    def _shown(self, queryset):
        # A filter on labels still to verify would tell the caller what they are.
        return queryset.exclude(labels_blind_to(viewer=self.request.user))


class TopicViewSet(ReadViewSet):
    """The question bank's topics."""

    queryset = Topic.objects.all()
    serializer_class = TopicSerializer


class QuestionViewSet(ReadViewSet):
    """The questions of the bank, as they are asked (`text`) and as they were posted."""

    queryset = Question.objects.select_related("topic").prefetch_related(
        Prefetch(
            "embedding_cosines",
            queryset=EmbeddingCosine.objects.select_related("model").order_by(
                "model__display_name"
            ),
        )
    )
    serializer_class = QuestionSerializer
    filterset_class = QuestionFilter

    def filter_queryset(self, queryset):
        return labels_as_shown(super().filter_queryset(queryset), viewer=self.request.user)
