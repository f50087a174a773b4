"""Who writes and who reviews each question's rubric: assigned by researchers, or claimed."""

from django.db import transaction

from apps.accounts.roles import Role, user_has_role
from apps.questions.models import Question, Topic

from ..errors import RubricError
from ..models import QuestionAssignment, Rubric, RubricState, TopicClaiming
from ..selectors import rubric_authors
from .revisions import locked


def _name(user) -> str:
    return user.get_full_name() or user.get_username()


def assignment_set(*, question: Question, author, reviewer, user) -> QuestionAssignment:
    if not user_has_role(user, Role.RESEARCHER):
        raise RubricError("Only researchers assign authors and reviewers.")
    errors = {}
    if author is not None and not user_has_role(author, Role.EXPERT):
        errors["author"] = f"{_name(author)} is not an expert."
    if reviewer is not None and not user_has_role(reviewer, Role.REVIEWER):
        errors["reviewer"] = f"{_name(reviewer)} is not a reviewer."
    if author is not None and reviewer is not None and author.pk == reviewer.pk:
        errors.setdefault("reviewer", "The reviewer must be someone other than the author.")
    if errors:
        raise RubricError(" ".join(errors.values()), field_errors=errors)
    assignment, _ = QuestionAssignment.objects.update_or_create(
        question=question,
        defaults={"author": author, "reviewer": reviewer, "assigned_by": user, "claimed": False},
    )
    return assignment


def topic_claiming_set(*, topic: Topic, open: bool, default_reviewer, user) -> TopicClaiming:
    if not user_has_role(user, Role.RESEARCHER):
        raise RubricError("Only researchers open topics for claiming.")
    if default_reviewer is not None and not user_has_role(default_reviewer, Role.REVIEWER):
        raise RubricError(f"{_name(default_reviewer)} is not a reviewer.")
    claiming, _ = TopicClaiming.objects.update_or_create(
        topic=topic, defaults={"open": open, "default_reviewer": default_reviewer}
    )
    return claiming


def question_claim(*, question: Question, user) -> QuestionAssignment:
    """An expert takes an unassigned question of a topic that is open for claiming."""
    if not user_has_role(user, Role.EXPERT):
        raise RubricError("Only experts claim questions.")
    claiming = TopicClaiming.objects.filter(topic_id=question.topic_id, open=True).first()
    if claiming is None:
        raise RubricError(f"Questions in {question.topic} are assigned by researchers.")
    with transaction.atomic():
        assignment, _ = QuestionAssignment.objects.select_for_update().get_or_create(
            question=question
        )
        if assignment.author_id == user.pk:
            return assignment
        if assignment.author_id is not None:
            raise RubricError(f"{_name(assignment.author)} already writes this rubric.")
        reviewer = claiming.default_reviewer
        assignment.author, assignment.claimed = user, True
        if assignment.reviewer_id is None and reviewer is not None and reviewer.pk != user.pk:
            assignment.reviewer = reviewer
        if assignment.reviewer_id == user.pk:
            raise RubricError("You review this question, so someone else must write it.")
        assignment.save(update_fields=["author", "claimed", "reviewer", "updated_at"])
    return assignment


def review_claim(*, rubric: Rubric, user) -> QuestionAssignment:
    """A reviewer takes the review of a submitted rubric that has no reviewer yet."""
    if not user_has_role(user, Role.REVIEWER):
        raise RubricError("Only reviewers take reviews.")
    with transaction.atomic():
        rubric = locked(rubric.pk)
        if rubric.state != RubricState.IN_REVIEW:
            raise RubricError("Only rubrics in review can be taken for review.")
        if user.pk in rubric_authors(rubric=rubric):
            raise RubricError(
                "You wrote or edited this version, so another reviewer must review it."
            )
        assignment, _ = QuestionAssignment.objects.select_for_update().get_or_create(
            question_id=rubric.question_id
        )
        if assignment.reviewer_id not in (None, user.pk):
            raise RubricError(f"{_name(assignment.reviewer)} already reviews this question.")
        assignment.reviewer = user
        assignment.save(update_fields=["reviewer", "updated_at"])
    return assignment
