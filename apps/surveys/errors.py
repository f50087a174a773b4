class SurveyError(Exception):
    """Something a researcher or participant asked for cannot be done; the message says why."""


class RecordError(SurveyError):
    """A PrivacyLens record cannot be imported; the message names the record and the field."""


class ProlificError(SurveyError):
    """Prolific refused a request or could not be reached; the message says which. The
    services that call Prolific say what was being asked of it (review, sync)."""


class AnswerInvalid(SurveyError):
    """An answer that cannot be taken as sent (not one of the choices, too long, a NUL
    character): nothing is saved, and the view answers 400 with the message."""
