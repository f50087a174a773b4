"""Reads of the question bank, one module per stage."""

from .bank import question_text_frozen_because  # noqa: F401
from .overview import pipeline_overview  # noqa: F401
