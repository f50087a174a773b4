"""API tokens: made on the tokens page (the key shown once, only its hash kept), revoked
there; a request with a revoked, unknown or malformed key, or an inactive owner's, is a 401
in the error shape; an owner who is no longer a researcher gets 403; `last_used_at` is
written at most once a minute."""

import base64
import datetime as dt
import hashlib

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.errors import AccountError
from apps.accounts.models import ApiToken
from apps.accounts.roles import Role
from apps.accounts.services import api_token_create, api_token_revoke, user_set_roles
from tests.api.builders import bearer
from tests.conftest import ROLES
from tests.factories import user_with_role

TOPICS = "/api/v1/topics/"


def _error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["status"] == status
    assert set(error) <= {"status", "code", "message", "fields"}
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    return error


def test_a_token_is_made_with_its_key_shown_once_and_only_its_hash_kept(role_client):
    client = role_client(Role.RESEARCHER)
    response = client.post(reverse("api_tokens"), {"name": "analysis notebook"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    key = response.context["key"]
    assert key.startswith("assay_") and len(key) > 40
    assert key in response.content.decode()
    token = ApiToken.objects.get(name="analysis notebook")
    assert token.key_sha256 == hashlib.sha256(key.encode()).hexdigest()
    assert token.prefix == key[:12]
    # The key is nowhere in the row, and the page never shows it again.
    stored = [str(getattr(token, f.attname)) for f in ApiToken._meta.concrete_fields]
    assert not any(key in value for value in stored)
    again = client.get(reverse("api_tokens"))
    assert key not in again.content.decode()
    assert token.prefix in again.content.decode()
    assert Client(**bearer(key)).get(TOPICS).status_code == 200


def test_a_token_needs_a_name(role_client):
    response = role_client(Role.RESEARCHER).post(reverse("api_tokens"), {"name": "  "})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_revoking_asks_first_then_the_key_is_refused(role_client):
    client = role_client(Role.RESEARCHER)
    user = client.get(reverse("api_tokens")).wsgi_request.user
    token, key = api_token_create(user=user, name="script")
    url = reverse("api_token_revoke", args=[token.pk])
    confirm = client.post(url)
    assert confirm.status_code == 200
    assert b"Revoke the token" in confirm.content
    token.refresh_from_db()
    assert token.revoked_at is None
    assert Client(**bearer(key)).get(TOPICS).status_code == 200

    done = client.post(url, {"confirmed": "yes"})
    assert done.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    _error(Client(**bearer(key)).get(TOPICS), 401, "token_revoked")


def test_nobody_revokes_another_researchers_token(role_client):
    owner = user_with_role(Role.RESEARCHER)
    token, _key = api_token_create(user=owner, name="theirs")
    response = role_client(Role.RESEARCHER).post(
        reverse("api_token_revoke", args=[token.pk]), {"confirmed": "yes"}
    )
    assert response.status_code == 404
    with pytest.raises(AccountError):
        api_token_revoke(token=token, user=user_with_role(Role.RESEARCHER))
    token.refresh_from_db()
    assert token.revoked_at is None


def test_the_tokens_page_lists_only_ones_own_tokens(role_client):
    api_token_create(user=user_with_role(Role.RESEARCHER), name="someone else's")
    client = role_client(Role.RESEARCHER)
    user = client.get(reverse("api_tokens")).wsgi_request.user
    api_token_create(user=user, name="mine")
    page = client.get(reverse("api_tokens")).content.decode()
    assert "mine" in page
    assert "someone else" not in page


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_only_researchers_reach_the_tokens_page(role_client, role):
    client = role_client(role)
    for response in (
        client.get(reverse("api_tokens")),
        client.post(reverse("api_tokens"), {"name": "x"}),
    ):
        assert response.status_code == (200 if role == Role.RESEARCHER else 403)
    if role != Role.RESEARCHER:
        assert not ApiToken.objects.exists()


def test_anonymous_visitors_are_sent_to_sign_in_from_the_tokens_page(client, db):
    for response in (client.get(reverse("api_tokens")), client.post(reverse("api_tokens"))):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_only_researchers_may_have_tokens(db):
    for role in (None, Role.EXPERT, Role.REVIEWER):
        with pytest.raises(AccountError):
            api_token_create(user=user_with_role(role), name="x")


@pytest.mark.parametrize(
    "header,code",
    [
        ("Bearer assay_" + "x" * 43, "token_unknown"),
        ("Bearer not-a-key", "token_malformed"),
        ("Bearer", "token_malformed"),
        ("Bearer two keys", "token_malformed"),
        ("Bearer assay_é" + "x" * 40, "token_malformed"),
    ],
)
def test_an_unknown_or_malformed_key_is_a_401_in_the_error_shape(db, header, code):
    response = Client(HTTP_AUTHORIZATION=header).get(TOPICS)
    _error(response, 401, code)
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_no_credentials_is_a_401_with_the_bearer_challenge(db):
    response = Client().get(TOPICS)
    _error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'


def test_a_username_and_password_are_no_credentials_for_the_api(api_researcher, password):
    # Passwords are checked only on the sign-in pages, where the lockout counts them: the
    # API offers no way to guess one.
    basic = base64.b64encode(f"{api_researcher.username}:{password}".encode()).decode()
    response = Client(HTTP_AUTHORIZATION=f"Basic {basic}").get(TOPICS)
    _error(response, 401, "not_authenticated")
    assert not AccessAttempt.objects.exists()


def test_a_token_of_an_inactive_user_is_refused(api_researcher, api_key):
    api_researcher.is_active = False
    api_researcher.save(update_fields=["is_active"])
    _error(Client(**bearer(api_key)).get(TOPICS), 401, "user_inactive")


def test_a_token_of_someone_no_longer_a_researcher_is_forbidden(api_researcher, api_key):
    user_set_roles(user=api_researcher, roles=[Role.EXPERT])
    _error(Client(**bearer(api_key)).get(TOPICS), 403, "permission_denied")


def test_last_used_is_written_at_most_once_a_minute(api_researcher, api_key):
    client = Client(**bearer(api_key))
    token = ApiToken.objects.get(user=api_researcher)
    assert token.last_used_at is None
    client.get(TOPICS)
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    client.get(TOPICS)
    token.refresh_from_db()
    assert token.last_used_at == first  # within the minute: not written again
    long_ago = timezone.now() - dt.timedelta(minutes=2)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=long_ago)
    client.get(TOPICS)
    token.refresh_from_db()
    assert token.last_used_at > long_ago


def test_a_request_with_a_token_writes_one_row_at_most(api_key, django_assert_max_num_queries):
    client = Client(**bearer(api_key))
    client.get(TOPICS)  # the first use writes last_used_at
    # The token (with its user and their roles), the page: nothing written.
    with django_assert_max_num_queries(2):
        assert client.get(TOPICS).status_code == 200


def test_the_console_lists_tokens_without_their_keys(role_client):
    client = role_client(Role.RESEARCHER)
    _token, key = api_token_create(user=user_with_role(Role.RESEARCHER), name="x")
    page = client.get(reverse("admin:accounts_apitoken_changelist"))
    assert page.status_code == 200
    assert key not in page.content.decode()
    assert client.get(reverse("admin:accounts_apitoken_add")).status_code == 403
