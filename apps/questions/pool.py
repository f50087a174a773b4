"""Candidate-post files (CSV or JSON Lines): read as a stream and checked row by row.

A file has the columns `external_id, subreddit, title, body, created_utc, topics` (topic
names separated by `;`, or a JSON list in JSON Lines). `post_rows` yields each good post as
a line of PostgreSQL's COPY text format and records every problem, each naming the line and
the field, in a `Problems`; the importer (services/imports.py) streams the lines into the
table and refuses the whole file if any problem was found. Nothing here holds more than one
row, so a file of millions of posts is read in constant memory; duplicates of an id are
found by the database, after the COPY, where the unique index already is.

The limits are the model's and the bank's: an id and a subreddit fit their columns, a body
is at most 40,000 characters (Reddit's own limit, `QUESTION_TEXT_MAX`), and the text is
UTF-8 with no NUL (PostgreSQL text cannot hold it). A JSON line gives each field once, and
no string of it holds a lone surrogate (an escape such as `\\ud800` that UTF-8 cannot
hold), as apps.console.uploads reads JSON for every importer. Dates are ISO 8601 with a
timezone (as exports write them) or Reddit's own epoch seconds.
"""

import codecs
import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from apps.console.uploads import (
    UTF16_HINT,
    RepeatedKey,
    lone_surrogate,
    looks_utf16,
    object_unique,
    shown,
    surrogate_problem,
)

from .errors import MAX_PROBLEMS, FormatError, QuestionError
from .interchange import QUESTION_TEXT_MAX
from .models import FileFormat, SourcePost

COLUMNS = ("external_id", "subreddit", "title", "body", "created_utc", "topics")
LIMITS = {
    "external_id": SourcePost._meta.get_field("external_id").max_length,
    "subreddit": SourcePost._meta.get_field("subreddit").max_length,
    "body": QUESTION_TEXT_MAX,
}
# A CSV field past this is a stray quote swallowing the file, not a post: stop there.
CSV_FIELD_MAX = 4 * 1024 * 1024
# Kept in memory for the report (with a count of the rest): the page shows the first 20.
PROBLEMS_KEPT = 200
PROGRESS_EVERY = 20_000
# Distinct `topics` values remembered by the fast path (a file has a few hundred at most).
TOPIC_SETS_KEPT = 10_000
EPOCH_EXAMPLE = "1625000000"
ISO_EXAMPLE = "2021-07-12T07:40:17+00:00"
# Where a JSON line may spell a surrogate (\uD800 to \uDFFF): only such a line's strings
# are checked for a lone one, so the lines without (nearly all) cost one scan in C.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
# One decoder for every line: json.loads with a hook would build a decoder per line.
_DECODER = json.JSONDecoder(object_pairs_hook=object_unique)


class ImportRefused(FormatError):
    """A file refused whole; `problems` holds the first ones, `total` counts them all (a
    file of millions of bad rows is not kept in memory to be counted)."""

    def __init__(self, filename: str, problems: list[str], total: int | None = None):
        self.filename = filename
        self.problems = problems
        self.total = len(problems) if total is None else total
        listed = problems[:MAX_PROBLEMS]
        text = f"{filename} was not imported (nothing was changed): " + "; ".join(listed)
        if self.total > len(listed):
            text += f"; and {self.total - len(listed)} more problem(s)"
        QuestionError.__init__(self, text)


@dataclass
class Problems:
    """Every problem of a file, in the order found; only the first `PROBLEMS_KEPT` are kept."""

    kept: list[tuple[int, str]] = field(default_factory=list)
    total: int = 0

    def add(self, line: int, text: str) -> None:
        self.total += 1
        if len(self.kept) < PROBLEMS_KEPT:
            self.kept.append((line, text))

    def texts(self) -> list[str]:
        return [text for _line, text in sorted(self.kept, key=lambda item: item[0])]

    def __bool__(self):
        return self.total > 0


@dataclass
class Tally:
    """What the good rows held: posts, posts per topic id, and how far the file was read."""

    rows: int = 0
    topic_counts: dict[int, int] = field(default_factory=dict)
    bytes_read: int = 0


def file_format_for(path: Path, filename: str) -> str:
    """JSON Lines by the name (.jsonl, .ndjson, .json) or, for other names, by a first `{`."""
    suffix = Path(filename).suffix.lower()
    if suffix in {".jsonl", ".ndjson", ".json"}:
        return FileFormat.JSONL
    if suffix == ".csv":
        return FileFormat.CSV
    with path.open("rb") as f:
        head = f.read(64).lstrip(codecs.BOM_UTF8 + b" \t\r\n")
    return FileFormat.JSONL if head.startswith(b"{") else FileFormat.CSV


