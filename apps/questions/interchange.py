"""The `assay-questions/1` JSON format: reading its questions, and writing the bank's.

A file is `{"format": "assay-questions/1", "topics": [...], "presentation_criteria": [...],
"questions": [{"id", "topic", "text", "mentions_prior_attempt", "needs_sensemaking",
"needs_guidance", "criteria"}]}`. This module reads the question part;
`apps.rubrics.interchange` reads the criteria. Every problem is reported with the file, the
item and the field, and a file with any problem is refused whole.

Rubric parts, read by `apps.rubrics.interchange`: a question's `criteria` are
`{"text", "polarity", "kind", "points"}`; `presentation_criteria` (optional) is the shared
set of the bank that wrote the file, criteria of the presentation kind, checked as every
criterion is and compared with the importing bank's set (a rubric carries the set of the
bank it is in, so the file's is never imported); an export notes beside each question its
rubric's `rubric_version` (a whole number from 1) and `rubric_state` (draft, in_review,
changes_requested or approved) where it was written, checked but never imported (an
imported rubric is a new draft).

A question's labels: `mentions_prior_attempt` (true or false, default false), and the two
needs the published benchmark labels independently, `needs_sensemaking` and
`needs_guidance` (each true or false; a question may need both, one or neither). A question
that gives both needs is labelled; one that gives neither (absent or null) is not; one alone
is refused. Older files carry one `need_type` instead ("sensemaking", "guidance" or ""): it
is still read, as the migration to two labels read it: "sensemaking" is sensemaking yes and
guidance no, "guidance" the other way round, "" unlabelled. A question gives one form or the
other, never both.

The limits are the database's and the pages': the file is UTF-8 JSON of at most 20 MB, nested
at most `MAX_JSON_DEPTH` levels, with no NUL anywhere; an id fits `Question.external_id`
(and `fullmatch`es its pattern: `$` would let a trailing newline through); a question's text
is at most 40,000 characters, Reddit's own limit for a post, which the bank's questions are.

The writer (`questions_document`) gives the bank's questions without criteria: the question
bank knows nothing of rubrics. An importer takes a file's labels as verified where the file
was made, so only settled labels (verified or resolved) are written; a question whose labels
are still pending goes out unlabelled and is labelled again wherever it is imported.
"""

import re
from dataclasses import dataclass

from apps.console.uploads import UploadRefused, json_parse, shown, text_decode

from .errors import FormatError
from .models import LabelStatus, Question

FORMAT = "assay-questions/1"
MAX_FILE_BYTES = 20 * 1024 * 1024
ID_MAX = Question._meta.get_field("external_id").max_length
ID_PATTERN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:-]{{0,{ID_MAX - 1}}}")
QUESTION_TEXT_MAX = 40_000
NEEDS = ("needs_sensemaking", "needs_guidance")
# The older single need type, as the two needs (apps/questions/migrations/0006_need_labels.py).
NEED_TYPES = {"sensemaking": (True, False), "guidance": (False, True)}


@dataclass(frozen=True)
class QuestionRecord:
    external_id: str
    topic: str
    text: str
    mentions_prior_attempt: bool
    index: int
    needs_sensemaking: bool = False
    needs_guidance: bool = False
    labelled: bool = False  # whether the file gives its needs (then verified where it was made)


def load_json(content: bytes | str, filename: str) -> object:
    """The document, or FormatError: too large, not UTF-8, NUL, invalid or too deep JSON."""
    try:
        return json_parse(text_decode(content, max_bytes=MAX_FILE_BYTES))
    except UploadRefused as exc:
        raise FormatError(filename, [str(exc)]) from exc


def id_valid(ident: object) -> bool:
    return isinstance(ident, str) and ID_PATTERN.fullmatch(ident) is not None


def text_problem(at: str, field: str, value: object, limit: int) -> str:
    """The problem with a required text field, or ''."""
    if not isinstance(value, str) or not value.strip():
        return f'{at}, field "{field}": must be non-empty text'
    if len(value) > limit:
        return f'{at}, field "{field}": {len(value):,} characters, more than the {limit:,} allowed'
    return ""


