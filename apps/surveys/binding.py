"""Which participant a browser is: a signed cookie per study naming the participant's row and
its current `browser_key`. Opening the Prolific link again rotates the key, so the survey
follows the browser that opened the link last.

The cookie is named after the study's id and signed with its name, so it cannot be moved to
another study; a participant is bound only if their study is the cookie's, reached by the
address requested, and their key is the cookie's.
"""

from functools import wraps

from django.conf import settings
from django.shortcuts import get_object_or_404, render
from django.utils.crypto import constant_time_compare

from . import selectors
from .models import Participant, Study

COOKIE_SALT = "assay.surveys.participant"
COOKIE_PREFIX = "assay_survey_"
MAX_COOKIES = 20  # a browser holding more participant cookies than this is not a participant


def cookie_name(study: Study) -> str:
    return f"{COOKIE_PREFIX}{study.pk}"


def bind(response, participant: Participant):
    """`response`, setting the cookie that binds this browser to `participant`."""
    response.set_signed_cookie(
        cookie_name(participant.study),
        f"{participant.pk}:{participant.browser_key}",
        salt=COOKIE_SALT,
        httponly=True,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )
    return response


def held(request) -> dict[int, tuple[int, str]]:
    """participant id -> (study id, browser key), from this browser's signed participant
    cookies, as the cookies claim them (nothing is read from the database)."""
    found: dict[int, tuple[int, str]] = {}
    for name in request.COOKIES:
        study_id = name.removeprefix(COOKIE_PREFIX)
        if study_id == name or not study_id.isdigit():
            continue
        raw = request.get_signed_cookie(name, default="", salt=COOKIE_SALT)
        pk, _, key = raw.partition(":")
        if pk.isdigit() and key:
            found[int(pk)] = (int(study_id), key)
        if len(found) >= MAX_COOKIES:
            break
    return found


def bound_participant(request, slug: str) -> Participant | None:
    """The participant (with their study) this browser holds for the study at `slug`: it
    must belong to the cookie's study, be reached by that slug and carry the cookie's browser
    key. One query for the participant and the study together."""
    claims = held(request)
    for participant in selectors.participants_with_study(ids=list(claims), slug=slug):
        study_id, key = claims[participant.pk]
        if participant.study_id == study_id and constant_time_compare(participant.browser_key, key):
            return participant
    return None


def participant_required(view):
    """Load the participant this browser holds (and their study), or say how to get back in."""

    @wraps(view)
    def wrapped(request, slug, *args, **kwargs):
        participant = bound_participant(request, slug)
        if participant is None:
            context = {"study": get_object_or_404(Study, slug=slug)}
            return render(request, "surveys/participant/session_needed.html", context, status=403)
        return view(request, participant, *args, **kwargs)

    return wrapped
