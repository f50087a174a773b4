"""The question bank in the API: topics and questions, read only (README "The API")."""

from django_filters import rest_framework as filters
from rest_framework import serializers

from apps.console.api_lists import IdFilter, ReadViewSet

from .models import LabelStatus, LengthBucket, Question, Topic
from .selectors import needs_labelled


class TopicSerializer(serializers.ModelSerializer):
    class Meta:
        model = Topic
        fields = ["id", "slug", "name", "order"]


class QuestionSerializer(serializers.ModelSerializer):
    topic_slug = serializers.CharField(source="topic.slug", read_only=True)

    class Meta:
        model = Question
        fields = [
            "id", "external_id", "topic", "topic_slug", "text", "original_text",
            "length_bucket", "mentions_prior_attempt", "needs_sensemaking", "needs_guidance",
            "label_status",
            "rewrite_cosine", "rewrite_trigram_overlap", "created_at",
        ]  # fmt: skip


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

    queryset = Question.objects.select_related("topic")
    serializer_class = QuestionSerializer
    filterset_class = QuestionFilter
