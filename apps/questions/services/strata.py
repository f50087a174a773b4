"""Strata labels: one researcher labels a question (prior attempt mentioned; needs
sensemaking; needs guidance: three yes/no labels, the two needs independent, as the published
benchmark labels them), another verifies it without seeing the first labels, and a
disagreement on any of them is resolved.

Each step locks the question's row, so two researchers acting on it at once are served one
after the other and the second is told what changed; the unique (question, stage) of
QuestionLabel makes a repeated step impossible even so.
"""

from django.db import transaction

from ..errors import QuestionError
from ..models import LabelStage, LabelStatus, Question, QuestionLabel, QuotaSettings
from ..selectors.strata import LABELS


def question_label(
    *,
    question: Question,
    researcher,
    mentions_prior_attempt: bool,
    needs_sensemaking: bool,
    needs_guidance: bool,
) -> Question:
    """The first labels of an unlabelled question; they wait for another researcher."""
    labels = _labels_check(mentions_prior_attempt, needs_sensemaking, needs_guidance)
    with transaction.atomic():
        current = _locked(question)
        if current.label_status != LabelStatus.UNLABELLED:
            raise QuestionError(
                f"{current} is already labelled ({current.get_label_status_display().lower()}); "
                "its labels are not given twice."
            )
        _record(current, LabelStage.LABEL, researcher, labels)
        _set(current, labels)
        current.labelled_by, current.label_status = researcher, LabelStatus.LABELLED
        current.save(update_fields=[*LABELS, "labelled_by", "label_status"])
    return current


def question_label_verify(
    *,
    question: Question,
    researcher,
    mentions_prior_attempt: bool,
    needs_sensemaking: bool,
    needs_guidance: bool,
) -> Question:
    """A second researcher's labels, given blind: equal to the first, the question is
    verified; different, it is disputed and waits for a resolution."""
    labels = _labels_check(mentions_prior_attempt, needs_sensemaking, needs_guidance)
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
        _record(current, LabelStage.VERIFY, researcher, labels)
        # A difference in any one label disputes the question.
        agree = all(getattr(first, name) == value for name, value in labels.items())
        fields = ["label_status"]
        if agree:
            current.label_status, current.verified_by = LabelStatus.VERIFIED, researcher
            fields.append("verified_by")
        else:
            current.label_status = LabelStatus.DISPUTED
        current.save(update_fields=fields)
    return current


def question_label_resolve(
    *,
    question: Question,
    researcher,
    mentions_prior_attempt: bool,
    needs_sensemaking: bool,
    needs_guidance: bool,
) -> Question:
    """The labels a disputed question keeps, decided after seeing both."""
    labels = _labels_check(mentions_prior_attempt, needs_sensemaking, needs_guidance)
    with transaction.atomic():
        current = _locked(question)
        if current.label_status != LabelStatus.DISPUTED:
            raise QuestionError(_not_waiting(current, "a resolution"))
        _record(current, LabelStage.RESOLVE, researcher, labels)
        _set(current, labels)
        current.label_status, current.verified_by = LabelStatus.RESOLVED, researcher
        current.save(update_fields=[*LABELS, "label_status", "verified_by"])
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


LABEL_ASKED = {
    "mentions_prior_attempt": "Say whether the writer mentions what they already tried",
    "needs_sensemaking": "Say whether the question asks for sensemaking",
    "needs_guidance": "Say whether the question asks for guidance",
}


def _labels_check(*values) -> dict[str, bool]:
    """The labels by field name (in the order of LABELS), each checked to be yes or no."""
    labels = dict(zip(LABELS, values, strict=True))
    for name, value in labels.items():
        if not isinstance(value, bool):
            raise QuestionError(f"{LABEL_ASKED[name]}: yes or no.")
    return labels


def _set(question: Question, labels: dict[str, bool]) -> None:
    for name, value in labels.items():
        setattr(question, name, value)


def _record(question, stage, researcher, labels: dict[str, bool]) -> QuestionLabel:
    return QuestionLabel.objects.create(
        question=question, stage=stage, researcher=researcher, **labels
    )


def _not_waiting(question: Question, step: str) -> str:
    status = question.get_label_status_display().lower()
    return f"{question} is not waiting for {step}: it is {status}."
