class SurveyError(Exception):
    """Something a researcher or participant asked for cannot be done; the message says why."""
