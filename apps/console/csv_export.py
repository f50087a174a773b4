"""Streaming CSV export that is safe to open in a spreadsheet.

Rows are read through a server-side cursor (`QuerySet.iterator`) and written as they come,
so memory stays flat whatever the table's size. A text cell that a spreadsheet would run as
a formula (leading `=`, `+`, `-`, `@`, tab, carriage return or line feed; OWASP's "CSV
injection" list) is prefixed with a single quote. So is one where such a character follows
leading whitespace (spreadsheets skip it) or comes in its full-width or small form (U+FF1D,
U+FF0B, U+FF0D, U+FF20: some spreadsheets, in East Asian locales, read those as the ASCII ones).
Numbers stay numbers.
"""

import csv
import datetime as dt
import re
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal

from django.contrib import admin
from django.db import models
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
# What a spreadsheet skips before a formula: whitespace (Unicode's, as `\s` knows it) and
# the invisible zero-width space and byte-order mark, which `\s` does not.
LEADING_BLANKS = re.compile(r"^[\s\u200b\ufeff]+")
CHUNK_SIZE = 2000


def spreadsheet_safe(value) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return value
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
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


def stream_csv(queryset: models.QuerySet, fields: Sequence[str], filename: str):
    rows = queryset.values_list(*fields).iterator(chunk_size=CHUNK_SIZE)
    response = StreamingHttpResponse(csv_rows(fields, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@admin.action(description="Export selected rows as CSV", permissions=["view"])
def export_as_csv(modeladmin, request, queryset):
    model = queryset.model
    fields = list(getattr(modeladmin, "csv_fields", None) or default_fields(model))
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    filename = f"{model._meta.app_label}-{model._meta.model_name}-{stamp}.csv"
    return stream_csv(queryset.order_by("pk"), fields, filename)