def where(index: int, item: object) -> str:
    """`questions[3] ("accounts-02")`: how a problem names its item."""
    ident = item.get("id") if isinstance(item, dict) else None
    named = isinstance(ident, str) and ident
    return f"questions[{index}]" + (f" ({shown(ident)})" if named else "")


def check_document(doc: object) -> list[str]:
    if not isinstance(doc, dict):
        return ['the top level must be a JSON object with "format" and "questions"']
    problems = []
    if doc.get("format") != FORMAT:
        problems.append(f'field "format" must be {FORMAT!r}, found {shown(doc.get("format"))}')
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
            unknown = [t for t in listed if not isinstance(t, str) or t not in topic_names]
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
    if not id_valid(ident):
        problems.append(
            f'{at}, field "id": must be text of letters, digits and . _ : - (at most {ID_MAX}), '
            f"found {shown(ident)}"
        )
    if not isinstance(topic, str) or topic not in topic_names:
        problems.append(
            f'{at}, field "topic": {shown(topic)} is not one of the topics '
            f"({', '.join(sorted(topic_names))})"
        )
    if problem := text_problem(at, "text", text, QUESTION_TEXT_MAX):
        problems.append(problem)
    needs = _needs(at, item, problems)
    prior = item.get("mentions_prior_attempt", False)
    if not isinstance(prior, bool):
        problems.append(f'{at}, field "mentions_prior_attempt": must be true or false')
    if problems:
        return None, problems
    sensemaking, guidance = needs or (False, False)
    record = QuestionRecord(
        external_id=ident,
        topic=topic,
        text=text.strip(),
        mentions_prior_attempt=prior,
        index=index,
        needs_sensemaking=sensemaking,
        needs_guidance=guidance,
        labelled=needs is not None,
    )
    return record, []


def _needs(at: str, item: dict, problems: list[str]) -> tuple[bool, bool] | None:
    """The item's (needs sensemaking, needs guidance), or None when it is not labelled;
    a problem found is added to `problems`."""
    given = [item.get(name) for name in NEEDS]
    if "need_type" in item:
        if any(value is not None for value in given):
            problems.append(
                f'{at}, field "need_type": give either "need_type" (the older form) or '
                '"needs_sensemaking" and "needs_guidance", not both'
            )
            return None
        need_type = item["need_type"]
        if not isinstance(need_type, str) or need_type not in ("", *NEED_TYPES):
            problems.append(
                f'{at}, field "need_type": must be "sensemaking", "guidance" or "", '
                f"found {shown(need_type)}"
            )
            return None
        return NEED_TYPES.get(need_type)
    for name, value in zip(NEEDS, given, strict=True):
        if value is not None and not isinstance(value, bool):
            problems.append(
                f'{at}, field "{name}": must be true, false or null, found {shown(value)}'
            )
            return None
    if given.count(None) == 1:
        missing = NEEDS[given.index(None)]
        problems.append(
            f'{at}, field "{missing}": must be true or false when the other need is given '
            "(a question is labelled for both needs or for neither)"
        )
        return None
    return None if given[0] is None else (given[0], given[1])


SETTLED_LABELS = (LabelStatus.VERIFIED, LabelStatus.RESOLVED)


def question_item(question: Question) -> dict:
    """A question as a file's item; its labels only when settled (null needs otherwise)."""
    settled = question.label_status in SETTLED_LABELS
    return {
        "id": question.external_id,
        "topic": question.topic.name,
        "text": question.text,
        "mentions_prior_attempt": question.mentions_prior_attempt if settled else False,
        "needs_sensemaking": question.needs_sensemaking if settled else None,
        "needs_guidance": question.needs_guidance if settled else None,
    }


def questions_document(*, questions) -> dict:
    """An `assay-questions/1` document of `questions` (each with its topic loaded), listing
    the topics they are in, in the bank's order."""
    items, topics = [], {}
    for question in questions:
        items.append(question_item(question))
        topics.setdefault(question.topic.name, (question.topic.order, question.topic.name))
    ordered = [name for name, _key in sorted(topics.items(), key=lambda pair: pair[1])]
    return {"format": FORMAT, "topics": ordered, "questions": items}
