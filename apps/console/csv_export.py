"""Streaming CSV export that is safe to open in a spreadsheet.

Rows are written as they are read, so memory stays flat whatever the table's size. A text
cell that a spreadsheet would run as
a formula (leading `=`, `+`, `-`, `@`, tab, carriage return or line feed; OWASP's "CSV
injection" list) is prefixed with a single quote. So is one where such a character follows
leading whitespace (spreadsheets skip it) or comes in its full-width or small form (U+FF1D,
U+FF0B, U+FF0D, U+FF20: some spreadsheets, in East Asian locales, read those as the ASCII ones).
Numbers stay numbers.

Exports of tables are written by PostgreSQL itself (`copy_csv_chunks`): a
`COPY (SELECT ...) TO STDOUT` whose every text column is wrapped in SQL that applies the same
rule, built from the same constants, streamed block by block. A loop in Python calling
`spreadsheet_safe` per cell is several times slower than COPY on a million rows; the SQL
costs COPY a fraction more. `csv_rows` writes rows computed in Python (reports, scores).

Columns that name a person outside Assay (`IDENTIFYING_FIELDS`) are refused in every console
export, at registration: an export carries a pseudonym in their place.
"""

import csv
import datetime as dt
import functools
import io
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal

from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, models
from django.db.models import F, Func
from django.http import StreamingHttpResponse
from django.utils import timezone

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\n")
# Full-width and small forms of = + - @.
FORMULA_LOOKALIKES = (
    "\uff1d",
    "\uff0b",
    "\uff0d",
    "\uff20",
    "\ufe66",
    "\ufe62",
    "\ufe63",
    "\ufe6b",
)
# What a spreadsheet skips before a formula: whitespace (Unicode's, as `\s` and
# `str.isspace` know it) and the invisible zero-width space and byte-order mark, which they
# do not.
INVISIBLE_BLANKS = "\u200b\ufeff"
LEADING_BLANKS = re.compile(rf"^[\s{INVISIBLE_BLANKS}]+")
# A person's ids at Prolific (PROLIFIC_PID, SESSION_ID): no console export names them; the
# model's admin exports a pseudonym instead (`csv_queryset`). Only the approvals CSV, which
# Prolific itself needs, carries them.
IDENTIFYING_FIELDS = frozenset({"prolific_pid", "prolific_session_id"})
# COPY hands over one row at a time; the response is written in blocks of about this size.
BLOCK_BYTES = 64 * 1024


