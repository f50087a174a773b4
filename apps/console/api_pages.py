"""The API's pages: DRF's cursor pagination over the primary key (unique, so that a walk
along `next` sees every row once, even while rows are added), `page_size` up to 1,000 (up to
10,000 on the long lists, `LongPage`, which notebooks walk whole), their links in the body
and in a `Link` header; and the fast path of the long lists (`Columns`, `CursorPage.page_json`,
`copy_json`), where PostgreSQL's COPY writes each row's JSON (an object, or in the arrays
layout a list of its values) and the page is joined from those bytes: building model
instances and running a DRF serializer per row costs many times the query.

Kept apart from the viewsets (apps/console/api_lists.py): DRF reads the default pagination
class from here while it defines its own generic views.
"""

import json
from dataclasses import dataclass

from django.db import connections, models
from django.db.models import F, Func, TextField
from django.http import HttpResponse
from rest_framework import exceptions
from rest_framework.pagination import Cursor, CursorPagination

from .csv_export import copy_sql

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
# The long lists (responses, judgments, scores, answers) are read whole by scripts; a
# request costs Django and DRF some milliseconds whatever its size, which pages of 1,000
# rows of a judgment's size pay again every 1,000 rows.
LONG_MAX_PAGE_SIZE = 10_000
# A long list's page is a list of objects, or its keys once and each row's values in their
# order (half the bytes, and half the time to decode).
LAYOUT_PARAM, OBJECTS, ARRAYS = "layout", "objects", "arrays"
LAYOUTS = (OBJECTS, ARRAYS)


def link_header(links: dict) -> str:
    """The page's links as an RFC 8288 `Link` header (`rel="next"`, `rel="prev"`), which
    httpx and requests read as `response.links`; empty when there are none. The URLs are
    the cursors' own, their query percent-encoded by DRF."""
    rels = (("next", "next"), ("previous", "prev"))
    return ", ".join(f'<{links[key]}>; rel="{rel}"' for key, rel in rels if links[key])


class CursorPage(CursorPagination):
    ordering = "pk"
    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    page_size_query_description = (
        f"Rows per page: {DEFAULT_PAGE_SIZE} unless given, at most {MAX_PAGE_SIZE}."
    )
    max_page_size = MAX_PAGE_SIZE
    invalid_cursor_message = "This cursor is not one the API gave out."

    def decode_cursor(self, request):
        cursor = super().decode_cursor(request)
        # DRF would hand a hand-made cursor's position to the query as it is; ordered by the
        # primary key, a position is a whole number or the request is refused.
        if cursor is not None and cursor.position is not None:
            try:
                position = int(cursor.position)
            except ValueError:
                raise exceptions.NotFound(self.invalid_cursor_message) from None
            if not 0 <= position < 2**63:
                raise exceptions.NotFound(self.invalid_cursor_message)
            cursor = Cursor(offset=cursor.offset, reverse=cursor.reverse, position=str(position))
        return cursor

    def get_paginated_response(self, data):
        response = super().get_paginated_response(data)
        links = {"next": self.get_next_link(), "previous": self.get_previous_link()}
        if link := link_header(links):
            response["Link"] = link
        return response

    def page_json(self, queryset, request, view, columns: "Columns") -> HttpResponse:
        """The fast path. First where the page lies: its first row, and its last with the
        next page's first (the filters, the cursor and the primary key's order, read from
        the primary key's index, no row built); then the filtered rows between them, which
        are exactly the page's, written as JSON by PostgreSQL (`copy_json`). (With the JSON
        beside the filters in one select, PostgreSQL may build it for every row they select
        before it sorts them and keeps a page.) The cursors are DRF's, as the other lists':
        over a unique key, a position and a way. The links are in the body and in a `Link`
        header, as on every list."""
        self.request, self.base_url = request, request.build_absolute_uri()
        self.page_size = self.get_page_size(request)
        layout = request.query_params.get(LAYOUT_PARAM) or OBJECTS
        if layout not in LAYOUTS:
            raise exceptions.ValidationError(
                {LAYOUT_PARAM: [f"Choose one of {', '.join(LAYOUTS)}, not {layout!r}."]}
            )
        cursor = self.decode_cursor(request)
        reverse = cursor is not None and cursor.reverse
        position = None if cursor is None else cursor.position
        chosen = queryset
        if position is not None:
            chosen = chosen.filter(pk__lt=position) if reverse else chosen.filter(pk__gt=position)
        pks = chosen.order_by("-pk" if reverse else "pk").values_list("pk", flat=True)
        links = {"next": None, "previous": None}
        items = b""
        if near := list(pks[:1]):  # the page's first row, the way the walk goes
            # Its last row and, when there is one, the next page's first.
            far = list(pks[self.page_size - 1 : self.page_size + 1])
            more = len(far) == 2
            edge = far[0] if far else None  # None: the rest of the rows are the page
            low, high = (edge, near[0]) if reverse else (near[0], edge)
            # Forward, a later page exists when there are more rows, an earlier one when
            # the walk did not start at the beginning; backward, the other way round. The
            # end of the page a link starts from is known whenever there is the link.
            started = position is not None
            later, earlier = (started, more) if reverse else (more, started)
            if later:
                links["next"] = self.encode_cursor(
                    Cursor(offset=0, reverse=False, position=str(high))
                )
            if earlier:
                links["previous"] = self.encode_cursor(
                    Cursor(offset=0, reverse=True, position=str(low))
                )
            page = queryset if low is None else queryset.filter(pk__gte=low)
            page = page if high is None else page.filter(pk__lte=high)
            items = copy_json(page.order_by("pk"), columns, layout=layout)
        if layout == ARRAYS:
            head, key = {**links, "columns": columns.keys}, b"rows"
        else:
            head, key = links, b"results"
        body = b"".join((json.dumps(head)[:-1].encode(), b', "', key, b'": [', items, b"]}"))
        response = HttpResponse(body, content_type="application/json")
        if link := link_header(links):
            response["Link"] = link
        return response


