"""The `assay-questions/1` JSON format: reading its questions.

A file is `{"format": "assay-questions/1", "topics": [...], "presentation_criteria": [...],
"questions": [{"id", "topic", "text", "need_type", "mentions_prior_attempt", "criteria"}]}`.
This module reads the question part; `apps.rubrics.interchange` reads the criteria. Every
problem is reported with the file, the item and the field, and a file with any problem is
refused whole.
"""

import json
import re
from dataclasses import dataclass

from .errors import FormatError
from .models import NeedType

FORMAT = "assay-questions/1"
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")


@dataclass(frozen=True)
class QuestionRecord:
    external_id: str
    topic: str
    text: str
    need_type: str
    mentions_prior_attempt: bool
    index: int


def load_json(content: bytes | str, filename: str) -> object:
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise FormatError(filename, [f"not UTF-8 text (byte {exc.start})"]) from exc
    try:
        return json.loads(content)
    except json.JSONDecodeError as exc:
        raise FormatError(
            filename, [f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"]
        ) from exc


def where(index: int, item: object) -> str:
    """`questions[3] ("accounts-02")`: how a problem names its item."""
    ident = item.get("id") if isinstance(item, dict) else None
    return f"questions[{index}]" + (f" ({ident!r})" if isinstance(ident, str) and ident else "")


def check_document(doc: object) -> list[str]:
    if not isinstance(doc, dict):
        return ['the top level must be a JSON object with "format" and "questions"']
    problems = []
    if doc.get("format") != FORMAT:
        problems.append(f'field "format" must be {FORMAT!r}, found {doc.get("format")!r}')
    questions = doc.get("questions")
    if not isinstance(questions, list) or not questions:
        problems.append('field "questions" must be a non-empty list')
    return problems


def question_records(doc: object, filename: str, topic_names: set[str]) -> list[QuestionRecord]:
    """Every question of `doc`, checked; raises FormatError naming each problem."""
    problems = check_document(doc)
    if problems:
        raise FormatError(filename, problems)
    listed = doc.get("topics")
    if listed is not None:
        if not isinstance(listed, list):
            problems.append('field "topics" must be a list of topic names')
        else:
            unknown = [t for t in listed if t not in topic_names]
            if unknown:
                problems.append(
                    f'field "topics": {", ".join(map(repr, unknown))} not among the topics '
                    f"({', '.join(sorted(topic_names))})"
                )
    records, seen = [], {}
    for index, item in enumerate(doc["questions"]):
        record, item_problems = _question(index, item, topic_names)
        problems.extend(item_problems)
        if record is None:
            continue
        if record.external_id in seen:
            first = seen[record.external_id]
            problems.append(f'{where(index, item)}, field "id": the same id as questions[{first}]')
            continue
        seen[record.external_id] = index
        records.append(record)
    if problems:
        raise FormatError(filename, problems)
    return records


def _question(index: int, item: object, topic_names: set[str]):
    at = where(index, item)
    if not isinstance(item, dict):
        return None, [f"{at}: must be a JSON object"]
    problems = []
    ident, topic, text = item.get("id"), item.get("topic"), item.get("text")
    if not isinstance(ident, str) or not ID_PATTERN.match(ident):
        problems.append(
            f'{at}, field "id": must be text of letters, digits and . _ : - (at most 100), '
            f"found {ident!r}"
        )
    if topic not in topic_names:
        problems.append(
            f'{at}, field "topic": {topic!r} is not one of the topics '
            f"({', '.join(sorted(topic_names))})"
        )
    if not isinstance(text, str) or not text.strip():
        problems.append(f'{at}, field "text": must be non-empty text')
    need_type = item.get("need_type", "")
    if need_type not in ("", *NeedType.values):
        problems.append(
            f'{at}, field "need_type": must be "sensemaking" or "guidance", found {need_type!r}'
        )
    prior = item.get("mentions_prior_attempt", False)
    if not isinstance(prior, bool):
        problems.append(f'{at}, field "mentions_prior_attempt": must be true or false')
    if problems:
        return None, problems
    record = QuestionRecord(
        external_id=ident, topic=topic, text=text.strip(), need_type=need_type,
        mentions_prior_attempt=prior, index=index,
    )  # fmt: skip
    return record, []
