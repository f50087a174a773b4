from django.contrib.auth.models import AbstractUser


class User(AbstractUser):
    """A person who signs in: a PSS expert, a reviewer or a researcher.

    Crowd participants never get a User; they are `surveys.Participant` rows keyed by
    their Prolific id. Roles are Groups (see `apps.accounts.roles`).
    """

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"
        ordering = ["username"]
