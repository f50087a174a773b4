from axes.models import AccessAttempt
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import QuerySet

from .errors import AccountError
from .models import User
from .roles import Role


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
