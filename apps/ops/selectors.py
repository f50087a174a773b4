from django.db import connection

from .models import Heartbeat


def database_ok() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return False, exc.__class__.__name__
    return True, "ok"


def broker_ok() -> tuple[bool, str]:
    from config.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            conn.default_channel.client.ping()
    except Exception as exc:
        return False, exc.__class__.__name__
    return True, "ok"


def last_heartbeat() -> Heartbeat | None:
    return Heartbeat.objects.order_by("-seen_at").first()
