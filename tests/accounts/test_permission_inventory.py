"""Every URL is guarded: by a role, by the researcher's console, or public on purpose.

A view added without `role_required(...)` or `public(...)` fails here; so does an API (DRF)
view whose permission classes name no role (`IsResearcher` carries `required_roles`) or
include `AllowAny`. Then, for every URL that takes no arguments, every role is tried against
what the view declares; an anonymous visitor is sent to sign in, or gets the API's 401.
"""

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from apps.accounts.roles import Role
from apps.console.sites import ResearcherAdminSite
from tests.conftest import ROLES

# Public on purpose, and why. The inventory fails if a public view is not listed here.
PUBLIC = {
    "login": "signing in",
    "logout": "signing out (POST)",
    "healthz": "load balancer probe; reveals only ok/error",
    "favicon": "the site's icon, which browsers ask for before signing in",
    "api-not-found": "the API's 404 for a URL no route matches: one answer for everyone",
    # Survey participants arrive from Prolific without an account; every page past the link
    # needs the signed cookie the link sets, and only shows that participant's own data.
    "surveys:entry": "Prolific link: validates the ids, then consent or resume",
    "surveys:consent": "participant consents or declines (POST)",
    "surveys:instructions": "participant's own instructions page",
    "surveys:scenario": "participant's own assignment (others' are 404)",
    "surveys:answer": "autosave of the participant's own answer (POST)",
    "surveys:demographics": "participant's own demographics page",
    "surveys:done": "participant's own completion code",
}


def walk(patterns, prefix="", namespace=None):
    """(route, qualified name, pattern) for every URL; the admin site as one entry."""
    for p in patterns:
        if isinstance(p, URLResolver):
            if p.namespace == "admin":
                yield prefix + str(p.pattern), "admin", None
                continue
            ns = f"{namespace}:{p.namespace}" if namespace and p.namespace else p.namespace
            yield from walk(p.url_patterns, prefix + str(p.pattern), ns or namespace)
        elif isinstance(p, URLPattern):
            name = f"{namespace}:{p.name}" if namespace and p.name else p.name
            yield prefix + str(p.pattern), name, p


ALL = list(walk(get_resolver().url_patterns))


def api_view_class(callback) -> type[APIView] | None:
    """The DRF view behind a URL's callback (DRF's as_view() keeps it as `cls`)."""
    cls = getattr(callback, "cls", None)
    return cls if isinstance(cls, type) and issubclass(cls, APIView) else None


def api_permissions(callback) -> list[type]:
    initkwargs = getattr(callback, "initkwargs", {}) or {}
    return list(initkwargs.get("permission_classes") or api_view_class(callback).permission_classes)


def declared_roles(callback) -> frozenset:
    """The roles a view declares: `role_required`'s, or its DRF permission classes'."""
    roles = getattr(callback, "required_roles", None)
    if roles:
        return frozenset(roles)
    if api_view_class(callback) is None:
        return frozenset()
    found = frozenset()
    for permission in api_permissions(callback):
        found |= getattr(permission, "required_roles", frozenset())
    return found


def is_api_guarded(callback) -> bool:
    """Guarded by DRF permissions alone (no `role_required` around it): 401 for anonymous."""
    return not getattr(callback, "required_roles", None) and api_view_class(callback) is not None


def test_the_console_is_the_researchers_admin_site():
    assert isinstance(admin.site, ResearcherAdminSite)
    assert any(name == "admin" for _route, name, _p in ALL)


@pytest.mark.parametrize("route,name,pattern", [a for a in ALL if a[2]], ids=lambda v: str(v))
def test_every_view_requires_a_role_or_is_public_on_purpose(route, name, pattern):
    callback = pattern.callback
    if api_view_class(callback) is not None:
        permissions = api_permissions(callback)
        assert AllowAny not in permissions, f"{route} ({name}) is an API view with AllowAny"
    roles = declared_roles(callback)
    is_public = getattr(callback, "public_on_purpose", False)
    assert roles or is_public, f"{route} ({name}) has neither role_required nor public"
    if is_public:
        assert name in PUBLIC, f"{route} is public but not listed in PUBLIC with a reason"
    else:
        assert name not in PUBLIC


def _argless_guarded():
    for route, name, pattern in ALL:
        if pattern is None or pattern.pattern.regex.groups or "<" in route:
            continue
        roles = declared_roles(pattern.callback)
        if roles:
            yield name, roles


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
@pytest.mark.parametrize("name,roles", list(_argless_guarded()), ids=lambda v: str(v))
def test_each_role_gets_what_the_view_declares(role_client, name, roles, role):
    response = role_client(role).get(reverse(name))
    if role in roles:
        # 405: past the guard, to a view that only takes a POST (an undo, say).
        assert response.status_code in (200, 302, 405)
        if response.status_code == 302:
            assert "/accounts/login/" not in response["Location"]
    else:
        assert response.status_code == 403


def _api_guarded(name: str) -> bool:
    return any(n == name and p is not None and is_api_guarded(p.callback) for _r, n, p in ALL)


@pytest.mark.parametrize("name", [n for n, _r in _argless_guarded()])
def test_anonymous_visitor_is_sent_to_login(client, db, name):
    url = reverse(name)
    response = client.get(url)
    if _api_guarded(name):  # the API answers, with its challenge, rather than redirecting
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert response.json()["error"]["code"] == "not_authenticated"
        return
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_inventory_sees_the_api():
    names = {name for name, _roles in _argless_guarded()}
    assert {"api-schema", "api-docs", "api:judgment-list", "api_tokens"} <= names
    assert is_api_guarded(next(p for _r, n, p in ALL if n == "api:judgment-list").callback)


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_only_researchers_enter_the_console(role_client, role):
    client = role_client(role)
    for url in (reverse("admin:index"), reverse("admin:accounts_user_changelist")):
        response = client.get(url)
        if role == Role.RESEARCHER:
            assert response.status_code == 200
        else:
            assert response.status_code == 302
            assert response["Location"].startswith(reverse("admin:login"))


def test_anonymous_visitor_cannot_enter_the_console(client, db):
    response = client.get(reverse("admin:accounts_user_changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
