"""Filters that settings.LOGGING names."""

import logging

REFUSAL_LOGGERS = ("django.request", "django.security")


class RefusalWithoutTraceback(logging.Filter):
    """A refusal (400 for a bad or suspicious request, 403, 404) is a line, not a traceback.

    Django hands the exception to the log record of every refused request
    (`django.utils.log.log_response(..., exception=exc)`), so each PermissionDenied printed a
    full traceback: noise that buries real faults, for what is the client's mistake or probe.
    A 5xx keeps its traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500 and record.name.startswith(REFUSAL_LOGGERS):
            record.exc_info = None
            record.exc_text = None
        return True
