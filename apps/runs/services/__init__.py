"""Sampling runs and their responses: the rubric editor's reference answers
(`reference`) and benchmark runs on the bulk engine (`sampling`)."""

from .reference import (
    GAVE_UP,
    INTERACTIVE_POLICY,
    REFERENCE_RUN_NAME,
    REFERENCE_WORK,
    reference_models_set,
    reference_run_get,
    sample_answers_draw,
)
from .sampling import (
    SAMPLE_WORK,
    SAMPLING_RUN_CONTROLS,
    Estimate,
    call_seed,
    params_check,
    responses_retry,
    sampling_estimate,
    sampling_run_budget_set,
    sampling_run_cancel,
    sampling_run_create,
    sampling_run_launch,
    sampling_run_pause,
    sampling_run_resume,
)

__all__ = [
    "GAVE_UP",
    "INTERACTIVE_POLICY",
    "REFERENCE_RUN_NAME",
    "REFERENCE_WORK",
    "SAMPLE_WORK",
    "SAMPLING_RUN_CONTROLS",
    "Estimate",
    "call_seed",
    "params_check",
    "reference_models_set",
    "reference_run_get",
    "responses_retry",
    "sample_answers_draw",
    "sampling_estimate",
    "sampling_run_budget_set",
    "sampling_run_cancel",
    "sampling_run_create",
    "sampling_run_launch",
    "sampling_run_pause",
    "sampling_run_resume",
]
