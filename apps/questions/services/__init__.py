"""Writes to the question bank, one module per stage: the pool's imports, sampling,
screening, strata labels, rewriting, and the bank itself."""

from .bank import (  # noqa: F401
    QuestionImportReport,
    normalise_newlines,
    question_create,
    question_update,
    questions_ensure,
    questions_import,
)
