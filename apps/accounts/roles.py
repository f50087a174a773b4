"""Roles and the one way to guard a view with them.

Every URL of the project must be guarded: a view either carries `role_required(...)`
or is marked `public(...)` on purpose. `tests/accounts/test_permission_inventory.py`
walks every URL pattern and fails on a view that is neither, so nothing ships unguarded.
"""

from collections.abc import Callable
from enum import StrEnum
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission


class Role(StrEnum):
    EXPERT = "expert"
    REVIEWER = "reviewer"
    RESEARCHER = "researcher"


ALL_ROLES = tuple(Role)


def user_roles(user) -> frozenset[str]:
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    cached = getattr(user, "_assay_roles", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True)) & set(ALL_ROLES)
        user._assay_roles = cached
    return cached


def user_roles_known(user, names) -> None:
    """Take the user's group names as read already (the API reads them with the token, in
    the same query), so that `user_roles` need not ask again for this request."""
    user._assay_roles = frozenset(names) & set(ALL_ROLES)


def user_has_role(user, *roles: Role) -> bool:
    return bool(user_roles(user) & set(roles))


def role_required(*roles: Role) -> Callable:
    """Anonymous visitors go to the login page; signed-in users without one of `roles` get 403."""
    if not roles:
        raise ValueError("role_required needs at least one role")

    def decorator(view):
        @wraps(view)
        def guarded(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not user_has_role(request.user, *roles):
                raise PermissionDenied("Your account does not have the role this page needs.")
            return view(request, *args, **kwargs)

        guarded.required_roles = frozenset(roles)
        return guarded

    return decorator


def public(view):
    """Mark a view as reachable without signing in, on purpose (the inventory test reads this)."""
    view.public_on_purpose = True
    return view


class IsResearcher(BasePermission):
    """API default: only researchers read the API."""

    message = "Only researchers may use the API."
    # Read by the URL inventory (tests/accounts/test_permission_inventory.py), as it reads
    # `role_required`'s.
    required_roles = frozenset({Role.RESEARCHER})

    def has_permission(self, request, view):
        return user_has_role(request.user, Role.RESEARCHER)
