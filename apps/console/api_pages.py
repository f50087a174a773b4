"""The API's pages: DRF's cursor pagination over the primary key (unique, so that a walk
along `next` sees every row once, even while rows are added), `page_size` up to 1,000 (up to
10,000 on the long lists, `LongPage`, which notebooks walk whole); and the fast path of the
long lists (`Columns`, `CursorPage.page_json`), where PostgreSQL writes each row's JSON object
itself and the page is joined from those strings:
building model instances and running a DRF serializer per row costs many times the query.

Kept apart from the viewsets (apps/console/api_lists.py): DRF reads the default pagination
class from here while it defines its own generic views.
"""

import base64
import json
from dataclasses import dataclass
from urllib import parse

from django.db import models
from django.db.models import F, Func, TextField
from django.http import HttpResponse
from rest_framework import exceptions
from rest_framework.pagination import Cursor, CursorPagination

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
# The long lists (responses, judgments, scores, answers) are read whole by scripts; a
# request costs Django and DRF some milliseconds whatever its size, which pages of 1,000
# rows of a judgment's size pay again every 1,000 rows.
LONG_MAX_PAGE_SIZE = 10_000


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

    def page_json(self, queryset, request, view, columns: "Columns") -> HttpResponse:
        """The fast path. First the page's ids (the filters, the cursor, the primary key's
        order and one row more than the page, which tells whether there is a page beyond);
        then the filtered rows between the first and the last of them, which are exactly the
        page's, each row's JSON written by PostgreSQL. Both are ranges of the primary key's
        index. (With the JSON beside the filters in one select, PostgreSQL may build it for
        every row they select before it sorts them and keeps a page; asked for the rows by a
        sub-select of ids, it may scan every row the filters select to find them.) The
        cursors are DRF's, as the other lists': over a unique key, a position and a way."""
        self.request, self.base_url = request, request.build_absolute_uri()
        self.page_size = self.get_page_size(request)
        cursor = self.decode_cursor(request)
        reverse = cursor is not None and cursor.reverse
        position = None if cursor is None else cursor.position
        chosen = queryset
        if position is not None:
            chosen = chosen.filter(pk__lt=position) if reverse else chosen.filter(pk__gt=position)
        order = "-pk" if reverse else "pk"
        ids = list(chosen.order_by(order).values_list("pk", flat=True)[: self.page_size + 1])
        more = len(ids) > self.page_size  # one more row than the page: there is a page beyond
        ids = sorted(ids[: self.page_size])
        rows = []
        if ids:
            page = queryset.filter(pk__gte=ids[0], pk__lte=ids[-1]).order_by("pk")
            rows = list(page.values_list("pk", columns.json()))
        # Forward, a later page exists when there were more rows, an earlier one when the
        # walk did not start at the beginning; backward, the other way round.
        later, earlier = (position is not None, more) if reverse else (more, position is not None)
        links = {"next": None, "previous": None}
        if rows and later:
            links["next"] = self.encode_cursor(
                Cursor(offset=0, reverse=False, position=str(rows[-1][0]))
            )
        if rows and earlier:
            links["previous"] = self.encode_cursor(
                Cursor(offset=0, reverse=True, position=str(rows[0][0]))
            )
        head = json.dumps(links)
        body = "".join((head[:-1], ', "results": [', ",".join(row for _pk, row in rows), "]}"))
        return HttpResponse(body.encode(), content_type="application/json")


class LongPage(CursorPage):
    """The long lists' pages: as every list's, up to LONG_MAX_PAGE_SIZE rows."""

    page_size_query_description = (
        f"Rows per page: {DEFAULT_PAGE_SIZE} unless given, at most {LONG_MAX_PAGE_SIZE}."
    )
    max_page_size = LONG_MAX_PAGE_SIZE


def cursor_after(pk: int) -> str:
    """The `cursor` value of the page that starts after row `pk` (as `next` links carry)."""
    query = parse.urlencode({"p": str(pk)}, doseq=True)
    return base64.b64encode(query.encode("ascii")).decode("ascii")


# Types whose JSON is their text in PostgreSQL (`to_json(5)` is `5`, `to_json(true)` is
# `true`): cast, not passed through to_json, which costs more per value.
JSON_AS_TEXT = frozenset({
    "AutoField", "BigAutoField", "SmallAutoField", "IntegerField", "BigIntegerField",
    "SmallIntegerField", "PositiveIntegerField", "PositiveBigIntegerField",
    "PositiveSmallIntegerField", "BooleanField",
})  # fmt: skip


def _json_kind(field) -> str:
    while field.is_relation and getattr(field, "target_field", None) is not None:
        field = field.target_field  # a foreign key is its target's value
    return field.get_internal_type()


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
            value = (
                f"({sql})::text"
                if _json_kind(expression.output_field) in JSON_AS_TEXT
                else f"to_json({sql})::text"
            )
            lead = ("{" if i == 0 else ",") + json.dumps(key) + ":"
            parts.append("'" + lead.replace("'", "''") + f"' || COALESCE({value}, 'null')")
        # The keys are the list's own (Columns), quoted as SQL strings; every value is
        # compiled SQL with its parameters.
        return "(" + " || ".join(parts) + " || '}')", params


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
