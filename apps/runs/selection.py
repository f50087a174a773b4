"""How a sampling run's questions are chosen: by topic and stratum (the question bank's
own fields), and by conditions that apps downstream contribute.

Runs know nothing of rubrics (rubrics -> runs, never back), yet a researcher samples
"every question with an approved rubric". So the condition is registered by the rubrics
app, as home-page panels are: `question_condition_register(key=..., label=..., apply=...)`
in its `ready()`, and this module applies whatever is registered by key.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db.models import QuerySet

from apps.questions.models import Question
from apps.questions.selectors import needs_labelled

from .errors import RunError


@dataclass(frozen=True)
class QuestionCondition:
    key: str
    label: str
    apply: Callable[[QuerySet], QuerySet]


_conditions: dict[str, QuestionCondition] = {}


def question_condition_register(*, key: str, label: str, apply: Callable) -> None:
    _conditions[key] = QuestionCondition(key=key, label=label, apply=apply)


def question_conditions() -> list[QuestionCondition]:
    return list(_conditions.values())


def questions_select(
    *,
    conditions: Iterable[str] = (),
    topics: Iterable[int] = (),
    length_buckets: Iterable[str] = (),
    prior_attempt: bool | None = None,
    needs_sensemaking: bool | None = None,
    needs_guidance: bool | None = None,
) -> QuerySet[Question]:
    """The questions that meet every registered condition named and the filters given
    (an empty filter does not filter). A need filter is true for the questions labelled as
    asking for it, false for those labelled as not (never the unlabelled)."""
    questions = Question.objects.all()
    for key in conditions:
        if key not in _conditions:
            raise RunError(f"Unknown question condition {key!r}.")
        questions = _conditions[key].apply(questions)
    if topics := list(topics):
        questions = questions.filter(topic_id__in=topics)
    if length_buckets := list(length_buckets):
        questions = questions.filter(length_bucket__in=length_buckets)
    if prior_attempt is not None:
        questions = questions.filter(mentions_prior_attempt=prior_attempt)
    if needs_sensemaking is not None:
        questions = questions.filter(needs_labelled(needs_sensemaking=needs_sensemaking))
    if needs_guidance is not None:
        questions = questions.filter(needs_labelled(needs_guidance=needs_guidance))
    return questions.order_by("pk")
