"""Reads of the question bank, one module per stage."""

from .bank import needs_labelled, question_text_frozen_because, rewrite_metrics_means  # noqa: F401
from .embedding_cosines import (  # noqa: F401
    embedding_cosine_failures,
    embedding_cosine_jobs,
    embedding_cosine_means,
    embedding_cosines_of,
    embedding_models,
)
from .imports import import_progress  # noqa: F401
from .overview import pipeline_overview  # noqa: F401
from .rewriting import (  # noqa: F401
    questions_rewritten,
    questions_to_rewrite,
    rewrite_diff,
    rewrite_jobs,
    rewrites_waiting,
)
from .screening import agreement, screening_dashboard, screening_next  # noqa: F401
