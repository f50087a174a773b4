from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from apps.console.sites import ReadOnlyAdmin

from .forms import ModelConfigForm
from .models import Embedding, LimitChange, LLMCall, ModelConfig, PromptTemplate, ProviderBatch
from .services import PromptError, prompt_template_save


@admin.register(ModelConfig)
class ModelConfigAdmin(admin.ModelAdmin):
    form = ModelConfigForm
    list_display = (
        "display_name",
        "family",
        "released_on",
        "litellm_model",
        "kind",
        "max_concurrent",
        "requests_per_minute",
        "tokens_per_minute",
        "offline",
        "batch_api",
        "active",
    )
    list_filter = ("active", "kind", "batch_api", "family")
    search_fields = ("display_name", "litellm_model", "family")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "display_name",
                    "family",
                    "version",
                    "released_on",
                    "litellm_model",
                    "kind",
                    "active",
                )
            },
        ),
        ("Connection", {"fields": ("api_base", "api_key_env", "timeout_seconds", "params")}),
        (
            "Shared limits (all workers together)",
            {
                "fields": (
                    "max_concurrent",
                    "adapts_concurrency",
                    "min_concurrent",
                    "requests_per_minute",
                    "tokens_per_minute",
                )
            },
        ),
        ("Prices", {"fields": ("input_price_per_mtok", "output_price_per_mtok")}),
        (
            "Batch API",
            {
                "fields": ("batch_api", "batch_discount", "batch_max_requests", "batch_max_bytes"),
                "description": "A run in batch mode sends its calls through the provider's "
                "batch API: answered within 24 hours, at the batch price.",
            },
        ),
    )

    @admin.display(boolean=True, description="offline demo model")
    def offline(self, obj):
        return obj.is_offline


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ("purpose", "version", "used_at", "created_at")
    list_filter = ("purpose",)
    readonly_fields = ("used_at", "created_at", "variables", "available")
    fields = (
        "purpose",
        "version",
        "system_text",
        "user_text",
        "notes",
        "variables",
        "available",
        "used_at",
    )

    @admin.display(description="variables it can use")
    def available(self, obj):
        known = obj.available_variables if obj and obj.purpose else {}
        if not known:
            return "Save the purpose first: each purpose's prompts are given their own variables."
        return format_html_join(
            "", "<p><code>${}</code>: {}</p>", ((name, text) for name, text in known.items())
        )

    def get_readonly_fields(self, request, obj=None):
        # The version number is the service's to give.
        return (*self.readonly_fields, "version") + (("purpose",) if obj else ())

    def save_model(self, request, obj, form, change):
        try:
            saved = prompt_template_save(
                purpose=obj.purpose,
                system_text=obj.system_text,
                user_text=obj.user_text,
                notes=obj.notes,
                template=obj if change else None,
            )
        except PromptError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        if change and saved.pk != obj.pk:
            self.message_user(
                request,
                f"Version {obj.version} has been used, so it was kept as it was and your edit "
                f"was saved as version {saved.version}.",
                messages.WARNING,
            )
        obj.pk, obj.version = saved.pk, saved.version

    def has_delete_permission(self, request, obj=None):
        return obj is None or obj.used_at is None


@admin.register(LLMCall)
class LLMCallAdmin(ReadOnlyAdmin):
    # Narrow enough for a 1280 px screen beside the console's sidebar and filters: one
    # column each for status and attempt, tokens in and out, and long values cut short
    # (whole in the row's own page, in search and in the CSV export).
    list_display = ("when", "model_short", "purpose", "outcome", "tokens", "cost_usd", "latency")
    list_display_links = ("when",)
    list_filter = (
        "status",
        "purpose",
        "model",
        ("batch", admin.EmptyFieldListFilter),
        "created_at",
    )
    search_fields = ("caller", "error_message")
    list_select_related = ("model",)
    date_hierarchy = "created_at"
    show_full_result_count = False

    @admin.display(description="when", ordering="created_at")
    def when(self, obj):
        return timezone.localtime(obj.created_at).strftime("%-d %b %H:%M:%S")

    @admin.display(description="model", ordering="model__display_name")
    def model_short(self, obj):
        return _cut(str(obj.model), 28)

    @admin.display(description="status", ordering="status")
    def outcome(self, obj):
        # A line of a provider batch says so here (priced at the batch price), not in a
        # column of its own: the list must fit a 1280-px screen.
        sent = f", batch {obj.batch_id}" if obj.batch_id else ""
        return f"{obj.get_status_display()}, try {obj.attempt}{sent}"

    @admin.display(description="tokens in / out")
    def tokens(self, obj):
        return f"{obj.input_tokens} / {obj.output_tokens}"

    @admin.display(description="latency", ordering="latency_ms")
    def latency(self, obj):
        return f"{obj.latency_ms / 1000:.1f} s"


@admin.register(LimitChange)
class LimitChangeAdmin(ReadOnlyAdmin):
    """Each change of an adaptive model's concurrency limit (apps/llm/limits.py), as the run
    pages draw it."""

    list_display = ("at", "model", "old", "new", "why", "in_flight", "hold_seconds")
    list_filter = ("why", "model")
    list_select_related = ("model",)
    date_hierarchy = "at"
    show_full_result_count = False


@admin.register(ProviderBatch)
class ProviderBatchAdmin(ReadOnlyAdmin):
    """Each batch job sent to a provider for a run in batch mode (apps/llm/batches.py), as
    the run pages list them: the provider's counts, and what Assay recorded and asked again."""

    list_display = (
        "pk",
        "created_at",
        "work",
        "scope",
        "model",
        "status",
        "provider_batch_id",
        "requests",
        "completed",
        "failed",
        "recorded",
        "retried",
        "submitted_at",
        "ended_at",
        "recorded_at",
    )
    list_filter = ("status", "model", "work")
    search_fields = ("provider_batch_id", "error")
    list_select_related = ("model",)
    date_hierarchy = "created_at"
    show_full_result_count = False


@admin.register(Embedding)
class EmbeddingAdmin(ReadOnlyAdmin):
    """Vectors kept so that a text is embedded once per model (apps/llm/embeddings.py)."""

    list_display = ("text_sha256", "model", "litellm_model", "dimensions", "created_at")
    list_filter = ("model",)
    search_fields = ("text_sha256",)
    list_select_related = ("model",)
    date_hierarchy = "created_at"


def _cut(text: str, length: int):
    """`text` cut to `length` characters, whole in its tooltip."""
    if len(text) <= length:
        return text
    return format_html('<span title="{}">{}…</span>', text, text[: length - 1].rstrip())
