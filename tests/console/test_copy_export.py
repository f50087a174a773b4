"""The COPY export writes, cell for cell, what the Python writer (`csv_rows`) writes: the same
formula rule (built from the same constants), the same booleans, timestamps, numbers, JSON
and empty cells, for hostile values and for any text at all."""

import csv
import datetime as dt
import io
import re
import sys
from decimal import Decimal

import pytest
from django.contrib.postgres.fields import ArrayField
from django.db import connection, models, transaction
from django.test.utils import isolate_apps
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from apps.console.csv_export import (
    FORMULA_LOOKALIKES,
    FORMULA_PREFIXES,
    LEADING_BLANKS,
    copy_csv_chunks,
    copy_csv_response,
    csv_rows,
    leading_blank_characters,
    spreadsheet_safe,
)

pytestmark = pytest.mark.django_db

COLUMNS = [
    ("id", "id"),
    ("=label", "label"),
    ("note", "note"),
    ("flag", "flag"),
    ("when", "when"),
    ("day", "day"),
    ("amount", "amount"),
    ("count", "count"),
    ("ratio", "ratio"),
    ("data", "data"),
    ("numbers", "numbers"),
]
BLANKS = leading_blank_characters()
UTC = dt.UTC

HOSTILE_TEXT = [
    *[f"{p}cmd|' /C calc'!A0" for p in FORMULA_PREFIXES],
    *[f"{c}SUM(1,2)" for c in FORMULA_LOOKALIKES],
    *[f"{b}=1+1" for b in BLANKS],  # each blank a spreadsheet skips, before a formula
    *[f"{b}{c}1" for b in (" ", "\u3000", "\u200b\ufeff") for c in FORMULA_LOOKALIKES],
    *BLANKS,  # a blank alone, and blanks alone
    " \t\r\n",
    " \t",
    "plain",
    " plain",
    "a = b",
    "e-mail",
    "x\uff1d1",
    "'already quoted",
    '"quoted", with a comma',
    'say ""hi""',
    "line one\nline two\r\nline three\rend",
    "\\.",  # COPY's end-of-data marker, as a value
    "",
    "Zoë Ünal, 東京, Ελληνικά, עברית",
    "🙂 👩‍💻 emoji first",
    "=🙂",
    "x" * 100_000,
    "-" + "y" * 50_000,
    "-4",
    "1e5",
]


@pytest.fixture
def table():
    """A table of its own (created in the test's transaction, gone after it) holding every
    kind of column an export meets."""
    with isolate_apps("tests.console"):

        class Hostile(models.Model):
            label = models.CharField(max_length=200, blank=True)
            note = models.TextField(null=True, blank=True)  # noqa: DJ001 (NULL is a case here)
            flag = models.BooleanField(null=True)
            when = models.DateTimeField(null=True)
            day = models.DateField(null=True)
            amount = models.DecimalField(max_digits=20, decimal_places=8, null=True)
            count = models.BigIntegerField(null=True)
            ratio = models.FloatField(null=True)
            data = models.JSONField(null=True)
            numbers = ArrayField(models.IntegerField(), null=True)

            class Meta:
                app_label = "console"

            def __str__(self):
                return str(self.pk)

        with connection.schema_editor() as editor:
            editor.create_model(Hostile)
        yield Hostile
        if connection.get_autocommit():  # a transactional test: the table was committed
            with connection.schema_editor() as editor:
                editor.delete_model(Hostile)


def both_ways(queryset, columns=COLUMNS):
    """The Python writer's and the COPY export's CSV of the same rows, parsed."""
    queryset = queryset.order_by("pk")
    python = "".join(
        csv_rows([h for h, _p in columns], queryset.values_list(*[p for _h, p in columns]))
    )
    copied = b"".join(copy_csv_chunks(queryset, columns=columns)).decode("utf-8")
    return parse(python), parse(copied)


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_every_character_the_python_rule_skips_is_in_the_sql_class():
    skipped = {chr(c) for c in range(sys.maxunicode + 1) if LEADING_BLANKS.match(chr(c))}
    assert skipped == set(BLANKS)
    assert {"\u200b", "\ufeff", "\u3000", "\u00a0", " ", "\t"} <= skipped


def test_hostile_text_is_exported_as_the_python_writer_writes_it(table):
    table.objects.bulk_create([table(label=v[:200], note=v) for v in HOSTILE_TEXT])
    python, copied = both_ways(table.objects.all())
    assert len(copied) == len(HOSTILE_TEXT) + 1
    assert copied == python
    # And the rule held: every prefixed cell starts with the quote, no other does.
    for value, row in zip(HOSTILE_TEXT, copied[1:], strict=True):
        assert row[2] == spreadsheet_safe(value)
    assert copied[0][1] == "'=label"


