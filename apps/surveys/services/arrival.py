"""Arriving from Prolific: the link's ids, a returning participant, consent and decline."""

import datetime as dt
import re
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from ..errors import SurveyError
from ..models import (
    Page,
    PageTime,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    Study,
    StudyStatus,
)
from .reservation import Contended, assignment_reserve_bundle, assignment_reserve_fresh

PROLIFIC_ID = re.compile(r"^[0-9a-f]{24}$")


@dataclass(frozen=True)
class ProlificParams:
    pid: str
    study_id: str
    session_id: str


def prolific_params_parse(*, study: Study, query) -> ProlificParams:
    """The PROLIFIC_PID, STUDY_ID and SESSION_ID of a link, or SurveyError saying what's wrong."""
    values = {
        key: (query.get(key) or "").strip() for key in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
    }
    missing = [key for key, value in values.items() if not value]
    if missing:
        raise SurveyError(f"The link is missing {', '.join(missing)}.")
    wrong = [key for key, value in values.items() if not PROLIFIC_ID.match(value)]
    if wrong:
        raise SurveyError(f"The link's {', '.join(wrong)} is not a Prolific id.")
    if study.prolific_study_id and values["STUDY_ID"] != study.prolific_study_id:
        raise SurveyError("The link's STUDY_ID belongs to another study.")
    return ProlificParams(values["PROLIFIC_PID"], values["STUDY_ID"], values["SESSION_ID"])


def participant_enter(*, study: Study, params: ProlificParams) -> Participant | None:
    """A returning PID's participant, now bound to this browser (None: a new arrival).

    Resuming needs the same SESSION_ID: it is the Prolific submission the work belongs to.
    A PID that has finished (or declined, or found the study full) only sees its code again.
    """
    participant = Participant.objects.filter(
        study=study, prolific_pid=params.pid, kind=ParticipantKind.HUMAN
    ).first()
    if participant is None:
        return None
    if participant.status == ParticipantStatus.ACTIVE:
        if participant.prolific_session_id != params.session_id:
            raise SurveyError(
                "This Prolific ID already started the study in another Prolific session. "
                "Please continue from the session you started, or contact the researchers."
            )
        participant.browser_key = Participant._meta.get_field("browser_key").default()
        participant.save(update_fields=["browser_key"])
    return participant


def _participant_create(
    *, study: Study, params: ProlificParams, **fields
) -> tuple[Participant, bool]:
    try:
        with transaction.atomic():
            return Participant.objects.create(
                study=study,
                prolific_pid=params.pid,
                prolific_study_id=params.study_id,
                prolific_session_id=params.session_id,
                **fields,
            ), True
    except IntegrityError:
        # A second tab or a double click got here first: carry on with its row.
        return Participant.objects.get(
            study=study, prolific_pid=params.pid, kind=ParticipantKind.HUMAN
        ), False


def participant_consent(
    *, study: Study, params: ProlificParams, consent_seconds: float | None
) -> Participant:
    """Consent given: the participant, with a bundle of scenarios (status FULL when none).

    A new arrival is made, with its bundle and the consent page's time, in one transaction
    of three statements (participant, choice, bundle) when nothing contends. A participant
    made here carries `arrived = True`: their next page is the instructions. A PID that
    already has a row (a second tab, a double click, a return) is found by its insert failing.
    """
    if study.status != StudyStatus.LIVE:
        existing = participant_enter(study=study, params=params)
        if existing is not None:
            return existing
        raise SurveyError("This study is not taking new participants at the moment.")
    now = timezone.now()
    shown = None
    if consent_seconds is not None:
        shown = now - dt.timedelta(seconds=max(0.0, min(consent_seconds, 86400)))
    try:
        with transaction.atomic():
            participant = Participant(
                study=study,
                prolific_pid=params.pid,
                prolific_study_id=params.study_id,
                prolific_session_id=params.session_id,
                consented_at=now,
            )
            participant.save(force_insert=True)
            reserved = assignment_reserve_fresh(
                participant=participant, now=now, consent_shown=shown
            )
    except IntegrityError:
        # The PID has a row already (committed by another tab, or from before): carry on
        # with it, as a returning participant.
        existing = participant_enter(study=study, params=params)
        if existing is None:
            raise
        return existing
    except Contended:
        participant, created = _participant_create(study=study, params=params, consented_at=now)
        if not created:
            return participant
        if shown is not None:
            PageTime.objects.create(
                participant=participant, page=Page.CONSENT, shown_at=shown, submitted_at=now
            )
        reserved = assignment_reserve_bundle(participant=participant)
    if not reserved:
        participant.status, participant.completion_code = ParticipantStatus.FULL, study.code_full
        participant.save(update_fields=["status", "completion_code"])
    participant.arrived = participant.status == ParticipantStatus.ACTIVE
    return participant


def participant_decline(*, study: Study, params: ProlificParams) -> Participant:
    existing = participant_enter(study=study, params=params)
    if existing is not None and existing.status != ParticipantStatus.ACTIVE:
        return existing
    if existing is not None:
        raise SurveyError("You have already consented and started; your answers are kept.")
    participant, _ = _participant_create(
        study=study,
        params=params,
        status=ParticipantStatus.NO_CONSENT,
        completion_code=study.code_no_consent,
    )
    return participant
