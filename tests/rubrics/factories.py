"""Questions, rubrics and criteria for tests, made through the services where it matters."""

import itertools

from apps.questions.models import Question, Topic, length_bucket_for
from apps.rubrics import services
from apps.rubrics.models import QuestionAssignment, Rubric

_numbers = itertools.count(1)


def question_make(*, topic: str = "accounts", text: str | None = None, **fields) -> Question:
    number = next(_numbers)
    text = text or f"How do I keep my account number {number} safe after a phishing email?"
    return Question.objects.create(
        external_id=fields.pop("external_id", f"q-{number}"),
        topic=Topic.objects.get(name=topic),
        text=text,
        length_bucket=length_bucket_for(text),
        **fields,
    )


def assign(question: Question, *, author=None, reviewer=None) -> QuestionAssignment:
    assignment, _ = QuestionAssignment.objects.update_or_create(
        question=question, defaults={"author": author, "reviewer": reviewer}
    )
    return assignment


CRITERIA = [
    ("Recommends turning on two-factor authentication.", "positive", "factual", 5),
    ("Suggests checking the account's recent sign-in activity.", "positive", "factual", 3),
    ("Tells the person to reply to the email to confirm it is fake.", "negative", "factual", 5),
]


def draft_with_criteria(question: Question, author, criteria=CRITERIA) -> Rubric:
    rubric = services.rubric_start(question=question, user=author)
    for text, polarity, kind, points in criteria:
        services.criterion_add(
            rubric=rubric, user=author, revision=rubric.revision, text=text,
            polarity=polarity, kind=kind, points=points,
        )  # fmt: skip
        rubric.refresh_from_db()
    return rubric


def approved_rubric(question: Question, author, reviewer, criteria=CRITERIA) -> Rubric:
    rubric = draft_with_criteria(question, author, criteria)
    services.rubric_submit_for_review(rubric=rubric, user=author)
    services.rubric_approve(rubric=rubric, user=reviewer)
    rubric.refresh_from_db()
    return rubric
