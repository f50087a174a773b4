import datetime as dt
import hashlib
import secrets

from axes.models import AccessAttempt
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from .errors import AccountError
from .models import ApiToken, User
from .roles import Role, user_has_role


@transaction.atomic
def user_set_roles(*, user: User, roles: list[Role] | tuple[Role, ...]) -> User:
    """Give `user` exactly `roles`. Researchers are also admin staff (the console)."""
    unknown = set(roles) - set(Role)
    if unknown:
        raise AccountError(f"Unknown role(s): {', '.join(sorted(unknown))}")
    # Roles are defined in code; their groups are storage and are made if a flush removed them.
    groups = [Group.objects.get_or_create(name=str(role))[0] for role in set(roles)]
    user.groups.set(groups)
    user.is_staff = Role.RESEARCHER in roles or user.is_superuser
    user.save(update_fields=["is_staff"])
    user._assay_roles = None
    return user


@transaction.atomic
def user_create(
    *, username: str, password: str, roles: list[Role] | tuple[Role, ...] = (), **fields
) -> User:
    if User.objects.filter(username=username).exists():
        raise AccountError(f"A user named {username!r} already exists.")
    user = User.objects.create_user(username=username, password=password, **fields)
    return user_set_roles(user=user, roles=roles)


def sign_in_unlock(*, attempts: QuerySet[AccessAttempt]) -> int:
    """Forget these failed sign-ins, so that the usernames and addresses they count against
    may sign in again at once (django-axes counts lockouts from these rows). Returns how
    many were forgotten; the failure log keeps its record of them."""
    _, deleted = attempts.delete()
    return deleted.get(AccessAttempt._meta.label, 0)


# --- API tokens ----------------------------------------------------------------------------

API_KEY_PREFIX = "assay_"
API_KEY_RANDOM_BYTES = 32
API_TOKEN_SHOWN_CHARS = 12  # the prefix and six random characters: enough to tell tokens apart
API_TOKEN_NAME_MAX = ApiToken._meta.get_field("name").max_length


def api_key_sha256(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new token for `user` and its key. The key is returned this once: only its SHA-256
    is stored, so nobody (the console included) can read it back."""
    if not user.is_active or not user_has_role(user, Role.RESEARCHER):
        raise AccountError("Only researchers may have API tokens.")
    name = name.strip()
    if not name:
        raise AccountError("Give the token a name: what it is for.")
    if len(name) > API_TOKEN_NAME_MAX:
        raise AccountError(f"A token's name has at most {API_TOKEN_NAME_MAX} characters.")
    key = API_KEY_PREFIX + secrets.token_urlsafe(API_KEY_RANDOM_BYTES)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=key[:API_TOKEN_SHOWN_CHARS], key_sha256=api_key_sha256(key)
    )
    return token, key


def api_token_revoke(*, token: ApiToken, user: User) -> ApiToken:
    """For good: the key is refused from now on. Only its owner revokes a token here (the
    console can deactivate a user, which stops all of theirs)."""
    if token.user_id != user.pk:
        raise AccountError("This token is not yours.")
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db(fields=["revoked_at"])
    return token


def api_token_touch(*, token: ApiToken, every: dt.timedelta) -> None:
    """Note that the token was used: at most once per `every`, so that a client paging
    through a long list does not write a row for every page."""
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < every:
        return
    ApiToken.objects.filter(pk=token.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - every)
    ).update(last_used_at=now)
    token.last_used_at = now
