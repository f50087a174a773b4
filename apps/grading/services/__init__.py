"""Grading runs on the bulk engine (`runs`, `work`) and expert calibration
(`calibration`)."""

from .runs import (
    approved_rubrics,
    breakdown_json,
    criteria_of,
    grading_errors_retry,
    grading_rows_make,
    grading_run_budget_set,
    grading_run_cancel,
    grading_run_create,
    grading_run_launch,
    grading_run_pause,
    grading_run_resume,
    scores_compute,
)
from .work import (
    CHECKLIST_SCHEMA,
    CHECKLIST_WORK,
    CRITERION_WORK,
    checklist_check,
    work_for_run,
)

__all__ = [
    "CHECKLIST_SCHEMA", "CHECKLIST_WORK", "CRITERION_WORK", "approved_rubrics", "breakdown_json",
    "checklist_check",
    "criteria_of", "grading_errors_retry", "grading_rows_make", "grading_run_budget_set",
    "grading_run_cancel", "grading_run_create", "grading_run_launch", "grading_run_pause",
    "grading_run_resume", "scores_compute", "work_for_run",
]  # fmt: skip
