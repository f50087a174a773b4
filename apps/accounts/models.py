from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    """A person who signs in: a PSS expert, a reviewer or a researcher.

    Crowd participants never get a User; they are `surveys.Participant` rows keyed by
    their Prolific id. Roles are Groups (see `apps.accounts.roles`).
    """

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"
        ordering = ["username"]


class ApiToken(models.Model):
    """A researcher's key to the API (`Authorization: Bearer <key>`). Only the key's SHA-256
    is stored: the key itself is shown once, when the token is made, and cannot be read back
    from the database. `prefix` is its first characters, for telling one's tokens apart."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for.")
    prefix = models.CharField(max_length=12)
    key_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "API token"

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"
