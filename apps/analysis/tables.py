"""A report table described once, shown as HTML (`analysis/_table.html`) and downloaded as CSV.

The page shows numbers rounded for reading; the CSV carries the raw values at full precision,
so that whoever publishes from it rounds once, from the real number. The data behind a figure
is a `Table` too. The CSV is written by the console's formula-safe writer (`csv_rows`), so a
model called "=HYPERLINK(...)" reaches a spreadsheet as text.
"""

import math
import numbers
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlencode

from django.http import StreamingHttpResponse

from apps.console.csv_export import csv_rows

from .labels import ModelName

if TYPE_CHECKING:
    from .method import Method

MISSING = "\u2014"  # an em dash, for a value that is not there (None or NaN)
# What a filename in Content-Disposition may hold: no quote, no header-breaking character.
UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")

Kind = Literal["text", "int", "float", "percent"]


@dataclass(frozen=True)
class TooFew:
    """A statistic left out because it rests on fewer than MIN_POINTS points
    (stats/points.py): the page says so with n, the CSV and the API leave the cell empty."""

    n: int

    def __str__(self) -> str:
        return f"too few points (n = {self.n:,})"


# A row's key outside its columns: the answer viewer's filter (grading:answers) that picks the
# answers behind the row ({"model": 3}); a column with `answers` adds its own to it.
ANSWERS = "_answers"


@dataclass(frozen=True)
class Column:
    """`digits` is the number of decimals shown for a float or a percent.

    A percent column holds percentage points (42.5 for 42.5%), as the plots take them.
    A `bounded` float column (a p-value) shows a value too small for its digits as a bound,
    "< 0.0001", never as a bare 0.0000; the CSV keeps the value itself.
    """

    key: str
    label: str
    kind: Kind = "text"
    digits: int = 3
    bounded: bool = False
    # What the column adds to its row's ANSWERS filter ({"topic": "scams"}; {}: nothing):
    # its cells link to the answers behind them. None: its cells are not linked.
    answers: dict | None = None

    @property
    def numeric(self) -> bool:
        return self.kind != "text"

    def format(self, value) -> str:
        if isinstance(value, TooFew):
            return str(value)
        if value is None or (isinstance(value, numbers.Real) and math.isnan(value)):
            return MISSING
        if self.kind == "int":
            return f"{value:,}"
        if self.kind == "float":
            smallest = 10**-self.digits
            if self.bounded and 0 <= value < smallest / 2:
                return f"< {smallest:.{self.digits}f}"
            return f"{value:,.{self.digits}f}"
        if self.kind == "percent":
            return f"{value:,.{self.digits}f}%"
        return str(value)


@dataclass(frozen=True)
class Cell:
    text: str
    numeric: bool
    offline_name: str = ""  # an offline model's name without its mark: the page badges it
    answers: str = ""  # the answer viewer's query string for the answers behind the cell


@dataclass
class Table:
    """The first column names each row: the HTML marks its cells as row headers.

    `n` says what the numbers rest on ("90 scenarios, 94 people, 3,150 answers").
    """

    name: str
    title: str
    columns: list[Column]
    rows: list[dict]
    notes: list[str] = field(default_factory=list)
    n: str = ""
    # How its numbers are made, against the paper (apps/analysis/method.py): the panel's rows.
    methods: "tuple[Method, ...]" = ()

    def formatted_rows(self) -> list[list[str]]:
        return [[column.format(row[column.key]) for column in self.columns] for row in self.rows]

    def formatted_cells(self) -> list[list[Cell]]:
        """`formatted_rows` as cells that say whether each is a number (the page sets numbers
        right, so that their digits line up down a column) and, for an offline model's name,
        the name the page shows beside its badge."""
        return [
            [
                Cell(
                    text=text,
                    numeric=column.numeric,
                    offline_name=_offline_name(row[column.key]),
                    answers=_answers_query(row, column),
                )
                for text, column in zip(texts, self.columns, strict=True)
            ]
            for texts, row in zip(self.formatted_rows(), self.rows, strict=True)
        ]

    def raw_rows(self) -> Iterator[list]:
        for row in self.rows:
            yield [_raw(row[column.key]) for column in self.columns]


def _answers_query(row: dict, column: Column) -> str:
    """The viewer's query for the answers behind a cell: none for an empty cell, a cell of
    too few points, or a row or column that does not pick answers."""
    picked = row.get(ANSWERS)
    if picked is None or column.answers is None or _raw(row[column.key]) is None:
        return ""
    return urlencode({**picked, **column.answers})


def _offline_name(value) -> str:
    return value.name if isinstance(value, ModelName) and value.offline else ""


def _raw(value):
    # NumPy's and pandas' numbers are not int or float, and the CSV writer would quote a
    # negative one as text; NaN would be written as the word "nan". Plain numbers and an
    # empty cell read back as what they are.
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, TooFew):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return None if math.isnan(value) else value
    return value


def table_csv_lines(table: Table) -> Iterator[str]:
    """The table's CSV, line by line: its columns' labels, then its raw values."""
    return csv_rows([column.label for column in table.columns], table.raw_rows())


def table_csv_response(table: Table, *, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(table_csv_lines(table), content_type="text/csv; charset=utf-8")
    filename = UNSAFE_IN_FILENAME.sub("-", filename)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
