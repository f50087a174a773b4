"""Password guessing is cut off: django-axes locks a username and address pair out of both
login pages after ASSAY_LOGIN_FAILURE_LIMIT wrong passwords, and researchers unlock it."""

import datetime as dt

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.roles import Role

LOGIN_PAGES = ["login", "admin:login"]


def guess(client, url_name, username, password=None):
    """Sign in with `password`, or with a wrong one when none is given."""
    data = {"username": username, "password": password or "not the password"}
    return client.post(reverse(url_name), data)


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def lock_out(client, url_name, username):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = guess(client, url_name, username)
    assert response.status_code == 429
    return response


def test_the_default_limit_is_five_failures():
    assert settings.AXES_FAILURE_LIMIT == 5


@pytest.mark.parametrize("url_name", LOGIN_PAGES)
def test_after_the_limit_even_the_right_password_is_refused_with_an_explanation(
    client, make_user, password, url_name
):
    make_user(Role.RESEARCHER, username="rahul")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert guess(client, url_name, "rahul").status_code == 200

    assert guess(client, url_name, "rahul").status_code == 429
    response = guess(client, url_name, "rahul", password)

    assert response.status_code == 429
    assert not signed_in(client)
    body = response.content.decode()
    assert 'role="alert"' in body and "Too many wrong passwords" in body
    assert "15 minutes" in body and "ask a researcher to unlock" in body
    assert "<main" in body, "a page of the site, not a bare text"


def test_thirty_guesses_never_get_through(client, make_user, password):
    make_user(Role.EXPERT, username="erin")
    statuses = {guess(client, "login", "erin").status_code for _ in range(30)}
    assert statuses == {200, 429}
    assert guess(client, "login", "erin", password).status_code == 429
    assert AccessFailureLog.objects.filter(username="erin").count() == 31


def test_a_lockout_holds_for_that_username_from_that_address_only(make_user, password):
    make_user(Role.EXPERT, username="erin")
    make_user(Role.EXPERT, username="emeka")
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    lock_out(attacker, "login", "erin")

    # The guesser still cannot get in as erin, but others behind the same address can sign
    # in, and erin can from her own.
    assert guess(attacker, "login", "emeka", password).status_code == 302
    erin = Client(REMOTE_ADDR="198.51.100.7")
    assert guess(erin, "login", "erin", password).status_code == 302
    assert guess(Client(REMOTE_ADDR="203.0.113.9"), "login", "erin", password).status_code == 429


def test_a_successful_sign_in_forgets_earlier_failures(client, make_user, password):
    make_user(Role.EXPERT, username="erin")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        guess(client, "login", "erin")
    assert guess(client, "login", "erin", password).status_code == 302
    client.post(reverse("logout"))
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert guess(client, "login", "erin").status_code == 200


def test_the_lockout_ends_after_the_cool_off(client, make_user, password):
    make_user(Role.EXPERT, username="erin")
    lock_out(client, "login", "erin")
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - dt.timedelta(seconds=1)
    )
    assert guess(client, "login", "erin", password).status_code == 302


def test_the_limit_follows_the_setting(client, make_user, settings):
    settings.AXES_FAILURE_LIMIT = 2
    make_user(Role.EXPERT, username="erin")
    assert guess(client, "login", "erin").status_code == 200
    assert guess(client, "login", "erin").status_code == 429


# --- unlocking in the console --------------------------------------------------------------


def test_researchers_see_the_failed_sign_ins_in_the_console(client, make_user, role_client):
    make_user(Role.EXPERT, username="erin")
    lock_out(Client(), "login", "erin")
    console = role_client(Role.RESEARCHER)
    for name in ("axes_accessattempt", "axes_accessfailurelog", "axes_accesslog"):
        response = console.get(reverse(f"admin:{name}_changelist"))
        assert response.status_code == 200, name
    attempts = console.get(reverse("admin:axes_accessattempt_changelist")).content.decode()
    assert "erin" in attempts and "Locked Out" in attempts
    assert "Unlock: forget the selected failed sign-ins" in attempts


def test_a_researcher_unlocks_a_locked_out_pair(make_user, password, role_client):
    make_user(Role.EXPERT, username="erin")
    erin = Client()
    lock_out(erin, "login", "erin")
    attempt = AccessAttempt.objects.get(username="erin")

    response = role_client(Role.RESEARCHER).post(
        reverse("admin:axes_accessattempt_changelist"),
        {"action": "unlock", "_selected_action": [str(attempt.pk)]},
        follow=True,
    )

    assert "Unlocked: 1 failed sign-in record forgotten." in response.content.decode()
    assert guess(erin, "login", "erin", password).status_code == 302
    assert AccessFailureLog.objects.filter(username="erin").exists(), "the log is kept"


def test_a_researcher_unlocks_a_user_from_the_users_list(make_user, password, role_client):
    victim = make_user(Role.EXPERT, username="erin")
    erin = Client()
    lock_out(erin, "admin:login", "erin")

    role_client(Role.RESEARCHER).post(
        reverse("admin:accounts_user_changelist"),
        {"action": "unlock_sign_in", "_selected_action": [str(victim.pk)]},
    )

    assert not AccessAttempt.objects.filter(username="erin").exists()
    assert guess(erin, "login", "erin", password).status_code == 302


@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER])
def test_only_researchers_reach_or_unlock_the_attempts(make_user, role_client, role):
    make_user(Role.EXPERT, username="erin")
    lock_out(Client(), "login", "erin")
    attempt = AccessAttempt.objects.get(username="erin")
    client = role_client(role)
    url = reverse("admin:axes_accessattempt_changelist")

    assert client.get(url).status_code == 302
    client.post(url, {"action": "unlock", "_selected_action": [str(attempt.pk)]})

    assert AccessAttempt.objects.filter(pk=attempt.pk).exists()


def test_attempts_are_read_only_and_the_logs_cannot_be_edited(rf, researcher):
    from django.contrib import admin

    request = rf.get("/admin/")
    request.user = researcher
    for model in (AccessAttempt, AccessFailureLog):
        model_admin = admin.site._registry[model]
        assert not model_admin.has_add_permission(request)
        assert not model_admin.has_change_permission(request)
    assert not admin.site._registry[AccessFailureLog].has_delete_permission(request)


def test_a_stored_attempt_keeps_neither_the_password_nor_the_csrf_token(make_user):
    make_user(Role.EXPERT, username="erin")
    client = Client(enforce_csrf_checks=True)
    client.get(reverse("login"))
    token = client.cookies["csrftoken"].value
    client.post(
        reverse("login"),
        {"username": "erin", "password": "hunter2-guess", "csrfmiddlewaretoken": token},
    )
    post_data = AccessAttempt.objects.get(username="erin").post_data
    assert "hunter2-guess" not in post_data and token not in post_data
