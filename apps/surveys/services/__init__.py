"""Every write of the surveys app. Split by concern; import from here."""

from ..models import MAX_EXPLANATION
from .answers import (
    answer_save,
    answer_save_if_bound,
    assignment_submit,
    page_time_shown,
    page_time_submitted,
    participant_finish,
    participant_instructions_read,
)
from .arrival import (
    ProlificParams,
    participant_consent,
    participant_decline,
    participant_enter,
    prolific_params_parse,
)
from .prolific_sync import study_sync_returned
from .proxies import (
    PROXY_RUN_CONTROLS,
    PROXY_WORK,
    proxy_calls_retry,
    proxy_estimate,
    proxy_items,
    proxy_run_budget_set,
    proxy_run_cancel,
    proxy_run_create,
    proxy_run_launch,
    proxy_run_pause,
    proxy_run_resume,
    proxy_sweep_create,
)
from .reservation import assignment_expire_overdue, assignment_reserve_bundle
from .review import (
    MIN_REJECTION_MESSAGE,
    participant_mark_returned,
    participant_reject,
    participants_approve,
)
from .scenarios import (
    SCENARIO_RESPONSE_WORK,
    ImportSummary,
    response_import_csv,
    scenario_import_json,
    scenario_response_record,
    scenario_responses_request,
    study_scenario_record_error,
    survey_file_import,
)
from .studies import study_create, study_set_status, study_update, survey_item_save

__all__ = [
    "MAX_EXPLANATION",
    "MIN_REJECTION_MESSAGE",
    "PROXY_RUN_CONTROLS",
    "PROXY_WORK",
    "SCENARIO_RESPONSE_WORK",
    "ImportSummary",
    "ProlificParams",
    "answer_save",
    "answer_save_if_bound",
    "assignment_expire_overdue",
    "assignment_reserve_bundle",
    "assignment_submit",
    "page_time_shown",
    "page_time_submitted",
    "participant_consent",
    "participant_decline",
    "participant_enter",
    "participant_finish",
    "participant_instructions_read",
    "participant_mark_returned",
    "participant_reject",
    "participants_approve",
    "prolific_params_parse",
    "proxy_calls_retry",
    "proxy_estimate",
    "proxy_items",
    "proxy_run_budget_set",
    "proxy_run_cancel",
    "proxy_run_create",
    "proxy_run_launch",
    "proxy_run_pause",
    "proxy_run_resume",
    "proxy_sweep_create",
    "response_import_csv",
    "scenario_import_json",
    "scenario_response_record",
    "scenario_responses_request",
    "study_create",
    "study_scenario_record_error",
    "study_set_status",
    "study_sync_returned",
    "study_update",
    "survey_file_import",
    "survey_item_save",
]