class LongPage(CursorPage):
    """The long lists' pages: as every list's, up to LONG_MAX_PAGE_SIZE rows, in either
    layout (`layout=objects`, the default, or `layout=arrays`); each layout's page is a
    schema of its own (apps/console/api_lists.py, `LongListSchema`)."""

    page_size_query_description = (
        f"Rows per page: {DEFAULT_PAGE_SIZE} unless given, at most {LONG_MAX_PAGE_SIZE}."
    )
    max_page_size = LONG_MAX_PAGE_SIZE

    def get_arrays_response_schema(self, keys: list[str], value: dict) -> dict:
        """The arrays layout's page: the objects page's links, `columns` (`keys`, in order)
        and `rows`, each a list of as many values, every one of the JSON types in `value`
        (an OpenAPI 3.0 list cannot type each place apart)."""
        objects = self.get_paginated_response_schema({"type": "array", "items": {}})
        listed = ", ".join(f"`{key}`" for key in keys)
        return {
            "type": "object",
            "required": ["columns", "rows"],
            "properties": {
                "next": objects["properties"]["next"],
                "previous": objects["properties"]["previous"],
                "columns": {
                    "type": "array",
                    "items": {"type": "string"},
                    "example": keys,
                    "description": f"The rows' keys, in their values' order: {listed}.",
                },
                "rows": {
                    "type": "array",
                    "items": {
                        "type": "array",
                        "items": value,
                        "minItems": len(keys),
                        "maxItems": len(keys),
                    },
                    "description": "Each row's values, in the order of `columns`, each as the "
                    "objects layout writes it.",
                },
            },
        }


# Types whose JSON is their text in PostgreSQL (`to_json(5)` is `5`, `to_json(true)` is
# `true`): cast, not passed through to_json, which costs more per value.
JSON_AS_TEXT = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "SmallAutoField",
        "IntegerField",
        "BigIntegerField",
        "SmallIntegerField",
        "PositiveIntegerField",
        "PositiveBigIntegerField",
        "PositiveSmallIntegerField",
        "BooleanField",
    }
)


def _json_kind(field) -> str:
    while field.is_relation and getattr(field, "target_field", None) is not None:
        field = field.target_field  # a foreign key is its target's value
    return field.get_internal_type()


def _json_value(sql: str, field) -> str:
    """The value `sql` of `field` as what is its JSON once written as text: a whole number as
    it is, a boolean cast to text (`true`, `false`; COPY would write `t`), anything else its
    `to_json`; NULL stays NULL. COPY writes it as it is (`copy_json`); in a row's object it
    is cast to text (`_JsonRow`). (Cast to text in a COPY too, the numbers made a page of
    judgments' COPY about an eighth slower.)"""
    kind = _json_kind(field)
    if kind == "BooleanField":
        return f"({sql})::text"
    return sql if kind in JSON_AS_TEXT else f"to_json({sql})"