def encoding_problem(path: Path) -> str:
    """Why the file is not UTF-8 text (named as the house's uploads name it), or ''."""
    with path.open("rb") as f:
        head = f.read(64)
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "it is UTF-32 text, not UTF-8; save it as UTF-8"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or looks_utf16(head[:32]):
        return UTF16_HINT
    return ""


def first_bad_byte(path: Path) -> str:
    """Where the file stops being UTF-8, read line by line (only once it is known to)."""
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                column = len(raw[: exc.start].decode("utf-8", "replace")) + 1
                return (
                    f"it is not UTF-8 text (line {number}, column {column}: byte "
                    f"0x{raw[exc.start]:02x} is not UTF-8); save it as UTF-8"
                )
    return "it is not UTF-8 text; save it as UTF-8"


def copy_text(value: str) -> str:
    """A value in COPY's text format: backslash, tab and line ends escaped."""
    if "\\" in value:
        value = value.replace("\\", "\\\\")
    if "\t" in value:
        value = value.replace("\t", "\\t")
    if "\n" in value:
        value = value.replace("\n", "\\n")
    if "\r" in value:
        value = value.replace("\r", "\\r")
    return value


def parse_created(value: object) -> datetime | str:
    """The post's time (aware), or what is wrong with the value found."""
    if isinstance(value, bool):
        return f"found {shown(value)}"
    if isinstance(value, int | float):
        seconds = value
    else:
        text = value.strip()
        try:
            seconds = float(text) if text.replace(".", "", 1).isdigit() else None
        except ValueError:
            seconds = None
        if seconds is None:
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                return (
                    f"found {shown(value)}, not a date: give ISO 8601 with a timezone "
                    f"({ISO_EXAMPLE}) or Unix epoch seconds ({EPOCH_EXAMPLE})"
                )
            if moment.tzinfo is None:
                return (
                    f"found {shown(value)}, a date without a timezone: add one "
                    f"({ISO_EXAMPLE}) or give Unix epoch seconds"
                )
            return moment
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return f"found {shown(value)}, not a time in epoch seconds"


