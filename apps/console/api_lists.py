"""What every read endpoint of the API shares: `ReadViewSet` (list and retrieve, cursor
pages, ids in the path) and, for the long lists (responses, judgments, scores, answers),
`LongList`: the list read on the fast path (`Columns`, apps/console/api_pages.py) and
`export/`, the same columns in the same order as formula-safe CSV, streamed. A long list's
Serializer stays its documented schema; tests hold the fast path equal to it. Each layout
of a long list's page is a schema of its own (`LongListSchema`), which client generators
read (tests/api/test_generated_client.py).
"""

from collections.abc import Callable

from django import forms
from django.db import models
from django_filters import rest_framework as filters
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent, force_instance
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.accounts.api_errors import Conflict, Refused

from .api_pages import LAYOUT_PARAM, LAYOUTS, OBJECTS, Columns, CursorPage, LongPage
from .csv_export import copy_csv_response
from .form_fields import BIGINT_MAX


def csv_response(columns: Columns, queryset: models.QuerySet, *, filename: str):
    """The list's rows as formula-safe CSV, written by PostgreSQL's COPY and streamed."""
    rows, copy_columns = columns.annotated(queryset)
    return copy_csv_response(rows, columns=copy_columns, filename=filename)


@extend_schema_field(OpenApiTypes.INT)
class IdFilter(filters.NumberFilter):
    """A row's id: a whole number a primary key can hold (anything else is a 400)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", BIGINT_MAX)
        super().__init__(*args, **kwargs)


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JsonObjectField(serializers.JSONField):
    """A JSON column that holds an object (a run's parameters), documented as one, so that
    a generated client reads it as a mapping, not as any value."""


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class TextListField(serializers.JSONField):
    """A JSON column that holds a list of texts (a scenario's toolkits), documented as one."""


def each_once(values) -> None:
    """A validator for a list of ids, or of the rows they name: each at most once. A model or
    question listed twice would make the same run's rows twice (a unique constraint refuses
    the second) or count it twice."""
    seen, repeated = set(), []
    for value in values:
        key = getattr(value, "pk", value)
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    if repeated:
        listed = ", ".join(str(key) for key in repeated)
        raise serializers.ValidationError(f"Listed more than once: {listed}. Give each id once.")


class EachOnce:
    """A list field whose items must differ (each_once), documented as `uniqueItems`."""

    def __init__(self, *args, **kwargs):
        kwargs["validators"] = [*kwargs.get("validators", ()), each_once]
        super().__init__(*args, **kwargs)


class DistinctList(EachOnce, serializers.ListField):
    pass


class DistinctIds(EachOnce, serializers.ManyRelatedField):
    pass


def distinct_ids(*, queryset, **kwargs) -> DistinctIds:
    """`PrimaryKeyRelatedField(many=True)` over `queryset`, each id at most once; `kwargs`
    are the list's (required, allow_empty, help_text)."""
    return DistinctIds(
        child_relation=serializers.PrimaryKeyRelatedField(queryset=queryset), **kwargs
    )


class EachOnceScheme(OpenApiSerializerFieldExtension):
    target_class = EachOnce
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        return {**schema, "uniqueItems": True}


class ReadViewSet(viewsets.ReadOnlyModelViewSet):
    """List and retrieve, researchers only (the default permission), ids in the path."""

    pagination_class = CursorPage
    lookup_value_converter = "int"  # with the router's path converters (config/api.py)

    def perform_content_negotiation(self, request, force=False):
        # An Accept header the view cannot serve gets JSON (or the CSV the view returns)
        # rather than a 406: every answer's type is documented, whatever was asked for.
        return super().perform_content_negotiation(request, force=True)


def value_types(properties: dict, keys: list[str]) -> dict:
    """What a value of the arrays layout's rows may be: the JSON types of the row's `keys`
    in its schema's `properties`, once each (a reference stays one: an object's schema),
    without formats or enums, which would have a client read a text as a date or a member."""
    kinds: dict[str, dict] = {}
    for key in keys:
        schema = properties[key]
        for kind in schema.get("oneOf") or schema.get("allOf") or [schema]:
            if "$ref" in kind:
                kinds.setdefault(kind["$ref"], {"$ref": kind["$ref"]})
            elif "type" not in kind:  # free-form JSON: any value, as its column's schema says
                kinds.setdefault("", {})
            else:
                kinds.setdefault(kind["type"], {"type": kind["type"]})
                if schema.get("nullable") or kind.get("nullable"):
                    kinds[kind["type"]]["nullable"] = True
    return {"anyOf": list(kinds.values())}


class LongListSchema(AutoSchema):
    """A long list's page is one of two schemas, as `layout` chooses: the objects page
    (`Paginated<Row>List`, as on every list) or the arrays page (`Paginated<Row>Arrays`),
    each a component of its own, so that client generators make a model of each."""

    def _get_response_for_code(
        self, serializer, status_code, media_types=None, direction="response"
    ):
        response = super()._get_response_for_code(serializer, status_code, media_types, direction)
        if self.view.action != "list" or status_code != "200":
            return response
        serializer = force_instance(serializer)
        row = self.resolve_serializer(serializer, direction)
        keys = self.view.columns.keys
        arrays = ResolvedComponent(
            name=f"Paginated{row.name}Arrays",
            type=ResolvedComponent.SCHEMA,
            schema=self._get_paginator().get_arrays_response_schema(
                keys, value_types(row.schema["properties"], keys)
            ),
            object=self.get_serializer_identity(serializer, direction),
        )
        self.registry.register_on_missing(arrays)
        for media in response["content"].values():
            media["schema"] = {"oneOf": [media["schema"], arrays.ref]}
        return response


class LongList:
    """A read-only viewset's mixin for a long list: `columns` (the rows of the list and of
    its export), `serializer_class` (their documented schema, and what `retrieve` answers),
    `export_name` (the CSV's filename, before the filters)."""

    columns: Columns
    export_name: str
    pagination_class = LongPage
    schema = LongListSchema()

    @extend_schema(
        parameters=[
            OpenApiParameter(
                LAYOUT_PARAM,
                str,
                enum=LAYOUTS,
                default=OBJECTS,
                description="`objects`: `results`, a list of rows, each an object of its keys. "
                "`arrays`: `columns`, the keys once, and `rows`, each row a list of its values "
                "in that order (half the bytes, and decoded in half the time).",
            )
        ]
    )
    def list(self, request, *args, **kwargs):
        queryset = self.filter_queryset(self.get_queryset())
        return self.paginator.page_json(queryset, request, self, self.columns)

    def dispatch(self, request, *args, **kwargs):
        response = super().dispatch(request, *args, **kwargs)
        # The view and DRF's request refer to each other, so only a full collection frees
        # them, and DRF keeps the response on the view: a walk in pages of 10,000 rows
        # (megabytes each) grew a process by 250 MB before one ran. The response goes with
        # the request alone.
        self.response = None
        return response

    @extend_schema(
        filters=True,
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="Every row of the filtered list, in the list's order and keys, "
                "as formula-safe CSV, streamed.",
            )
        },
    )
    @action(detail=False, methods=["get"], url_path="export", pagination_class=None)
    def export(self, request, *args, **kwargs):
        queryset = self.filter_queryset(self.get_queryset())
        return csv_response(self.columns, queryset, filename=f"{self.export_name}.csv")


