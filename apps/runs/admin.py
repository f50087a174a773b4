from django.contrib import admin
from django.db.models import BooleanField, ExpressionWrapper
from django.urls import reverse
from django.utils.html import format_html

from apps.console.sites import ReadOnlyAdmin

from .models import Response, RunKind, SamplingRun
from .selectors import OFFLINE_MODEL, RESPONSE_EXPORT_FIELDS


@admin.register(SamplingRun)
class SamplingRunAdmin(admin.ModelAdmin):
    """Benchmark runs are made, launched and stopped on their own pages (/runs/), through the
    services that keep their responses whole; here they are listed and renamed. The
    reference run's models are chosen here (the rubric editor shows their answers)."""

    list_display = (
        "name",
        "kind",
        "status",
        "samples_per_item",
        "budget_usd",
        "created_at",
        "run_page",
    )
    list_filter = ("kind", "status", "batch_mode", "batch_retry")
    search_fields = ("name",)
    filter_horizontal = ("model_configs",)
    raw_id_fields = ("questions",)
    readonly_fields = ("created_at", "run_page")
    csv_fields = (
        "id",
        "name",
        "kind",
        "status",
        "prompt__purpose",
        "prompt__version",
        "samples_per_item",
        "params",
        "seed",
        "budget_usd",
        "batch_mode",
        "batch_retry",
        "selection",
        "created_by__username",
        "created_at",
        "launched_at",
        "finished_at",
    )

    def has_add_permission(self, request):
        return False  # a run is made whole, with its responses, on /runs/new/

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.kind == RunKind.BENCHMARK:
            return [f.name for f in SamplingRun._meta.fields if f.name != "name"] + [
                "model_configs",
                "questions",
                "run_page",
            ]
        return self.readonly_fields

    @admin.display(description="page")
    def run_page(self, obj):
        if obj is None or obj.pk is None or obj.kind != RunKind.BENCHMARK:
            return "—"
        return format_html('<a href="{}">Open the run</a>', reverse("runs:detail", args=[obj.pk]))


@admin.register(Response)
class ResponseAdmin(ReadOnlyAdmin):
    list_display = (
        "question",
        "model",
        "run",
        "sample_index",
        "status",
        "error_kind",
        "output_tokens",
        "cost_usd",
        "latency_ms",
        "attempts",
    )
    list_filter = ("status", "error_kind", "run", "model")
    search_fields = ("question__external_id", "text", "error")
    list_select_related = ("question", "model", "run")
    show_full_result_count = False
    # The columns of the run page's export (runs:export_responses), for any selection.
    csv_fields = ("id", *RESPONSE_EXPORT_FIELDS)

    def get_queryset(self, request):
        offline = ExpressionWrapper(OFFLINE_MODEL, output_field=BooleanField())
        return super().get_queryset(request).annotate(offline=offline)
