"""Files researchers upload, read so that no file can crash an importer or a page later.

Every importer (questions, rubrics, HealthBench, PrivacyLens scenarios, response CSVs) reads
its bytes through here before it looks at a single field: the size is checked before the
bytes are decoded, text is UTF-8 only (a UTF-8 BOM is accepted; UTF-16, which Excel and
Windows editors write, is refused by name, since `json.loads` would silently accept it from
bytes), NUL is refused wherever it hides (PostgreSQL text cannot hold it), and JSON is
parsed without letting deep nesting raise RecursionError. JSON may also spell what UTF-8
cannot hold, a lone surrogate (`"\\ud800"`, half of a UTF-16 pair), and an object may give a
key twice, which `json.loads` would settle silently by keeping the last: both are the file's
faults, refused where they are. A CSV header may name a column twice: refused too. Each
format's own module checks its fields on top of this; this module knows no format.
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


class RepeatedKey(UploadRefused):
    """A JSON object gives `key` twice."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(key_twice(key))


def key_twice(key: str) -> str:
    return f"the key {quoted(key)} appears twice (each key is given once)"


def quoted(key: str) -> str:
    """A key in a message, in double quotes as JSON writes it; escaped where it holds what a
    message cannot (a lone surrogate, a control character)."""
    return f'"{key}"' if key.isprintable() and not lone_surrogate(key) else shown(key)


def object_unique(pairs: list[tuple[str, object]]) -> dict:
    """An `object_pairs_hook` for JSON read one small record at a time (a line of JSON
    Lines): the object, or RepeatedKey naming the first key given twice."""
    value = dict(pairs)
    if len(value) != len(pairs):
        raise RepeatedKey(_repeated(pairs)[0])
    return value


def _repeated(pairs: list[tuple[str, object]]) -> list[str]:
    seen, repeated = set(), []
    for key, _value in pairs:
        if key in seen and key not in repeated:
            repeated.append(key)
        seen.add(key)
    return repeated


class _Objects:
    """An `object_pairs_hook` that builds each object and notes the keys it repeats, by the
    object's id (the parsed value keeps every object alive), so that each can be named by its
    path once the document is read."""

    def __init__(self):
        self.repeated: dict[int, list[str]] = {}

    def __call__(self, pairs: list[tuple[str, object]]) -> dict:
        value = dict(pairs)
        if len(value) != len(pairs):
            self.repeated[id(value)] = _repeated(pairs)
        return value


def lone_surrogate(text: str) -> str:
    """The first lone surrogate in `text`, escaped as JSON writes it (`\\ud800`), or ''."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"\\u{ord(text[exc.start]):04x}"
    return ""


def surrogate_problem(escaped: str) -> str:
    return (
        f"a lone surrogate ({escaped}), half of a UTF-16 pair and not a character; "
        "write the character itself, or both halves of its pair"
    )


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
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UploadRefused(
                f"{_position(text, exc.start)}: {surrogate_problem(lone_surrogate(text))}"
            ) from exc
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
    """The JSON value of `text`, or UploadRefused: invalid, nested too deep, holding a NUL
    or a lone surrogate (escaped as \\u0000 or \\ud800, which text_decode cannot see), or
    an object giving a key twice."""
    objects = _Objects()
    try:
        value = json.JSONDecoder(object_pairs_hook=objects).decode(text)
    except RecursionError as exc:
        raise NestedTooDeep(f"it is nested more than {max_depth} levels deep") from exc
    except json.JSONDecodeError as exc:
        raise UploadRefused(
            f"it is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from exc
    if path := deeper_than(value, max_depth=max_depth):
        raise NestedTooDeep(f"{path}: nested more than {max_depth} levels deep")
    problems = json_problems(value, repeated=objects.repeated)
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


def json_problems(value: object, *, repeated: dict[int, list[str]] | None = None) -> list[str]:
    """Every NUL or lone surrogate in a string or key, and every key an object repeats (by
    the object's id, as `_Objects` notes them), each named by its JSON path
    (`questions[3].text`)."""
    problems, repeated = [], repeated or {}
    for path, item, _depth in _walk(value):
        at = path or "the top level"
        if isinstance(item, dict):
            if any("\x00" in key for key in item):
                problems.append(f"{at}: a key holds a NUL character (\\u0000)")
            for key in item:
                if escaped := lone_surrogate(key):
                    problems.append(f"{at}: a key holds {surrogate_problem(escaped)}")
            problems.extend(f"{at}: {key_twice(key)}" for key in repeated.get(id(item), ()))
        if isinstance(item, str):
            if "\x00" in item:
                problems.append(f"{at}: a NUL character (\\u0000); remove it")
            if escaped := lone_surrogate(item):
                problems.append(f"{at}: {surrogate_problem(escaped)}")
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
    # DictReader keeps the last of two cells under one name: the first would be lost unseen.
    if twice := _repeated([(column, None) for column in columns]):
        raise UploadRefused(
            f"line 1 (the header): the column {quoted(twice[0])} appears twice "
            "(each column is named once)"
        )
    return columns, rows
