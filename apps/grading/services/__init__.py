"""Grading runs on the bulk engine (`runs`, their rows and scores in `rows`, the engine's
view of their calls in `work`) and expert calibration (`calibration`)."""

from .rows import approved_rubrics, breakdown_json, criteria_of, grading_rows_make, scores_compute
from .runs import (
    GRADING_RUN_CONTROLS,
    grading_errors_retry,
    grading_run_budget_set,
    grading_run_cancel,
    grading_run_create,
    grading_run_launch,
    grading_run_pause,
    grading_run_resume,
)
from .work import (
    CHECKLIST_SCHEMA,
    CHECKLIST_WORK,
    CRITERION_WORK,
    checklist_check,
    work_for_run,
)

__all__ = [
    "CHECKLIST_SCHEMA",
    "CHECKLIST_WORK",
    "CRITERION_WORK",
    "GRADING_RUN_CONTROLS",
    "approved_rubrics",
    "breakdown_json",
    "checklist_check",
    "criteria_of",
    "grading_errors_retry",
    "grading_rows_make",
    "grading_run_budget_set",
    "grading_run_cancel",
    "grading_run_create",
    "grading_run_launch",
    "grading_run_pause",
    "grading_run_resume",
    "scores_compute",
    "work_for_run",
]
