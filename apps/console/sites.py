from django.contrib import admin

from apps.accounts.roles import Role, user_has_role

from .csv_export import export_as_csv


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