class RunControls:
    """POST a new draft run (sampling, grading or proxy), and launch/, pause/, resume/ and
    cancel/ on one, each through the run's own service, as its page does.
    `create_serializer_class` validates a new run and makes it with the service (the app's
    domain error is then a 400 with its message); `controls` maps each control to its service
    (which starts the run's work itself, when it should); a domain error there is a 409 with
    its message."""

    domain_error: type[Exception]
    create_serializer_class: type
    controls: dict[str, Callable]

    def get_serializer_class(self):
        if self.action == "create":
            return self.create_serializer_class
        return super().get_serializer_class()

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            run = serializer.save()
        except self.domain_error as exc:
            raise Refused(str(exc)) from exc
        body = self.serializer_class(self.get_queryset().get(pk=run.pk)).data
        return Response(body, status=status.HTTP_201_CREATED)

    def control(self, name: str):
        run = self.get_object()
        try:
            run = self.controls[name](run=run)
        except self.domain_error as exc:
            raise Conflict(str(exc)) from exc
        return Response(self.get_serializer(self.get_queryset().get(pk=run.pk)).data)

    @extend_schema(request=None, description="Draft to running: the workers start calling.")
    @action(detail=True, methods=["post"])
    def launch(self, request, *args, **kwargs):
        return self.control("launch")

    @extend_schema(request=None, description="No new calls; the calls in flight finish.")
    @action(detail=True, methods=["post"])
    def pause(self, request, *args, **kwargs):
        return self.control("pause")

    @extend_schema(request=None, description="Go on from where it stopped; nothing is repeated.")
    @action(detail=True, methods=["post"])
    def resume(self, request, *args, **kwargs):
        return self.control("resume")

    @extend_schema(request=None, description="For good: nothing more is called; results stay.")
    @action(detail=True, methods=["post"])
    def cancel(self, request, *args, **kwargs):
        return self.control("cancel")