class _JsonRow(Func):
    """A row's JSON object, written by PostgreSQL: the keys and each value's `to_json` (or
    the text of a number or boolean, which is the same), joined, with `null` for NULL: the
    same text as `row_to_json` of the row (timestamps in ISO 8601 with their offset, numbers
    as numbers, text escaped; tests/api holds the two equal), in two thirds of its time,
    which builds a record and runs a sub-plan per row."""

    output_field = TextField()

    def __init__(self, *expressions, keys: list[str]):
        super().__init__(*expressions)
        self.keys = list(keys)

    def as_sql(self, compiler, connection, **extra_context):
        parts, params = [], []
        for i, (key, expression) in enumerate(
            zip(self.keys, self.get_source_expressions(), strict=True)
        ):
            sql, more = compiler.compile(expression)
            params.extend(more)
            value = f"({_json_value(sql, expression.output_field)})::text"
            lead = ("{" if i == 0 else ",") + json.dumps(key) + ":"
            parts.append("'" + lead.replace("'", "''") + f"' || COALESCE({value}, 'null')")
        # The keys are the list's own (Columns), quoted as SQL strings; every value is
        # compiled SQL with its parameters.
        return "(" + " || ".join(parts) + " || '}')", params


class _JsonValue(Func):
    """A value of a page's row in the arrays layout, as COPY writes its JSON
    (`_json_value`, `copy_json`); NULL is COPY's NULL text, `null`."""

    output_field = TextField()

    def as_sql(self, compiler, connection, **extra_context):
        (source,) = self.get_source_expressions()
        sql, params = compiler.compile(source)
        return _json_value(sql, source.output_field), params


# CSV with a delimiter and a quote character that JSON holds nowhere unescaped (`to_json`
# escapes every control character; the keys are json.dumps'): each row is one line of its
# values' JSON as it is, and COPY quotes a value only where it equals the NULL text (a JSON
# null in a JSON column), which dropping the quote characters undoes.
COPY_JSON = "FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02', NULL 'null'"


def copy_json(queryset: models.QuerySet, columns: "Columns", *, layout: str) -> bytes:
    """The rows of `queryset`, in its order, as the JSON items of a page joined by commas:
    objects (`_JsonRow`) or arrays of the values (`_JsonValue`), written by PostgreSQL's
    COPY, several times cheaper per row than a select of the same JSON and read as bytes."""
    if layout == ARRAYS:
        values = {f"_json_{i}": _JsonValue(e) for i, e in enumerate(columns.expressions())}
    else:
        values = {"_json": columns.json()}
    statement, params = copy_sql(queryset.annotate(**values).values_list(*values), COPY_JSON)
    connection = connections[queryset.db]
    data = bytearray()
    with (
        connection.cursor() as cursor,
        connection.wrap_database_errors,
        cursor.cursor.copy(statement, params) as copy,
    ):
        for chunk in copy:
            data += chunk
    if not data:
        return b""
    if b"\x02" in data:
        data = data.replace(b"\x02", b"")
    del data[-1:]  # the last line's line feed
    if layout == ARRAYS:
        return b"".join((b"[", data.replace(b"\x01", b",").replace(b"\n", b"],["), b"]"))
    return bytes(data.replace(b"\n", b","))


@dataclass(frozen=True)
class Columns:
    """The keys of a long list's rows, each with the expression it is read from (a field
    path or a query expression), in order: the JSON list and the CSV export read the same."""

    items: tuple[tuple[str, object], ...]

    @classmethod
    def of(cls, **items) -> "Columns":
        return cls(tuple(items.items()))

    @property
    def keys(self) -> list[str]:
        return [key for key, _ in self.items]

    def expressions(self) -> list:
        return [F(e) if isinstance(e, str) else e for _, e in self.items]

    def json(self) -> _JsonRow:
        return _JsonRow(*self.expressions(), keys=self.keys)

    def annotated(self, queryset: models.QuerySet) -> tuple[models.QuerySet, list[tuple[str, str]]]:
        """`queryset` in the list's order with every column as an annotation, and the
        (header, annotation) pairs that a CSV export of it reads."""
        aliases = {f"_col{i}": e for i, e in enumerate(self.expressions())}
        columns = [(key, alias) for key, alias in zip(self.keys, aliases, strict=True)]
        return queryset.order_by("pk").annotate(**aliases), columns
