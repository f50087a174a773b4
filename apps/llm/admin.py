from django.contrib import admin, messages

from apps.console.sites import ReadOnlyAdmin

from .models import LLMCall, ModelConfig, PromptTemplate
from .services import PromptError, prompt_template_save


@admin.register(ModelConfig)
class ModelConfigAdmin(admin.ModelAdmin):
    list_display = (
        "display_name", "family", "litellm_model", "max_concurrent", "requests_per_minute",
        "tokens_per_minute", "offline", "active",
    )  # fmt: skip
    list_filter = ("active", "family")
    search_fields = ("display_name", "litellm_model", "family")
    fieldsets = (
        (None, {"fields": ("display_name", "family", "version", "litellm_model", "active")}),
        ("Connection", {"fields": ("api_base", "api_key_env", "timeout_seconds", "params")}),
        (
            "Shared limits (all workers together)",
            {"fields": ("max_concurrent", "requests_per_minute", "tokens_per_minute")},
        ),
        ("Prices", {"fields": ("input_price_per_mtok", "output_price_per_mtok")}),
    )

    @admin.display(boolean=True, description="offline demo model")
    def offline(self, obj):
        return obj.is_offline


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ("purpose", "version", "used_at", "created_at")
    list_filter = ("purpose",)
    readonly_fields = ("used_at", "created_at", "variables")
    fields = ("purpose", "version", "system_text", "user_text", "notes", "variables", "used_at")

    def get_readonly_fields(self, request, obj=None):
        # The version number is the service's to give.
        return (*self.readonly_fields, "version") + (("purpose",) if obj else ())

    def save_model(self, request, obj, form, change):
        try:
            saved = prompt_template_save(
                purpose=obj.purpose, system_text=obj.system_text, user_text=obj.user_text,
                notes=obj.notes, template=obj if change else None,
            )  # fmt: skip
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
    list_display = (
        "created_at", "model", "purpose", "attempt", "status", "input_tokens", "output_tokens",
        "cost_usd", "latency_ms", "caller",
    )  # fmt: skip
    list_filter = ("status", "purpose", "model", "created_at")
    search_fields = ("caller", "error_message")
    list_select_related = ("model",)
    date_hierarchy = "created_at"
    show_full_result_count = False
