"""Rubrics in the API: every version of every question's rubric with its criteria, read only."""

from django.db.models import Prefetch
from django_filters import rest_framework as filters
from rest_framework import serializers

from apps.console.api_lists import IdFilter, ReadViewSet

from .models import Criterion, Rubric, RubricState


class CriterionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Criterion
        fields = ["id", "text", "polarity", "kind", "points", "order", "origin"]


class RubricSerializer(serializers.ModelSerializer):
    shared_set_version = serializers.IntegerField(source="shared_set.version", read_only=True)
    criteria = CriterionSerializer(many=True, read_only=True)

    class Meta:
        model = Rubric
        fields = [
            "id",
            "question",
            "version",
            "state",
            "based_on",
            "shared_set_version",
            "revision",
            "created_at",
            "updated_at",
            "submitted_at",
            "approved_at",
            "verified_at",
            "criteria",
        ]


class RubricFilter(filters.FilterSet):
    question = IdFilter(field_name="question_id")
    state = filters.ChoiceFilter(choices=RubricState.choices)
    version = IdFilter(field_name="version", max_value=2**31 - 1)

    class Meta:
        model = Rubric
        fields = []


class RubricViewSet(ReadViewSet):
    """Rubric versions: draft, in review, changes requested or approved (immutable), each with
    its criteria in order, the shared presentation criteria among them."""

    queryset = Rubric.objects.select_related("shared_set").prefetch_related(
        Prefetch("criteria", queryset=Criterion.objects.order_by("order", "pk"))
    )
    serializer_class = RubricSerializer
    filterset_class = RubricFilter
