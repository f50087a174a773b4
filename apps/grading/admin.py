"""Grading and calibration in the researcher's console: read and export everything.

Every row here is written by the grading services and the engine (runs move through their
states, judgments pin rubric versions, scores are recomputed from judgments), so the
console shows them read-only; runs are made and controlled on the grading pages. The
console's CSV action exports any selection; `csv_fields` names the columns where ids alone
would say too little. A researcher still grading answers for calibration sees none of the
auto-rater's output for them here either (list, row, search, filters and export), nor the
other grader's labels of an answer until both grades of it are in.
"""

from django.contrib import admin

from apps.console.sites import ReadOnlyAdmin

from .models import (
    Calibration,
    CalibrationSample,
    CalibrationSet,
    ChecklistCall,
    ExpertGradeWithdrawal,
    ExpertJudgment,
    GradingRun,
    Judgment,
    ResponseScore,
)
from .selectors.calibration import expert_labels_shown, rater_rows_shown


@admin.register(GradingRun)
class GradingRunAdmin(ReadOnlyAdmin):
    list_display = (
        "name",
        "sampling_run",
        "grader",
        "mode",
        "prompt",
        "status",
        "budget_usd",
        "created_at",
    )
    list_filter = ("status", "mode", "grader", "batch_mode", "batch_retry")
    search_fields = ("name",)
    list_select_related = ("sampling_run", "grader", "prompt")


@admin.register(ChecklistCall)
class ChecklistCallAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "grading_run",
        "response",
        "rubric",
        "status",
        "error_kind",
        "cost_usd",
        "attempts",
        "reused_from",
    )
    list_filter = ("status", "error_kind", "grading_run")
    search_fields = ("response__question__external_id", "error")
    list_select_related = ("grading_run", "response__model", "response__question", "rubric")
    raw_id_fields = ("response", "rubric", "reused_from")
    show_full_result_count = False

    def get_queryset(self, request):
        return rater_rows_shown(super().get_queryset(request), viewer=request.user)


@admin.register(Judgment)
class JudgmentAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "grading_run",
        "response",
        "criterion",
        "status",
        "met",
        "error_kind",
        "reused_from",
    )
    list_filter = (
        "status",
        "met",
        "error_kind",
        "criterion__kind",
        "criterion__polarity",
        "grading_run",
    )
    search_fields = ("response__question__external_id", "explanation", "error")
    list_select_related = ("grading_run", "response__model", "response__question", "criterion")
    raw_id_fields = ("response", "criterion", "rubric", "checklist", "reused_from")
    show_full_result_count = False
    csv_fields = (
        "grading_run_id",
        "response_id",
        "response__question__external_id",
        "response__model__display_name",
        "response__sample_index",
        "rubric_id",
        "rubric__version",
        "criterion_id",
        "criterion__text",
        "criterion__polarity",
        "criterion__kind",
        "criterion__points",
        "status",
        "met",
        "explanation",
        "error_kind",
        "error",
        "reused_from_id",
    )

    def get_queryset(self, request):
        return rater_rows_shown(super().get_queryset(request), viewer=request.user)


@admin.register(ResponseScore)
class ResponseScoreAdmin(ReadOnlyAdmin):
    list_display = (
        "response",
        "grading_run",
        "score",
        "earned_points",
        "max_points",
        "computed_at",
    )
    list_filter = ("grading_run",)
    search_fields = ("response__question__external_id",)
    list_select_related = ("grading_run", "response__model", "response__question")
    raw_id_fields = ("response", "rubric")
    show_full_result_count = False
    csv_fields = (
        "grading_run_id",
        "response_id",
        "response__model__display_name",
        "response__question__external_id",
        "response__sample_index",
        "rubric_id",
        "rubric__version",
        "score",
        "earned_points",
        "max_points",
        "breakdown",
    )

    def get_queryset(self, request):
        return rater_rows_shown(super().get_queryset(request), viewer=request.user)


@admin.register(CalibrationSet)
class CalibrationSetAdmin(ReadOnlyAdmin):
    list_display = ("name", "sampling_run", "second_grader", "seed", "created_at")
    search_fields = ("name",)
    list_select_related = ("sampling_run", "second_grader")


@admin.register(CalibrationSample)
class CalibrationSampleAdmin(ReadOnlyAdmin):
    list_display = (
        "calibration_set",
        "question",
        "response",
        "author",
        "first_done_at",
        "second_done_at",
        "resolved_at",
    )
    list_filter = ("calibration_set",)
    search_fields = ("question__external_id",)
    list_select_related = ("calibration_set", "question", "response__model", "author")
    raw_id_fields = ("question", "response", "rubric")


@admin.register(ExpertJudgment)
class ExpertJudgmentAdmin(ReadOnlyAdmin):
    list_display = (
        "sample",
        "criterion",
        "first_met",
        "second_met",
        "final_met",
        "resolved_by",
        "updated_at",
    )
    list_filter = ("sample__calibration_set", "criterion__kind")
    search_fields = ("sample__question__external_id", "first_note", "second_note")
    list_select_related = (
        "sample__calibration_set",
        "sample__question",
        "criterion",
        "resolved_by",
    )
    raw_id_fields = ("sample", "criterion")
    csv_fields = (
        "sample__calibration_set_id",
        "sample_id",
        "sample__question__external_id",
        "sample__response_id",
        "criterion_id",
        "criterion__text",
        "criterion__kind",
        "criterion__polarity",
        "first_met",
        "first_by_id",
        "first_note",
        "second_met",
        "second_by_id",
        "second_note",
        "final_met",
        "resolved_by_id",
        "resolution_note",
    )

    def get_queryset(self, request):
        return expert_labels_shown(super().get_queryset(request), viewer=request.user)


@admin.register(ExpertGradeWithdrawal)
class ExpertGradeWithdrawalAdmin(ReadOnlyAdmin):
    """Completed grades their graders reopened (undo) before the other grade was in, as they
    stood; under the expert labels' rule of who sees what (expert_labels_shown)."""

    list_display = ("sample", "grader", "turn", "done_at", "withdrawn_at")
    list_filter = ("turn", "sample__calibration_set")
    search_fields = ("sample__question__external_id",)
    list_select_related = ("sample__calibration_set", "sample__question", "grader")
    raw_id_fields = ("sample",)
    csv_fields = (
        "id",
        "sample__calibration_set_id",
        "sample_id",
        "sample__question__external_id",
        "grader__username",
        "turn",
        "labels",
        "notes",
        "done_at",
        "withdrawn_at",
    )

    def get_queryset(self, request):
        return expert_labels_shown(super().get_queryset(request), viewer=request.user)


@admin.register(Calibration)
class CalibrationAdmin(ReadOnlyAdmin):
    list_display = ("calibration_set", "grading_run", "grader", "prompt", "created_at")
    list_select_related = ("calibration_set", "grading_run", "grader", "prompt")
