from django.db import models


class Heartbeat(models.Model):
    """A worker proved it is alive: it took a task from the broker and wrote this row.

    Beat sends one a minute; `/healthz` reports the age of the newest, and tests send one
    with a token to check the broker-to-worker-to-database path end to end.
    """

    token = models.CharField(max_length=64, unique=True)
    worker = models.CharField(max_length=255)
    seen_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-seen_at"]

    def __str__(self):
        return f"{self.worker} at {self.seen_at:%Y-%m-%d %H:%M:%S}"
