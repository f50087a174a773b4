"""Writes to the question bank, one module per stage: the pool's imports, sampling,
screening, strata labels, rewriting (and the cosine of embeddings), and the bank itself."""

from .bank import (  # noqa: F401
    QuestionImportReport,
    normalise_newlines,
    question_create,
    question_update,
    questions_ensure,
    questions_import,
)
from .embedding_cosines import embedding_cosine_job_run, embedding_cosine_job_start  # noqa: F401
from .imports import import_batch_create, import_batch_run, posts_import  # noqa: F401
from .rewriting import (  # noqa: F401
    REWRITE_JOB_CONTROLS,
    REWRITE_WORK,
    rewrite_approve,
    rewrite_job_cancel,
    rewrite_job_pause,
    rewrite_job_resume,
    rewrite_job_retry,
    rewrite_job_start,
    rewrite_metrics_refresh,
    rewrite_reject,
)
from .sampling import DrawReport, sample_draw, samples_draw  # noqa: F401
from .screening import question_from_post, screening_decide, screening_undo  # noqa: F401
