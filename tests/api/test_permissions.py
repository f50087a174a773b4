"""Every operation of the API, for every role, with a token and with a session: researchers
only. Anonymous requests get 401 with the Bearer challenge; experts, reviewers and accounts
without a role get 403, all in the error shape. Participants have no account and so no way in.

The operations are read from the schema that drf-spectacular generates from the URL
configuration, and checked against the router's URLs, so an endpoint added later is tested
here without being listed.
"""

import re

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, reverse
from drf_spectacular.generators import SchemaGenerator

from apps.accounts.roles import Role
from apps.accounts.services import api_token_create, user_set_roles
from config import api
from tests.api.builders import bearer
from tests.conftest import ROLES
from tests.factories import user_with_role

PARAMETER = re.compile(r"{([a-z_]+)}")
EXAMPLE_VALUES = {"id": "1", "study_id": "1", "run_id": "1", "name": "alpha"}


def _operations() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, item in schema["paths"].items():
        for method in item:
            if method in {"get", "post", "put", "patch", "delete"}:
                found.append((method, PARAMETER.sub(lambda m: EXAMPLE_VALUES[m[1]], path)))
    return sorted(found)


OPERATIONS = _operations()


def _routes(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern)


def _example(route: str) -> str:
    return "/api/v1/" + re.sub(r"<slug:\w+>", "alpha", re.sub(r"<int:\w+>", "1", route))


def test_every_route_of_the_api_is_an_operation_of_the_schema():
    routes = {_example(route) for route in _routes(api.urlpatterns)}
    assert routes == {path for _method, path in OPERATIONS}
    assert len(OPERATIONS) >= 40


def _call(client: Client, method: str, path: str):
    if method == "post":
        return client.post(path, data={}, content_type="application/json")
    return getattr(client, method)(path)


def _refused(response, status: int, code: str):
    assert response.status_code == status, (response.status_code, response.content[:300])
    error = response.json()["error"]
    assert (error["status"], error["code"]) == (status, code)
    return response


def _token_of(role: Role | None) -> str:
    """A key of a user with `role`: made while they were a researcher, as only researchers
    may make one, then their roles changed."""
    user = user_with_role(Role.RESEARCHER)
    _token, key = api_token_create(user=user, name="permissions")
    user_set_roles(user=user, roles=[role] if role else [])
    return key


@pytest.mark.parametrize("method,path", OPERATIONS, ids=lambda v: str(v))
def test_anonymous_requests_get_401_with_the_bearer_challenge(db, method, path):
    response = _refused(_call(Client(), method, path), 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
@pytest.mark.parametrize("method,path", OPERATIONS, ids=lambda v: str(v))
def test_with_a_token_only_researchers_are_let_in(db, role, method, path):
    response = _call(Client(**bearer(_token_of(role))), method, path)
    if role == Role.RESEARCHER:
        assert response.status_code not in (401, 403), response.content[:300]
        assert response.status_code < 500
    else:
        _refused(response, 403, "permission_denied")


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
@pytest.mark.parametrize("method,path", OPERATIONS, ids=lambda v: str(v))
def test_with_a_session_only_researchers_are_let_in(role_client, role, method, path):
    response = _call(role_client(role), method, path)
    if role == Role.RESEARCHER:
        assert response.status_code not in (401, 403), response.content[:300]
        assert response.status_code < 500
    else:
        _refused(response, 403, "permission_denied")


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_the_schema_is_for_researchers_with_a_token_or_a_session(role_client, role):
    url = reverse("api-schema")
    for client in (Client(**bearer(_token_of(role))), role_client(role)):
        response = client.get(url)
        if role == Role.RESEARCHER:
            assert response.status_code == 200
            assert b"openapi: 3" in response.content
        else:
            _refused(response, 403, "permission_denied")
    _refused(Client().get(url), 401, "not_authenticated")


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_the_docs_page_is_for_signed_in_researchers(role_client, role):
    url = reverse("api-docs")
    response = role_client(role).get(url)
    assert response.status_code == (200 if role == Role.RESEARCHER else 403)
    script = role_client(role).get(url + "?script=")
    assert script.status_code == (200 if role == Role.RESEARCHER else 403)


def test_the_docs_page_sends_an_anonymous_visitor_to_sign_in(client, db):
    response = client.get(reverse("api-docs"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_an_unknown_api_url_is_a_404_in_the_error_shape(api):
    for path in ("/api/v1/nothing/", "/api/v1/judgments/not-a-number/", "/api/v2/"):
        _refused(api.get(path), 404, "not_found")


def test_a_method_the_operation_has_not_is_a_405_in_the_error_shape(api):
    _refused(api.delete("/api/v1/topics/1/"), 405, "method_not_allowed")
    _refused(
        api.post("/api/v1/judgments/", {}, content_type="application/json"),
        405,
        "method_not_allowed",
    )
