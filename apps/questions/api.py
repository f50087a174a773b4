"""The question bank in the API: topics and questions, read only (README "The API")."""

from django.db.models import Prefetch
from django_filters import rest_framework as filters
from rest_framework import serializers

from apps.console.api_lists import IdFilter, ReadViewSet

from .models import EmbeddingCosine, LabelStatus, LengthBucket, Question, Topic
from .selectors import needs_labelled
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


class QuestionSerializer(serializers.ModelSerializer):
    topic_slug = serializers.CharField(source="topic.slug", read_only=True)
    rewrite_cosine_method = serializers.SerializerMethodField(
        help_text="How rewrite_cosine was computed (empty when there is none)."
    )
    rewrite_embedding_cosines = EmbeddingCosineSerializer(
        source="embedding_cosines", many=True, read_only=True
    )

    class Meta:
        model = Question
        fields = [
            "id", "external_id", "topic", "topic_slug", "text", "original_text",
            "length_bucket", "mentions_prior_attempt", "needs_sensemaking", "needs_guidance",
            "label_status", "rewrite_cosine", "rewrite_cosine_method",
            "rewrite_embedding_cosines", "rewrite_trigram_overlap", "created_at",
        ]  # fmt: skip

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
    mentions_prior_attempt = filters.BooleanFilter()
    external_id = filters.CharFilter()

    class Meta:
        model = Question
        fields = []

    def needs_filter(self, queryset, name, value):
        return queryset.filter(needs_labelled(**{name: value}))


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
