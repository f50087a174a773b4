from django.contrib import admin

from .models import Heartbeat


@admin.register(Heartbeat)
class HeartbeatAdmin(admin.ModelAdmin):
    list_display = ("worker", "seen_at", "token")
    readonly_fields = ("worker", "seen_at", "token")
