class GradingError(Exception):
    """A grading request that cannot be carried out; the message says why, for the user."""
