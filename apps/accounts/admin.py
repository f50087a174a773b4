from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from .models import ApiToken, User
from .services import sign_in_unlock

UNLOCK_PERMISSION = "axes.delete_accessattempt"


def _report_unlocked(modeladmin, request, count: int) -> None:
    modeladmin.message_user(
        request, f"Unlocked: {count} failed sign-in record{'s' if count != 1 else ''} forgotten."
    )


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ("username", "email", "first_name", "last_name", "role_names", "is_active")
    list_filter = ("groups", "is_active", "is_staff")
    csv_fields = ("id", "username", "email", "first_name", "last_name", "is_active", "date_joined")
    actions = ["unlock_sign_in"]

    @admin.action(description="Unlock sign-in for the selected users", permissions=["unlock"])
    def unlock_sign_in(self, request, queryset):
        usernames = queryset.values_list("username", flat=True)
        count = sign_in_unlock(attempts=AccessAttempt.objects.filter(username__in=usernames))
        _report_unlocked(self, request, count)

    def has_unlock_permission(self, request):
        return request.user.has_perm(UNLOCK_PERMISSION)

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")

    @staticmethod
    def role_names(user):
        return ", ".join(sorted(g.name for g in user.groups.all())) or "—"


@admin.register(AccessAttempt)
class SignInAttemptAdmin(AccessAttemptAdmin):
    """Failed sign-ins counted per username and address; a locked-out pair is unlocked here
    (or from the user's row) by forgetting its attempts."""

    actions = ["unlock", "cleanup_expired_attempts"]

    @admin.action(description="Unlock: forget the selected failed sign-ins", permissions=["unlock"])
    def unlock(self, request, queryset):
        _report_unlocked(self, request, sign_in_unlock(attempts=queryset))

    def has_unlock_permission(self, request):
        return request.user.has_perm(UNLOCK_PERMISSION)

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(AccessLog)
class SignInLogAdmin(AccessLogAdmin):
    """Every successful sign-in: a record the product writes and nobody edits."""

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AccessFailureLog)
class SignInFailureLogAdmin(AccessFailureLogAdmin):
    """Every failed sign-in, kept after an unlock forgets the attempts that counted it."""

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Researchers' API tokens, read only: the key itself is never stored, and its hash is not
    shown. A token is revoked by its owner on /accounts/tokens/, or stopped with its user
    (inactive, or no longer a researcher)."""

    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "user__username", "prefix")
    fields = ("user", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    csv_fields = ("id", "user_id", "name", "prefix", "created_at", "last_used_at", "revoked_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
