"""Files researchers upload, read so that no file can crash an importer or a page later.

Every importer (questions, rubrics, HealthBench, PrivacyLens scenarios, response CSVs) reads
its bytes through here before it looks at a single field: the size is checked before the
bytes are decoded, text is UTF-8 only (a UTF-8 BOM is accepted; UTF-16, which Excel and
Windows editors write, is refused by name, since `json.loads` would silently accept it from
bytes), NUL is refused wherever it hides (PostgreSQL text cannot hold it), and JSON is
parsed without letting deep nesting raise RecursionError. Each format's own module checks
its fields on top of this; this module knows no format.
"""

import codecs
import csv
import io
import json
from collections.abc import Iterator

# The deepest JSON any of our formats needs is 6 levels (a scenario's observation);
# pages render past 12 levels as text, and the parser itself recurses per level.
MAX_JSON_DEPTH = 32
UTF16_HINT = (
    "it is UTF-16 text, not UTF-8; save it as UTF-8 (in most editors: Save as, "
    "Encoding: UTF-8) and upload it again"
)


class UploadRefused(ValueError):
    """The file cannot be read; the message says where and why, without the filename
    (the caller's error names the file)."""


class NestedTooDeep(UploadRefused):
    """JSON nested deeper than its format allows (or than the parser can recurse)."""


def shown(value: object) -> str:
    """A found value in a message: its repr, cut short (a file may hold megabytes there)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def megabytes(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MB"


def size_check(size: int, *, max_bytes: int) -> None:
    """Refuse a file by its size, before it is read or decoded."""
    if size > max_bytes:
        raise UploadRefused(f"the file is larger than {megabytes(max_bytes)}")


def upload_size_validate(upload, *, max_bytes: int):
    """A form's `clean_file`: the upload, or the refusal every importer words alike, given
    before a byte of it is read."""
    from django import forms  # only forms need it; this module is also used without them

    if upload.size > max_bytes:
        raise forms.ValidationError(
            f"{upload.name} was not imported (nothing was changed): the file is larger "
            f"than {megabytes(max_bytes)}"
        )
    return upload


def _position(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


def looks_utf16(content: bytes) -> bool:
    # UTF-16 without a BOM: JSON and CSV start with ASCII, which then has a zero in every
    # other byte (a lone NUL in UTF-8 text does not look like this).
    sample = content[:32]
    if len(sample) < 4:
        return False
    high, low = sample[1::2], sample[0::2]
    return (not any(high) and all(low)) or (not any(low) and all(high))


def text_decode(content: bytes | str, *, max_bytes: int) -> str:
    """The file's text: strict UTF-8 (an optional BOM dropped), no NUL, at most `max_bytes`."""
    if isinstance(content, str):
        size_check(len(content.encode("utf-8", "surrogatepass")), max_bytes=max_bytes)
        text = content.removeprefix("\ufeff")
    else:
        size_check(len(content), max_bytes=max_bytes)
        if content.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
            raise UploadRefused("it is UTF-32 text, not UTF-8; save it as UTF-8")
        if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or looks_utf16(content):
            raise UploadRefused(UTF16_HINT)
        try:
            text = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            before = content[: exc.start].decode("utf-8", "replace")
            raise UploadRefused(
                f"it is not UTF-8 text ({_position(before, len(before))}: byte "
                f"0x{content[exc.start]:02x} is not UTF-8); save it as UTF-8"
            ) from exc
    nul = text.find("\x00")
    if nul >= 0:
        raise UploadRefused(f"{_position(text, nul)}: a NUL character (U+0000); remove it")
    return text


def json_parse(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> object:
    """The JSON value of `text`, or UploadRefused: invalid, nested too deep, or holding a NUL
    (escaped as \\u0000, which text_decode cannot see)."""
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise NestedTooDeep(f"it is nested more than {max_depth} levels deep") from exc
    except json.JSONDecodeError as exc:
        raise UploadRefused(
            f"it is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from exc
    if path := deeper_than(value, max_depth=max_depth):
        raise NestedTooDeep(f"{path}: nested more than {max_depth} levels deep")
    problems = json_problems(value)
    if problems:
        raise UploadRefused("; ".join(problems[:5]))
    return value


def _walk(value: object) -> Iterator[tuple[str, object, int]]:
    # Iterative, so that checking depth cannot itself recurse too deep.
    stack = [("", value, 0)]
    while stack:
        path, item, depth = stack.pop()
        yield path, item, depth
        if isinstance(item, dict):
            children = [(f"{path}.{key}" if path else str(key), v) for key, v in item.items()]
        elif isinstance(item, list):
            children = [(f"{path}[{i}]", v) for i, v in enumerate(item)]
        else:
            continue
        stack.extend((child_path, child, depth + 1) for child_path, child in reversed(children))


def deeper_than(value: object, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """The JSON path of the first value nested deeper than `max_depth`, or None."""
    return next((path for path, _item, depth in _walk(value) if depth > max_depth), None)


def json_problems(value: object) -> list[str]:
    """Every NUL in a string or key, each named by its JSON path (`questions[3].text`)."""
    problems = []
    for path, item, _depth in _walk(value):
        if isinstance(item, dict) and any("\x00" in key for key in item):
            problems.append(f"{path or 'the top level'}: a key holds a NUL character (\\u0000)")
        if isinstance(item, str) and "\x00" in item:
            problems.append(f"{path or 'the top level'}: a NUL character (\\u0000); remove it")
    return problems


def csv_rows(text: str) -> tuple[list[str], list[tuple[int, dict]]]:
    """(column names, [(line, row)]) of a CSV; `line` is where the row starts. A malformed
    file (a field past the csv module's size limit, a stray quote) raises UploadRefused."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    try:
        columns = list(reader.fieldnames or [])
        line = reader.line_num + 1
        for row in reader:
            rows.append((line, row))
            line = reader.line_num + 1
    except csv.Error as exc:
        raise UploadRefused(f"line {reader.line_num}: not valid CSV ({exc})") from exc
    return columns, rows
