class AnswerStudyError(Exception):
    """An answer study cannot be made or changed as asked; the message says why."""
