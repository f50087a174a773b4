from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from ..errors import FormatError, QuestionError
from ..interchange import (
    NEEDS,
    QUESTION_TEXT_MAX,
    QuestionRecord,
    load_json,
    question_records,
    text_problem,
)
from ..models import EmbeddingCosine, LabelStatus, Question, Topic, length_bucket_for
from ..selectors import question_text_frozen_because


@dataclass
class QuestionImportReport:
    filename: str
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    with_criteria: int = 0

    def summary(self) -> str:
        text = (
            f"{self.filename}: {len(self.created)} question(s) imported, "
            f"{len(self.unchanged)} already in the bank unchanged."
        )
        if self.with_criteria:
            text += (
                f" The file also holds rubric criteria for {self.with_criteria} question(s); "
                "import those as rubrics (Rubrics > Import, or manage.py import_rubrics)."
            )
        return text


def questions_import(*, content: bytes | str, filename: str, user=None) -> QuestionImportReport:
    """Import every question of an `assay-questions/1` file, or none of them."""
    # A FormatError (a QuestionError) keeps its problems one by one for the page to list.
    doc = load_json(content, filename)
    records = question_records(doc, filename, set(Topic.objects.values_list("name", flat=True)))
    report = QuestionImportReport(filename=filename)
    report.with_criteria = sum(1 for q in doc["questions"] if q.get("criteria"))
    try:
        with transaction.atomic():
            _questions, created = questions_ensure(records=records, filename=filename, user=user)
    except IntegrityError as exc:
        # Another import added one of these ids between our check and our insert.
        raise QuestionError(f"{filename} was not imported: {exc}; try again.") from exc
    report.created = created
    report.unchanged = [r.external_id for r in records if r.external_id not in set(created)]
    return report


def questions_ensure(
    *, records: list[QuestionRecord], filename: str, user=None
) -> tuple[dict[str, Question], list[str]]:
    """The bank's question for every record, creating the missing ones (call inside a
    transaction). Returns ({id: question}, ids created).

    A question whose id is already in the bank must be identical: questions are what rubrics
    and answers were written against, so an import never changes one.
    """
    topics = {t.name: t for t in Topic.objects.all()}
    existing = Question.objects.select_for_update().in_bulk(
        [r.external_id for r in records], field_name="external_id"
    )
    problems = [
        p
        for r in records
        if r.external_id in existing
        for p in _differences(r, existing[r.external_id])
    ]
    if problems:
        raise FormatError(filename, problems)
    questions, created = dict(existing), []
    for record in records:
        if record.external_id not in questions:
            questions[record.external_id] = question_create(
                record=record, topic=topics[record.topic], user=user
            )
            created.append(record.external_id)
    return questions, created


def question_create(*, record: QuestionRecord, topic: Topic, user=None) -> Question:
    return Question.objects.create(
        external_id=record.external_id,
        topic=topic,
        text=record.text,
        length_bucket=length_bucket_for(record.text),
        mentions_prior_attempt=record.mentions_prior_attempt,
        needs_sensemaking=record.needs_sensemaking,
        needs_guidance=record.needs_guidance,
        labelled_by=user,
        # A file's labels were verified where the file was made.
        label_status=LabelStatus.VERIFIED if record.labelled else LabelStatus.UNLABELLED,
    )


def question_update(*, question: Question, fields: dict) -> Question:
    """Change the named fields of a question. Its text is frozen once a rubric version was
    approved against it or a model answered it (selectors.question_text_frozen_because):
    changing it then is refused with the reason. A new text gets its length bucket, and
    loses its cosines of embeddings (they were of the old text: compute them again)."""
    with transaction.atomic():
        current = Question.objects.select_for_update().get(pk=question.pk)
        fields = dict(fields)
        if "text" in fields:
            fields["text"] = normalise_newlines(fields["text"])
            if fields["text"] == current.text:
                del fields["text"]
            else:
                reason = question_text_frozen_because(question=current)
                if reason:
                    raise QuestionError(reason)
                # The importers' limits hold for an edited text too.
                problem = text_problem(str(current), "text", fields["text"], QUESTION_TEXT_MAX)
                if problem or "\x00" in fields["text"]:
                    raise QuestionError(problem or f'{current}, field "text": contains a NUL')
                # A question from a post keeps its post's stratum (the published strata
                # are of the posts; a rewrite must not move a question between them).
                fields["length_bucket"] = length_bucket_for(current.original_text or fields["text"])
        for name, value in fields.items():
            setattr(current, name, value)
        if fields:
            current.save(update_fields=list(fields))
        if {"text", "original_text"} & set(fields):
            EmbeddingCosine.objects.filter(question=current).delete()
    return current


def normalise_newlines(text: str) -> str:
    """A browser sends a textarea's lines ending in CRLF: the same text, stored with LF."""
    return text.replace("\r\n", "\n")


def _differences(record: QuestionRecord, question: Question) -> list[str]:
    at = f"questions[{record.index}] ({record.external_id!r})"
    # A need label is None where there is none: in a record without labels, and on a question
    # not labelled yet (whose False is not a "no").
    labelled = question.label_status != LabelStatus.UNLABELLED
    pairs = [
        ("text", record.text, question.text),
        ("topic", record.topic, question.topic.name),
        ("mentions_prior_attempt", record.mentions_prior_attempt, question.mentions_prior_attempt),
        *(
            (
                name,
                getattr(record, name) if record.labelled else None,
                getattr(question, name) if labelled else None,
            )
            for name in NEEDS
        ),
    ]
    return [
        f'{at}, field "{name}": differs from the question already in the bank with this id '
        "(imports never change a stored question; give it a new id)"
        for name, new, old in pairs
        if new != old
    ]
