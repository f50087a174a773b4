from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.db.models.base import ModelBase

from apps.accounts.roles import Role, user_has_role

from .csv_export import csv_columns, export_as_csv


class ResearcherAdminSite(admin.AdminSite):
    """Only researchers (and superusers) enter; every registered model can be exported as CSV."""

    site_header = "Assay — researcher's console"
    site_title = "Assay console"
    index_title = "Data and configuration"

    def __init__(self, name="admin"):
        super().__init__(name)
        self.add_action(export_as_csv, "export_as_csv")

    def has_permission(self, request):
        user = request.user
        return user.is_active and (user.is_superuser or user_has_role(user, Role.RESEARCHER))

    def register(self, model_or_iterable, admin_class=None, **options):
        """As Django's, and refuses at once (at import) an admin whose CSV export would
        name a participant's Prolific ids (csv_export.IDENTIFYING_FIELDS)."""
        super().register(model_or_iterable, admin_class, **options)
        models = (
            [model_or_iterable] if isinstance(model_or_iterable, ModelBase) else model_or_iterable
        )
        for model in models:
            if model not in self._registry:
                continue  # swapped out (auth.User): Django registers nothing
            try:
                csv_columns(self._registry[model])
            except ImproperlyConfigured:
                self.unregister(model)
                raise


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records the product writes and nobody edits (ledgers, judgments, page times):
    researchers list, filter and export them. `deletable = True` lets them still delete
    rows (a participant, an unused scenario), within Django's own delete permission."""

    deletable = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self.deletable and super().has_delete_permission(request, obj)


class ReadOnlyInline(admin.TabularInline):
    """Rows shown inside their parent's page and never edited there (an approved rubric's
    criteria, a published set's): every field listed in `fields` is read-only."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields

    def has_add_permission(self, request, obj=None):
        return False