class RowChecker:
    """Checks one record's fields and renders it for COPY; problems go to `problems`."""

    def __init__(self, *, topics: dict[str, int], batch_id: int, problems: Problems, tally: Tally):
        self.topics = topics
        self.folded = {name.casefold(): pk for name, pk in topics.items()}
        self.known = ", ".join(sorted(topics))
        self.batch = str(batch_id)
        self.problems = problems
        self.tally = tally
        self.id_max, self.subreddit_max = LIMITS["external_id"], LIMITS["subreddit"]
        self.body_max = LIMITS["body"]
        self.topic_sets: dict[str, tuple[str, list[int]]] = {}
        self.set_counts: dict[str, int] = {}

    def text_field(self, line: int, name: str, value: object) -> str | None:
        if value is None:
            self.problems.add(line, f'line {line}, field "{name}": missing')
            return None
        if not isinstance(value, str):
            self.problems.add(line, f'line {line}, field "{name}": found {shown(value)}, not text')
            return None
        if not value.strip():
            self.problems.add(line, f'line {line}, field "{name}": empty')
            return None
        if "\x00" in value:
            self.problems.add(
                line, f'line {line}, field "{name}": a NUL character (U+0000); remove it'
            )
            return None
        limit = LIMITS.get(name)
        if limit is not None and len(value) > limit:
            self.problems.add(
                line,
                f'line {line}, field "{name}": {len(value):,} characters, more than the '
                f"{limit:,} allowed",
            )
            return None
        return value

    def topic_ids(self, line: int, value: object) -> list[int] | None:
        if isinstance(value, list):
            names = value
        elif isinstance(value, str):
            names = value.split(";")
        elif value is None:
            self.problems.add(line, f'line {line}, field "topics": missing')
            return None
        else:
            self.problems.add(
                line, f'line {line}, field "topics": found {shown(value)}, not topic names'
            )
            return None
        ids = []
        for name in names:
            if not isinstance(name, str):
                self.problems.add(
                    line, f'line {line}, field "topics": found {shown(name)}, not a topic name'
                )
                return None
            name = name.strip()
            if not name:
                continue
            pk = self.topics.get(name) or self.folded.get(name.casefold())
            if pk is None:
                self.problems.add(
                    line,
                    f'line {line}, field "topics": unknown topic {shown(name)} '
                    f"(the topics are: {self.known})",
                )
                return None
            if pk not in ids:
                ids.append(pk)
        if not ids:
            self.problems.add(line, f'line {line}, field "topics": empty')
            return None
        return ids

    def fast_row(self, line: int, cells: tuple) -> str | None:
        """The COPY line of a record whose fields are all plainly good (nearly every one
        of a real file), checked inline for speed; anything doubtful goes to `row`, which
        names the problem. `cells` are the values in the order of COLUMNS."""
        external_id, subreddit, title, body, created, topics = cells
        if not (
            type(external_id) is str
            and type(subreddit) is str
            and type(title) is str
            and type(body) is str
            and type(created) is str
            and type(topics) is str
            and 0 < len(external_id) <= self.id_max
            and not external_id.isspace()
            and 0 < len(subreddit) <= self.subreddit_max
            and not subreddit.isspace()
            and title
            and not title.isspace()
            and 0 < len(body) <= self.body_max
            and not body.isspace()
        ):
            return self.row(line, dict(zip(COLUMNS, cells, strict=True)))
        known = self.topic_sets.get(topics)
        if known is None:
            if len(self.topic_sets) >= TOPIC_SETS_KEPT:
                return self.row(line, dict(zip(COLUMNS, cells, strict=True)))
            ids = self.topic_ids(line, topics)
            if ids is None:
                return None
            known = self.topic_sets[topics] = ("{" + ",".join(map(str, ids)) + "}", ids)
        # The exports' own form (`2021-07-12T07:40:17+00:00`) goes through as it is, once
        # Python has read it as a valid date; any other form is normalised.
        if not (len(created) == 25 and created.endswith("+00:00") and created[10] == "T"):
            return self.row(line, dict(zip(COLUMNS, cells, strict=True)))
        try:
            datetime.fromisoformat(created)
        except ValueError:
            return self.row(line, dict(zip(COLUMNS, cells, strict=True)))
        text = "\t".join((external_id, subreddit, title, body))
        if "\x00" in text:
            return self.row(line, dict(zip(COLUMNS, cells, strict=True)))
        if "\\" in text or "\n" in text or "\r" in text or text.count("\t") != 3:
            text = "\t".join(map(copy_text, (external_id, subreddit, title, body)))
        self.set_counts[topics] = self.set_counts.get(topics, 0) + 1
        self.tally.rows += 1
        return f"{text}\t{created}\t{known[0]}\t{len(body)}\t{self.batch}\t{line}\n"

    def counts_settle(self) -> None:
        """Add the fast path's counts (kept per distinct `topics` value) to the tally's."""
        counts = self.tally.topic_counts
        for topics, count in self.set_counts.items():
            for pk in self.topic_sets[topics][1]:
                counts[pk] = counts.get(pk, 0) + count
        self.set_counts.clear()

    def row(self, line: int, record: dict) -> str | None:
        """The record as a COPY line, or None (its problems recorded)."""
        before = self.problems.total
        values = [self.text_field(line, name, record.get(name)) for name in COLUMNS[:4]]
        created = record.get("created_utc")
        if created is None or (isinstance(created, str) and not created.strip()):
            self.problems.add(
                line,
                f'line {line}, field "created_utc": {"missing" if created is None else "empty"}',
            )
        else:
            moment = parse_created(created)
            if isinstance(moment, str):
                self.problems.add(line, f'line {line}, field "created_utc": {moment}')
            created = moment
        ids = self.topic_ids(line, record.get("topics"))
        if self.problems.total != before:
            return None
        external_id, subreddit, title, body = values
        counts = self.tally.topic_counts
        for pk in ids:
            counts[pk] = counts.get(pk, 0) + 1
        self.tally.rows += 1
        return (
            "\t".join(
                (
                    copy_text(external_id),
                    copy_text(subreddit),
                    copy_text(title),
                    copy_text(body),
                    created.isoformat(),
                    "{" + ",".join(map(str, ids)) + "}",
                    str(len(body)),
                    self.batch,
                    str(line),
                )
            )
            + "\n"
        )


# The COPY target: the columns in the order `RowChecker.row` writes them.
COPY_COLUMNS = (
    "external_id",
    "subreddit",
    "title",
    "body",
    "created_utc",
    "topic_ids",
    "body_chars",
    "batch_id",
    "line",
)