def spreadsheet_safe(value) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return value
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dict | list):  # a JSON field's object or array, as JSON
        return json.dumps(value, ensure_ascii=False)
    text = str(value)
    start = LEADING_BLANKS.sub("", text)
    if text.startswith(FORMULA_PREFIXES) or start.startswith(FORMULA_PREFIXES + FORMULA_LOOKALIKES):
        return "'" + text
    return text


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_rows(header: Sequence[str], rows: Iterable[Sequence]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow([spreadsheet_safe(h) for h in header])
    for row in rows:
        yield writer.writerow([spreadsheet_safe(v) for v in row])


def default_fields(model: type[models.Model]) -> list[str]:
    """Concrete columns, foreign keys as their ids."""
    return [f.attname for f in model._meta.concrete_fields]


# The formula rule in SQL, built from the constants above.


@functools.cache
def leading_blank_characters() -> str:
    """Every character `LEADING_BLANKS` skips, spelled out for SQL (tests/console holds the
    two equal over every code point)."""
    spaces = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    return spaces + INVISIBLE_BLANKS


def _class(characters: Iterable[str]) -> str:
    # PostgreSQL's advanced regular expressions read \uXXXX inside brackets too: no
    # character needs quoting, and none can end the class or make a range.
    return "[" + "".join(f"\\u{ord(c):04x}" for c in characters) + "]"


@functools.cache
def formula_pattern() -> str:
    """`spreadsheet_safe`'s test as a PostgreSQL regular expression: the text starts with a
    prefix, or its first character after leading blanks is a prefix or a look-alike. The
    second class holds no blank, so backtracking cannot stop the blanks short."""
    blanks = leading_blank_characters()
    firsts = [c for c in FORMULA_PREFIXES + FORMULA_LOOKALIKES if c not in blanks]
    return f"^({_class(FORMULA_PREFIXES)}|{_class(blanks)}*{_class(firsts)})"


@functools.cache
def harmless_first_characters() -> tuple[tuple[int, int], ...]:
    """Ranges of code points that no formula, prefix or blank starts with, around the first
    letters and digits of most text: a cell that starts in one is passed without the
    regular expression (a shortcut worth a sixth of the export's time on a million rows)."""
    starting = {ord(c) for c in leading_blank_characters()}
    starting |= {ord(c) for c in FORMULA_PREFIXES + FORMULA_LOOKALIKES}
    ranges = []
    for seed in ("A", "0"):
        low = high = ord(seed)
        while low - 1 > 0 and low - 1 not in starting:
            low -= 1
        while high + 1 not in starting:
            high += 1
        ranges.append((low, high))
    return tuple(ranges)


PLAIN_COLUMN = re.compile(r'"[^"]+"\."[^"]+"')


def _per_value(sql: str, params, build) -> tuple[str, list]:
    """`build(name)` is SQL that names the value more than once: given a plain column, as
    it is; given anything else, computed once per row in a sub-select."""
    if PLAIN_COLUMN.fullmatch(sql) and not params:
        return build(sql)
    body, constants = build("csv_cell.v")
    # Both parts are SQL that Django compiled or that is built here; values are parameters.
    return f"(SELECT {body} FROM (SELECT {sql} AS v) AS csv_cell)", [*constants, *params]  # noqa: S608


def _text_sql(value: str) -> tuple[str, list]:
    """`spreadsheet_safe` of a text value."""
    harmless = " OR ".join(
        f"ascii({value}) BETWEEN {low} AND {high}" for low, high in harmless_first_characters()
    )
    sql = (
        f"CASE WHEN {harmless} THEN {value} WHEN {value} ~ %s THEN '''' || {value} ELSE {value} END"
    )
    return sql, [formula_pattern()]


def _datetime_sql(value: str) -> tuple[str, list]:
    # As Python's isoformat() of the aware UTC datetime that Django reads: microseconds
    # only when there are any, and the offset as +00:00.
    utc = f"({value} AT TIME ZONE 'UTC')"
    return (
        f"""to_char({utc}, 'YYYY-MM-DD"T"HH24:MI:SS') || CASE WHEN """
        f"date_trunc('second', {utc}) = {utc} THEN '' ELSE to_char({utc}, '.US') END || '+00:00'"
    ), []


def _float_sql(value: str) -> tuple[str, list]:
    # As Python's repr(): a whole number keeps its ".0" (PostgreSQL writes "2") and is
    # written in full below 1e16; NaN and the infinities by Python's names.
    return (
        f"CASE WHEN {value} = 'NaN' THEN 'nan' WHEN {value} = 'Infinity' THEN 'inf' "
        f"WHEN {value} = '-Infinity' THEN '-inf' "
        f"WHEN {value} = 0 THEN CASE WHEN ({value})::text = '-0' THEN '-0.0' ELSE '0.0' END "
        f"WHEN {value} = trunc({value}) AND abs({value}) < 1e16 "
        f"THEN ({value})::numeric::text || '.0' ELSE ({value})::text END"
    ), []


def _json_sql(value: str) -> tuple[str, list]:
    text, constants = _text_sql(f"({value} #>> '{{}}')")
    return (
        f"CASE jsonb_typeof({value}) WHEN 'string' THEN {text} WHEN 'null' THEN NULL "
        f"ELSE ({value})::text END"
    ), constants


NUMBERS = frozenset(
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
        "DecimalField",
    }
)
TEXTS = frozenset({"CharField", "TextField", "SlugField", "EmailField", "URLField"})
BUILDERS = {"DateTimeField": _datetime_sql, "FloatField": _float_sql, "JSONField": _json_sql}


def _kind(field) -> str:
    while field.is_relation and getattr(field, "target_field", None) is not None:
        field = field.target_field  # a foreign key is its target's value
    return field.get_internal_type()


class SpreadsheetCell(Func):
    """A column as `csv_rows` writes it, computed by PostgreSQL: text through the formula
    rule, booleans as true/false, timestamps as isoformat(), JSON as JSON (a JSON string as
    text, through the rule), numbers as they are, NULL as an empty cell. Any other type is
    written as its text, through the rule."""

    output_field = models.TextField()

    def as_sql(self, compiler, connection, **extra_context):
        (source,) = self.get_source_expressions()
        sql, params = compiler.compile(source)
        params = list(params)
        kind = _kind(source.output_field)
        if kind in NUMBERS:
            return sql, params
        if kind == "BooleanField":
            return f"({sql})::text", params
        if kind == "ArrayField":
            return f"to_jsonb({sql})::text", params
        if kind == "DateField":
            return f"to_char({sql}, 'YYYY-MM-DD')", params
        if kind in BUILDERS:
            return _per_value(sql, params, BUILDERS[kind])
        if kind not in TEXTS:
            sql = f"({sql})::text"
        return _per_value(sql, params, _text_sql)


def copy_statement(queryset: models.QuerySet, *, columns: Sequence[tuple[str, str]]):
    """The COPY statement and its parameters for `columns` ((header, field path or
    annotation name), ...) of `queryset`, in its order, each cell as `csv_rows` writes it."""
    cells = {f"csv_cell_{i}": SpreadsheetCell(F(path)) for i, (_label, path) in enumerate(columns)}
    return copy_sql(queryset.annotate(**cells).values_list(*cells), "FORMAT csv")


