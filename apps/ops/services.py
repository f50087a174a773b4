import datetime as dt

from django.utils import timezone

from .models import Heartbeat

KEEP_HEARTBEATS = dt.timedelta(days=1)


def heartbeat_record(*, token: str, worker: str) -> Heartbeat:
    """Record that `worker` ran a heartbeat task; a redelivered task records nothing new."""
    beat, _ = Heartbeat.objects.get_or_create(token=token, defaults={"worker": worker})
    Heartbeat.objects.filter(seen_at__lt=timezone.now() - KEEP_HEARTBEATS).delete()
    return beat
