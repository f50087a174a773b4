"""Strata labels: one researcher labels a question (prior attempt mentioned, need type),
another verifies it without seeing the first labels, and a disagreement is resolved.

Each step locks the question's row, so two researchers acting on it at once are served one
after the other and the second is told what changed; the unique (question, stage) of
QuestionLabel makes a repeated step impossible even so.
"""

from django.db import transaction

from ..errors import QuestionError
from ..models import LabelStage, LabelStatus, NeedType, Question, QuestionLabel, QuotaSettings


def question_label(
    *, question: Question, researcher, mentions_prior_attempt: bool, need_type: str
) -> Question:
    """The first labels of an unlabelled question; they wait for another researcher."""
    _labels_check(mentions_prior_attempt, need_type)
    with transaction.atomic():
        current = _locked(question)
        if current.label_status != LabelStatus.UNLABELLED:
            raise QuestionError(
                f"{current} is already labelled ({current.get_label_status_display().lower()}); "
                "its labels are not given twice."
            )
        _record(current, LabelStage.LABEL, researcher, mentions_prior_attempt, need_type)
        current.mentions_prior_attempt, current.need_type = mentions_prior_attempt, need_type
        current.labelled_by, current.label_status = researcher, LabelStatus.LABELLED
        current.save(
            update_fields=["mentions_prior_attempt", "need_type", "labelled_by", "label_status"]
        )
    return current


def question_label_verify(
    *, question: Question, researcher, mentions_prior_attempt: bool, need_type: str
) -> Question:
    """A second researcher's labels, given blind: equal to the first, the question is
    verified; different, it is disputed and waits for a resolution."""
    _labels_check(mentions_prior_attempt, need_type)
    with transaction.atomic():
        current = _locked(question)
        if current.label_status != LabelStatus.LABELLED:
            raise QuestionError(_not_waiting(current, "verification"))
        first = current.labels.get(stage=LabelStage.LABEL)
        if first.researcher_id == researcher.pk:
            raise QuestionError(
                f"You labelled {current}: another researcher verifies it, so that every label "
                "is seen by two people."
            )
        _record(current, LabelStage.VERIFY, researcher, mentions_prior_attempt, need_type)
        agree = (first.mentions_prior_attempt, first.need_type) == (
            mentions_prior_attempt,
            need_type,
        )
        fields = ["label_status"]
        if agree:
            current.label_status, current.verified_by = LabelStatus.VERIFIED, researcher
            fields.append("verified_by")
        else:
            current.label_status = LabelStatus.DISPUTED
        current.save(update_fields=fields)
    return current


def question_label_resolve(
    *, question: Question, researcher, mentions_prior_attempt: bool, need_type: str
) -> Question:
    """The labels a disputed question keeps, decided after seeing both."""
    _labels_check(mentions_prior_attempt, need_type)
    with transaction.atomic():
        current = _locked(question)
        if current.label_status != LabelStatus.DISPUTED:
            raise QuestionError(_not_waiting(current, "a resolution"))
        _record(current, LabelStage.RESOLVE, researcher, mentions_prior_attempt, need_type)
        current.mentions_prior_attempt, current.need_type = mentions_prior_attempt, need_type
        current.label_status, current.verified_by = LabelStatus.RESOLVED, researcher
        current.save(
            update_fields=["mentions_prior_attempt", "need_type", "label_status", "verified_by"]
        )
    return current


def quota_settings_update(*, target_per_topic: int, minimum_per_stratum: int) -> QuotaSettings:
    if target_per_topic < 1 or minimum_per_stratum < 0:
        raise QuestionError("The target must be at least 1 and the minimum at least 0.")
    if minimum_per_stratum > target_per_topic:
        raise QuestionError(
            f"A minimum of {minimum_per_stratum} per stratum cannot be met by a topic of "
            f"{target_per_topic} questions: lower it or raise the target."
        )
    # update_or_create: the seeded row may be missing from a database that was emptied.
    settings, _created = QuotaSettings.objects.update_or_create(
        pk=1,
        defaults={"target_per_topic": target_per_topic, "minimum_per_stratum": minimum_per_stratum},
    )
    return settings


def _locked(question: Question) -> Question:
    return Question.objects.select_for_update().get(pk=question.pk)


def _labels_check(mentions_prior_attempt, need_type) -> None:
    if not isinstance(mentions_prior_attempt, bool):
        raise QuestionError("Say whether the writer mentions what they already tried: yes or no.")
    if need_type not in NeedType.values:
        raise QuestionError("Choose the need type: sensemaking or guidance.")


def _record(question, stage, researcher, mentions_prior_attempt, need_type) -> QuestionLabel:
    return QuestionLabel.objects.create(
        question=question, stage=stage, researcher=researcher,
        mentions_prior_attempt=mentions_prior_attempt, need_type=need_type,
    )  # fmt: skip


def _not_waiting(question: Question, step: str) -> str:
    status = question.get_label_status_display().lower()
    return f"{question} is not waiting for {step}: it is {status}."
