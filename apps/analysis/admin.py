"""The reports' stored results in the researcher's console: read and export them."""

from django.contrib import admin

from apps.console.sites import ReadOnlyAdmin

from .models import SurveyBootstrap


@admin.register(SurveyBootstrap)
class SurveyBootstrapAdmin(ReadOnlyAdmin):
    """Confidence intervals asked for on a study's survey report or answer-study report
    (`report`), kept while its data stays the same (the fingerprint); asked for and followed
    on the report's page."""

    list_display = (
        "study",
        "report",
        "status",
        "done",
        "total",
        "resamples",
        "seed",
        "requested_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("report", "status", "study")
    list_select_related = ("study", "requested_by")
    csv_fields = (
        "id",
        "study_id",
        "study__name",
        "report",
        "fingerprint",
        "resamples",
        "seed",
        "status",
        "done",
        "total",
        "intervals",
        "error",
        "requested_by__username",
        "created_at",
        "started_at",
        "finished_at",
    )
