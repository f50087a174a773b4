class RunError(Exception):
    """A run or response operation that cannot be carried out; the message says why."""
