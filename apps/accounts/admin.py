from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from .models import User


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ("username", "email", "first_name", "last_name", "role_names", "is_active")
    list_filter = ("groups", "is_active", "is_staff")
    csv_fields = ("id", "username", "email", "first_name", "last_name", "is_active", "date_joined")

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")

    @staticmethod
    def role_names(user):
        return ", ".join(sorted(g.name for g in user.groups.all())) or "—"
