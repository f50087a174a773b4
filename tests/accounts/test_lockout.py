"""Password guessing is cut off: django-axes locks a username and address pair out of both
login pages after ASSAY_LOGIN_FAILURE_LIMIT wrong passwords, an address after
ASSAY_LOGIN_ADDRESS_FAILURE_LIMIT over any usernames (one password sprayed across accounts),
and researchers unlock them."""

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


# --- one password on many usernames ---------------------------------------------------------

SPRAYED = "Summer2024!"
SPRAYER, ELSEWHERE = "203.0.113.9", "198.51.100.7"


def spray(client, url_name, usernames) -> list[int]:
    return [guess(client, url_name, username, SPRAYED).status_code for username in usernames]


def test_the_default_address_limit_is_twenty_failures_above_the_pairs():
    assert settings.SIGN_IN_ADDRESS_FAILURE_LIMIT == 20 > settings.AXES_FAILURE_LIMIT


@pytest.mark.parametrize("url_name", LOGIN_PAGES)
def test_one_password_tried_on_many_usernames_from_one_address_is_locked_out(
    make_user, password, url_name
):
    make_user(Role.RESEARCHER, username="rahul")
    limit = settings.SIGN_IN_ADDRESS_FAILURE_LIMIT
    sprayer = Client(REMOTE_ADDR=SPRAYER)

    statuses = spray(sprayer, url_name, [f"user{n}" for n in range(limit)])

    assert statuses == [200] * (limit - 1) + [429]
    # Now nobody signs in from that address, not even with the right password; from another
    # address they do.
    response = guess(sprayer, url_name, "rahul", password)
    assert response.status_code == 429
    assert not signed_in(sprayer)
    body = response.content.decode()
    assert "Too many wrong passwords from your address" in body
    assert "unlock your address" in body
    assert guess(Client(REMOTE_ADDR=ELSEWHERE), url_name, "rahul", password).status_code == 302


def test_signing_in_between_guesses_does_not_forgive_the_address(make_user, password):
    make_user(Role.EXPERT, username="mallory")
    limit = settings.SIGN_IN_ADDRESS_FAILURE_LIMIT
    sprayer = Client(REMOTE_ADDR=SPRAYER)
    assert set(spray(sprayer, "login", [f"user{n}" for n in range(limit - 1)])) == {200}

    assert guess(sprayer, "login", "mallory", password).status_code == 302
    sprayer.post(reverse("logout"))

    assert spray(sprayer, "login", ["one-more"]) == [429]


def test_a_few_typos_behind_one_address_lock_nobody_else_out(make_user, password):
    make_user(Role.EXPERT, username="erin")
    lab = Client(REMOTE_ADDR=SPRAYER)
    for n in range(3):
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            assert guess(lab, "login", f"colleague{n}").status_code == 200
    assert guess(lab, "login", "erin", password).status_code == 302


def test_the_address_limit_follows_the_setting(db, settings):
    settings.SIGN_IN_ADDRESS_FAILURE_LIMIT = 3
    assert spray(Client(REMOTE_ADDR=SPRAYER), "login", ["a", "b", "c"]) == [200, 200, 429]


def test_the_address_lockout_ends_after_the_cool_off(make_user, password, settings):
    settings.SIGN_IN_ADDRESS_FAILURE_LIMIT = 3
    make_user(Role.EXPERT, username="erin")
    sprayer = Client(REMOTE_ADDR=SPRAYER)
    spray(sprayer, "login", ["a", "b", "c"])
    assert guess(sprayer, "login", "erin", password).status_code == 429
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - dt.timedelta(seconds=1)
    )
    assert guess(sprayer, "login", "erin", password).status_code == 302


def test_a_researcher_unlocks_an_address_by_forgetting_its_attempts(
    make_user, password, role_client, settings
):
    settings.SIGN_IN_ADDRESS_FAILURE_LIMIT = 3
    make_user(Role.EXPERT, username="erin")
    sprayer = Client(REMOTE_ADDR=SPRAYER)
    spray(sprayer, "login", ["a", "b", "c"])
    assert guess(sprayer, "login", "erin", password).status_code == 429
    console = role_client(Role.RESEARCHER)
    url = reverse("admin:axes_accessattempt_changelist")
    found = console.get(url, {"q": SPRAYER}).content.decode()
    attempts = AccessAttempt.objects.filter(ip_address=SPRAYER)
    assert all(f'value="{pk}"' in found for pk in attempts.values_list("pk", flat=True))

    console.post(url, {"action": "unlock", "_selected_action": [str(a.pk) for a in attempts]})

    assert guess(sprayer, "login", "erin", password).status_code == 302


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
