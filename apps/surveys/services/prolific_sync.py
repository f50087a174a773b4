"""Bringing Prolific's view of a study's submissions into Assay."""

from .. import prolific as prolific_api
from ..errors import ProlificError, SurveyError
from ..models import ParticipantStatus, Study
from .review import participant_mark_returned

# Prolific's submission statuses (its API's `status` values) that free the scenarios.
RETURNED_STATUSES = {"RETURNED", "TIMED-OUT"}


def study_sync_returned(*, study: Study, client: prolific_api.ProlificClient) -> int:
    """Mark participants whose Prolific submissions were returned or timed out; their
    scenarios reopen. Returns how many were marked."""
    if not study.prolific_study_id:
        raise SurveyError("Set the study's Prolific study id first.")
    try:
        submissions = client.submissions(study_id=study.prolific_study_id)
    except ProlificError as exc:
        raise SurveyError(f"Could not read the study's submissions from Prolific: {exc}") from exc
    returned = {s.session_id for s in submissions if s.status in RETURNED_STATUSES}
    marked = 0
    for participant in study.participants.filter(prolific_session_id__in=returned).exclude(
        status=ParticipantStatus.RETURNED
    ):
        participant_mark_returned(participant=participant)
        marked += 1
    return marked
