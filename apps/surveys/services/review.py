"""The researcher's review of finished submissions: approve, reject, or mark returned. With a
Prolific client, the decision is sent to Prolific first and recorded only if it accepted it."""

from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from .. import prolific as prolific_api
from ..errors import ProlificError, SurveyError
from ..models import (
    AssignmentStatus,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    RejectionCategory,
    ReviewStatus,
    Study,
)

MIN_REJECTION_MESSAGE = 100
FREED_ON_RETURN = (AssignmentStatus.RESERVED, AssignmentStatus.COMPLETED, AssignmentStatus.EXPIRED)


@transaction.atomic
def participant_mark_returned(*, participant: Participant) -> Participant:
    """The person returned their submission on Prolific: their scenarios reopen."""
    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if participant.review_status == ReviewStatus.APPROVED:
        raise SurveyError("An approved submission cannot be marked returned.")
    participant.assignments.filter(status__in=FREED_ON_RETURN).update(
        status=AssignmentStatus.RELEASED
    )
    participant.status = ParticipantStatus.RETURNED
    participant.save(update_fields=["status"])
    return participant


def _reviewable(participant: Participant) -> None:
    if participant.kind != ParticipantKind.HUMAN:
        raise SurveyError("A proxy model is not a submission: it is never reviewed.")
    if participant.status != ParticipantStatus.FINISHED:
        raise SurveyError("Only finished submissions can be reviewed.")
    if participant.review_status != ReviewStatus.PENDING:
        raise SurveyError(
            f"This submission is already {participant.get_review_status_display().lower()}."
        )


def participants_approve(
    *,
    study: Study,
    participant_ids: list[int],
    user,
    client: prolific_api.ProlificClient | None = None,
) -> list[Participant]:
    """Approve finished, unreviewed submissions of `study`: with a client, on Prolific first
    (its bulk-approve endpoint, one call per Prolific study), and here only if it accepted."""
    participants = list(
        study.participants.filter(pk__in=participant_ids, kind=ParticipantKind.HUMAN).order_by("pk")
    )
    if not participants or len(participants) != len(set(participant_ids)):
        raise SurveyError("Choose submissions of this study to approve.")
    for participant in participants:
        try:
            _reviewable(participant)
        except SurveyError as exc:
            raise SurveyError(f"{participant.prolific_pid}: {exc}") from exc
    if client is not None:
        by_study: dict[str, list[str]] = defaultdict(list)
        for participant in participants:
            prolific_study = participant.prolific_study_id or study.prolific_study_id
            if not prolific_study:
                raise SurveyError(
                    f"{participant.prolific_pid} arrived without a STUDY_ID and the study has "
                    "no Prolific study id: set it before approving through Prolific."
                )
            by_study[prolific_study].append(participant.prolific_pid)
        for prolific_study, pids in by_study.items():
            try:
                client.bulk_approve(study_id=prolific_study, participant_ids=pids)
            except ProlificError as exc:
                raise SurveyError(f"Prolific did not accept the approval: {exc}") from exc
    with transaction.atomic():
        updated = Participant.objects.filter(
            pk__in=[p.pk for p in participants], review_status=ReviewStatus.PENDING
        ).update(review_status=ReviewStatus.APPROVED, reviewed_at=timezone.now(), reviewed_by=user)
    if updated != len(participants):
        raise SurveyError("Someone else reviewed some of these submissions a moment ago.")
    for participant in participants:
        participant.refresh_from_db()
    return participants


def participant_reject(
    *,
    participant: Participant,
    user,
    category: str,
    message: str,
    client: prolific_api.ProlificClient | None = None,
) -> Participant:
    """Reject a submission: its ratings leave the analysis and their scenarios reopen."""
    _reviewable(participant)
    if category not in RejectionCategory.values:
        raise SurveyError("Choose one of Prolific's rejection categories.")
    message = message.strip()
    if len(message) < MIN_REJECTION_MESSAGE:
        raise SurveyError(
            f"Prolific requires a message of at least {MIN_REJECTION_MESSAGE} characters "
            f"explaining the rejection ({len(message)} so far)."
        )
    if client is not None:
        try:
            client.reject(
                submission_id=participant.prolific_session_id, category=category, message=message
            )
        except ProlificError as exc:
            raise SurveyError(f"Prolific did not accept the rejection: {exc}") from exc
    with transaction.atomic():
        pending = Participant.objects.filter(pk=participant.pk, review_status=ReviewStatus.PENDING)
        updated = pending.update(
            review_status=ReviewStatus.REJECTED,
            rejection_category=category,
            rejection_message=message,
            reviewed_at=timezone.now(),
            reviewed_by=user,
        )
        if not updated:
            raise SurveyError("Someone else reviewed this submission a moment ago.")
        participant.assignments.exclude(status=AssignmentStatus.RELEASED).update(
            status=AssignmentStatus.REJECTED
        )
    participant.refresh_from_db()
    return participant
