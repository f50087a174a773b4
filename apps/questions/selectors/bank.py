"""Reads of the question bank."""

from django.db.models import Avg, Case, CharField, Count, Q, QuerySet, Value, When

from ..models import LabelStatus, Question, Topic
from ..similarity import COSINE_CHOICE, COSINE_METHOD, COSINE_METHOD_SHORT, TRIGRAM_METHOD
from .strata import labels_as_shown, labels_blind_to


def needs_labelled(**needs: bool) -> Q:
    """Questions labelled with these needs (`needs_sensemaking=False`: labelled as not asking
    for sensemaking). An unlabelled question has no need labels: it is neither yes nor no."""
    return Q(**needs) & ~Q(label_status=LabelStatus.UNLABELLED)


def question_text_frozen_because(*, question: Question) -> str:
    """Why `question`'s text can no longer change, or "" while it still can.

    Rubrics are approved against a question's text and models answer it, so once either has
    happened the text is what they are evidence about. The downstream rows are reached by the
    related names their apps give Question (`rubrics`, `responses`): the bank imports neither
    (import-linter: the question bank knows nothing downstream). A rubric version was approved
    when it has an approval date (every approved one does, by its check constraint), and stays
    so: an approved version is never edited, its successor is a new version.
    """
    if question.pk is None:
        return ""
    reasons = []
    approved = list(
        question.rubrics.filter(approved_at__isnull=False)
        .order_by("version")
        .values_list("version", flat=True)
    )
    if approved:
        versions = ", ".join(str(v) for v in approved)
        reasons.append(f"rubric version{'s' if len(approved) > 1 else ''} {versions} approved")
    answers = question.responses.count()
    if answers:
        reasons.append(f"{answers} model answer{'s' if answers > 1 else ''} sampled")
    if not reasons:
        return ""
    return (
        f"The text of {question.external_id} can no longer change: it has "
        f"{' and '.join(reasons)} against it. To ask it differently, import it as a new "
        "question with a new id."
    )


def bank_questions(
    *,
    viewer,
    topic: Topic | None = None,
    length_bucket: str = "",
    prior_attempt: bool | None = None,
    needs_sensemaking: bool | None = None,
    needs_guidance: bool | None = None,
    label_status: str = "",
    search: str = "",
) -> QuerySet[Question]:
    """The bank's questions matching every filter given (an empty one matches all), with
    their labels as `viewer` may read them (labels_as_shown): a label filter leaves out the
    questions whose labels are hidden from them, since it would tell what those are."""
    questions = labels_as_shown(Question.objects.select_related("topic"), viewer=viewer)
    if any(label is not None for label in (prior_attempt, needs_sensemaking, needs_guidance)):
        questions = questions.exclude(labels_blind_to(viewer=viewer))
    if topic is not None:
        questions = questions.filter(topic=topic)
    if length_bucket:
        questions = questions.filter(length_bucket=length_bucket)
    if prior_attempt is not None:
        questions = questions.filter(mentions_prior_attempt=prior_attempt)
    if needs_sensemaking is not None:
        questions = questions.filter(needs_labelled(needs_sensemaking=needs_sensemaking))
    if needs_guidance is not None:
        questions = questions.filter(needs_labelled(needs_guidance=needs_guidance))
    if label_status:
        questions = questions.filter(label_status=label_status)
    if search.strip():
        term = search.strip()
        questions = questions.filter(
            Q(external_id__icontains=term)
            | Q(text__icontains=term)
            | Q(original_text__icontains=term)
        )
    return questions.order_by("topic__order", "external_id")


def rewrite_metrics_means(*, questions: QuerySet[Question]) -> dict:
    """The means of the two rewrite metrics over those of `questions` that have them, how
    many each mean is over, and how each was computed (the cosine's method is Assay's
    choice: `cosine_choice` says why)."""
    means = questions.order_by().aggregate(
        cosine=Avg("rewrite_cosine"),
        cosine_count=Count("rewrite_cosine"),
        trigram=Avg("rewrite_trigram_overlap"),
        trigram_count=Count("rewrite_trigram_overlap"),
    )
    return means | {
        "cosine_method": COSINE_METHOD,
        "cosine_method_short": COSINE_METHOD_SHORT,
        "cosine_choice": COSINE_CHOICE,
        "trigram_method": TRIGRAM_METHOD,
    }


BANK_EXPORT_COLUMNS = [
    ("id", "external_id"),
    ("topic", "topic__name"),
    ("text", "text"),
    ("original_text", "original_text"),
    ("length_bucket", "length_bucket"),
    ("mentions_prior_attempt", "mentions_prior_attempt_shown"),
    ("needs_sensemaking", "needs_sensemaking_shown"),
    ("needs_guidance", "needs_guidance_shown"),
    ("label_status", "label_status"),
    ("labelled_by", "labelled_by__username"),
    ("verified_by", "verified_by__username"),
    ("source_post", "source_post__external_id"),
    ("rewrite_model", "rewrite__job__model__display_name"),
    ("rewrite_prompt_version", "rewrite__job__prompt__version"),
    ("rewrite_approved_by", "rewrite_approved_by__username"),
    ("rewrite_approved_at", "rewrite_approved_at"),
    ("rewrite_cosine", "rewrite_cosine"),
    ("rewrite_cosine_method", "rewrite_cosine_method"),
    ("rewrite_trigram_overlap", "rewrite_trigram_overlap"),
    ("created_at", "created_at"),
]
BANK_EXPORT_HEADER = [header for header, _lookup in BANK_EXPORT_COLUMNS]
COSINE_EXPORT_METHOD = f"{COSINE_METHOD}. {COSINE_CHOICE}"


def bank_export_rows(*, questions: QuerySet[Question], chunk_size: int = 2000):
    """The CSV rows of `questions` (from bank_questions: its labels as shown), read through
    a server-side cursor (flat memory)."""
    lookups = [lookup for _header, lookup in BANK_EXPORT_COLUMNS]
    return with_cosine_method(questions).values_list(*lookups).iterator(chunk_size=chunk_size)


def with_cosine_method(questions: QuerySet[Question]) -> QuerySet[Question]:
    """`questions` with `rewrite_cosine_method`: beside every TF-IDF cosine, the method that
    made it and that it is Assay's choice (blank where there is no cosine), for exports."""
    method = Case(
        When(rewrite_cosine__isnull=False, then=Value(COSINE_EXPORT_METHOD)),
        default=Value(""),
        output_field=CharField(),
    )
    return questions.annotate(rewrite_cosine_method=method)