def test_values_of_every_type_are_exported_as_the_python_writer_writes_them(table):
    when = dt.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
    rows = [
        table(
            flag=True,
            when=when,
            day=dt.date(2024, 2, 29),
            amount=Decimal("-12.50"),
            count=-4,
            ratio=0.1,
            data={"b": [1, 2.5, "=x"], "a": 'ü\n"q"'},
            numbers=[1, -2],
        ),
        table(
            flag=False,
            when=when.replace(microsecond=0),
            day=dt.date(1, 1, 1),
            amount=Decimal("0.00012345"),
            count=0,
            ratio=2.0,
            data=[],
            numbers=[],
        ),
        table(
            flag=None,
            when=when.replace(year=996, microsecond=1),
            amount=Decimal("123456789.1"),
            count=-(2**62),
            ratio=-3.5,
            data="=HYPERLINK(1)",
            numbers=None,
        ),
        table(
            ratio=1e-05,
            data=-7,
            when=dt.datetime(2024, 1, 1, 5, tzinfo=dt.timezone(dt.timedelta(hours=5))),
        ),  # stored as 00:00 UTC
        table(ratio=1e20, data=True),
        table(ratio=123456.789, data=2.5),
        table(ratio=-0.0, data={}),
        table(ratio=float("nan")),
        table(ratio=float("inf")),
        table(ratio=float("-inf")),
        table(ratio=1e15),
        table(ratio=None, data=None),
    ]
    table.objects.bulk_create(rows)
    python, copied = both_ways(table.objects.all())
    assert copied == python
    first = dict(zip(python[0], copied[1], strict=True))
    assert first["flag"] == "true" and first["count"] == "-4" and first["amount"] == "-12.50000000"
    assert first["when"] == "2024-02-29T23:59:58.123456+00:00"
    assert first["data"] == '{"a": "ü\\n\\"q\\"", "b": [1, 2.5, "=x"]}'
    assert first["numbers"] == "[1, -2]"
    assert copied[3][9] == "'=HYPERLINK(1)"  # a JSON string is text, and neutralised
    assert copied[-1][1:] == [""] * 10


def test_columns_through_relations_and_annotations_are_exported_like_fields(table):
    from django.db.models import F, Value
    from django.db.models.functions import Concat

    table.objects.bulk_create([table(label=v[:200], count=i) for i, v in enumerate(HOSTILE_TEXT)])
    annotated = table.objects.annotate(
        joined=Concat(Value("+"), F("label"), output_field=models.TextField()),
        doubled=F("count") * 2,
    )
    columns = [("joined", "joined"), ("doubled", "doubled"), ("label", "label")]
    python, copied = both_ways(annotated, columns)
    assert copied == python
    assert all(row[0].startswith("'+") for row in copied[1:])


@hypothesis_settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(
        st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00")), max_size=8
    )
)
def test_any_text_is_exported_alike_both_ways(table, texts):
    with transaction.atomic():  # each example's rows, rolled back before the next
        table.objects.bulk_create([table(note=text, label=text[:200]) for text in texts])
        python, copied = both_ways(table.objects.all(), [("note", "note"), ("label", "label")])
        assert copied == python
        transaction.set_rollback(True)


def test_the_export_streams_in_blocks_and_counts_its_rows(table):
    table.objects.bulk_create([table(note="n" * 1000) for _ in range(300)])
    chunks = copy_csv_chunks(table.objects.order_by("pk"), columns=[("note", "note")])
    blocks = list(chunks)
    assert blocks[0] == b"note\n"
    assert len(blocks) > 3  # ~300 kB in blocks of ~64 kB, not one string
    assert all(len(block) < 70_000 for block in blocks)
    assert chunks.rows == 300


@pytest.mark.django_db(transaction=True)
def test_closing_an_export_midway_ends_its_statement_and_the_connection_goes_on(table):
    # As a web request is served: autocommit, the COPY its own transaction.
    table.objects.bulk_create([table(note="n" * 1000) for _ in range(1000)])
    chunks = copy_csv_chunks(table.objects.order_by("pk"), columns=[("note", "note")])
    next(chunks), next(chunks)
    chunks.close()
    assert chunks.rows is None  # it never finished
    assert connection.get_autocommit() and not connection.in_atomic_block
    assert table.objects.count() == 1000  # the connection is out of COPY and answers again


def test_the_response_is_streamed_csv_with_its_filename(table):
    table.objects.create(note="=1")
    response = copy_csv_response(
        table.objects.order_by("pk"), columns=[("note", "note")], filename="hostile.csv"
    )
    assert response.streaming and response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="hostile.csv"'
    assert b"".join(response.streaming_content) == b"note\n'=1\n"


def test_filter_values_are_bound_as_parameters_not_spliced(table):
    table.objects.create(label="x'); DROP TABLE console_hostile; --", note="kept")
    rows = table.objects.filter(label="x'); DROP TABLE console_hostile; --")
    body = b"".join(copy_csv_chunks(rows, columns=[("note", "note")])).decode()
    assert body == "note\nkept\n"
    assert re.search("DROP", body) is None and table.objects.count() == 1