def _csv_records(text, problems: Problems) -> Iterator[tuple[int, dict]]:
    reader = csv.reader(text)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        problems.add(1, f"line 1: not valid CSV ({exc})")
        return
    if not header or not any(cell.strip() for cell in header):
        problems.add(1, "the file is empty: the first line must be the header")
        return
    header = [cell.strip().lstrip("\ufeff") for cell in header]
    seen, header_problems = set(), []
    for cell in header:
        if cell in seen:
            header_problems.append(f'line 1 (the header): column "{cell}" appears twice')
        elif cell not in COLUMNS:
            header_problems.append(
                f"line 1 (the header): unknown column {shown(cell)} (the columns are: "
                f"{', '.join(COLUMNS)})"
            )
        seen.add(cell)
    header_problems += [
        f'line 1 (the header): column "{name}" is missing' for name in COLUMNS if name not in seen
    ]
    for problem in header_problems:
        problems.add(1, problem)
    if header_problems:
        return
    width = len(header)
    order = [header.index(name) for name in COLUMNS]
    in_order = order == list(range(width))
    line = reader.line_num + 1
    try:
        for cells in reader:
            if not cells:
                pass  # a blank line
            elif len(cells) != width:
                problems.add(line, f"line {line}: {len(cells)} fields, but the header has {width}")
            else:
                yield line, cells if in_order else [cells[i] for i in order]
            line = reader.line_num + 1
    except csv.Error as exc:
        problems.add(line, f"line {line}: not valid CSV ({exc})")


def _jsonl_records(text, problems: Problems) -> Iterator[tuple[int, dict]]:
    for line, raw in enumerate(text, start=1):
        if not raw.strip():
            continue
        try:
            record = _DECODER.decode(raw)
        except RepeatedKey as exc:
            problems.add(line, f"line {line}: {exc}")
            continue
        except RecursionError:
            problems.add(line, f"line {line}: not a JSON object (nested too deep)")
            continue
        except json.JSONDecodeError as exc:
            problems.add(line, f"line {line}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(record, dict):
            problems.add(line, f"line {line}: not a JSON object ({type(record).__name__})")
            continue
        unknown = [key for key in record if key not in COLUMNS]
        if unknown:
            problems.add(
                line,
                f"line {line}: unknown field(s) {', '.join(map(shown, unknown))} (the fields "
                f"are: {', '.join(COLUMNS)})",
            )
            continue
        if SURROGATE_ESCAPE.search(raw) and _surrogates(line, record, problems):
            continue
        yield line, tuple(record.get(name) for name in COLUMNS)


def _surrogates(line: int, record: dict, problems: Problems) -> bool:
    """Whether a field of `record` holds a lone surrogate (each one found is a problem)."""
    found = False
    for name, value in record.items():
        for text in value if isinstance(value, list) else (value,):
            if isinstance(text, str) and (escaped := lone_surrogate(text)):
                problems.add(line, f'line {line}, field "{name}": {surrogate_problem(escaped)}')
                found = True
                break
    return found


def post_rows(
    path: Path,
    *,
    file_format: str,
    topics: dict[str, int],
    batch_id: int,
    problems: Problems,
    tally: Tally,
    progress: Callable[[Tally], None] | None = None,
) -> Iterator[str]:
    """COPY lines of the good posts of the file at `path`; every problem goes to `problems`.

    Decoding is done by the io module in C for speed; it says only that a byte is wrong, so
    the line is found by a second, slower read once the file is known not to be UTF-8."""
    if problem := encoding_problem(path):
        problems.add(0, problem)
        return
    checker = RowChecker(topics=topics, batch_id=batch_id, problems=problems, tally=tally)
    raw = path.open("rb")
    try:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="strict", newline="")
        records = (
            _csv_records(text, problems)
            if file_format == FileFormat.CSV
            else _jsonl_records(text, problems)
        )
        previous = csv.field_size_limit(CSV_FIELD_MAX)
        try:
            fast = checker.fast_row
            for line, cells in records:
                row = fast(line, cells)
                if row is not None:
                    yield row
                    if progress is not None and tally.rows % PROGRESS_EVERY == 0:
                        tally.bytes_read = raw.tell()
                        progress(tally)
            checker.counts_settle()
        except UnicodeDecodeError:
            problems.add(0, first_bad_byte(path))
            return
        finally:
            csv.field_size_limit(previous)
        tally.bytes_read = raw.tell()
        if not tally.rows and not problems:
            problems.add(1, "the file holds no posts")
    finally:
        raw.close()
