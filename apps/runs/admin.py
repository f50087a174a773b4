from django.contrib import admin

from apps.console.sites import ReadOnlyAdmin

from .models import Response, SamplingRun


@admin.register(SamplingRun)
class SamplingRunAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "status", "samples_per_item", "created_at")
    list_filter = ("kind", "status")
    filter_horizontal = ("model_configs",)
    raw_id_fields = ("questions",)
    readonly_fields = ("created_at",)


@admin.register(Response)
class ResponseAdmin(ReadOnlyAdmin):
    list_display = (
        "question", "model", "run", "sample_index", "status", "output_tokens", "cost_usd",
        "latency_ms", "attempts",
    )  # fmt: skip
    list_filter = ("status", "run", "model")
    search_fields = ("question__external_id", "text", "error")
    list_select_related = ("question", "model", "run")
    show_full_result_count = False