def copy_sql(rows: models.QuerySet, options: str) -> tuple[str, tuple]:
    """`COPY (the SELECT of rows) TO STDOUT WITH (options)` and its parameters, bound
    client-side by psycopg as Django's own statements are (COPY takes none of its own)."""
    sql, params = rows.query.get_compiler(using=rows.db).as_sql()
    return f"COPY ({sql}) TO STDOUT WITH ({options})", tuple(params)


def header_line(labels: Sequence[str]) -> bytes:
    out = io.StringIO()
    # COPY ends its lines with a line feed; the header does the same.
    csv.writer(out, lineterminator="\n").writerow([spreadsheet_safe(label) for label in labels])
    return out.getvalue().encode()


class CopyChunks:
    """The CSV of a COPY, in blocks of about BLOCK_BYTES: the header first, then the rows as
    PostgreSQL writes them. `rows` is the number of rows written, once they all are.

    The statement starts when the first block after the header is asked for and lasts as
    long as the reading: under Django's autocommit it is its own transaction, so nothing
    outlives the response. Closed early (the client went away), psycopg cancels the COPY on
    the server."""

    def __init__(self, queryset: models.QuerySet, *, columns: Sequence[tuple[str, str]]):
        self.statement, self.params = copy_statement(queryset, columns=columns)
        self.header = header_line([label for label, _path in columns])
        self.using = queryset.db
        self.rows: int | None = None
        self._blocks = self._read()

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        return next(self._blocks)

    def close(self) -> None:
        self._blocks.close()

    def _read(self) -> Iterator[bytes]:
        yield self.header
        connection = connections[self.using]
        block = bytearray()
        with connection.cursor() as cursor, connection.wrap_database_errors:
            with cursor.cursor.copy(self.statement, self.params) as copy:
                for data in copy:
                    block += data
                    if len(block) >= BLOCK_BYTES:
                        yield bytes(block)
                        block.clear()
            self.rows = cursor.cursor.rowcount
        if block:
            yield bytes(block)


def copy_csv_chunks(queryset: models.QuerySet, *, columns: Sequence[tuple[str, str]]) -> CopyChunks:
    """The CSV of `columns` ((header, field path or annotation name), ...) of `queryset`,
    written by PostgreSQL's COPY and streamed in blocks: an iterator of bytes."""
    return CopyChunks(queryset, columns=columns)


def copy_csv_response(
    queryset: models.QuerySet, *, columns: Sequence[tuple[str, str]], filename: str
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        copy_csv_chunks(queryset, columns=columns), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _headers(columns: Sequence[tuple[str | None, str]]) -> list[str]:
    """Each column's header: its label, or else a name from its field path that reads as a
    column and not a query ("participant_kind" for "assignment__participant__kind": the
    field and the model it is on); the whole path, joined, where that name is taken."""
    short = [label or "_".join(path.split("__")[-2:]) for label, path in columns]
    taken = Counter(short)
    return [
        name if taken[name] == 1 or label else path.replace("__", "_")
        for name, (label, path) in zip(short, columns, strict=True)
    ]


def csv_columns(modeladmin) -> list[tuple[str, str]]:
    """The console export's columns for a model's admin: its `csv_fields` (each a field
    path, whose header `_headers` makes, or (header, path or annotation name)), or else
    every concrete column. Refuses a column that reaches one of `IDENTIFYING_FIELDS`."""
    fields = getattr(modeladmin, "csv_fields", None) or default_fields(modeladmin.model)
    columns = [(None, f) if isinstance(f, str) else (f[0], f[1]) for f in fields]
    columns = list(zip(_headers(columns), (path for _label, path in columns), strict=True))
    for _label, path in columns:
        if set(path.split("__")) & IDENTIFYING_FIELDS:
            raise ImproperlyConfigured(
                f"{type(modeladmin).__name__} exports {path!r}: a participant's Prolific ids "
                "leave Assay only in the approvals CSV. Export a pseudonym instead: a column "
                "that the admin's csv_queryset annotates with apps.surveys.pseudonyms."
            )
    return columns


@admin.action(description="Export selected rows as CSV", permissions=["view"])
def export_as_csv(modeladmin, request, queryset):
    model = queryset.model
    columns = csv_columns(modeladmin)
    if hasattr(modeladmin, "csv_queryset"):  # the admin's export-only annotations
        queryset = modeladmin.csv_queryset(queryset)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    filename = f"{model._meta.app_label}-{model._meta.model_name}-{stamp}.csv"
    return copy_csv_response(queryset.order_by("pk"), columns=columns, filename=filename)
