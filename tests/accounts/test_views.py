import pytest
from django.urls import reverse

from apps.accounts.roles import Role


@pytest.mark.parametrize(
    "role,heading",
    [
        (Role.EXPERT, "Your rubrics"),
        (Role.REVIEWER, "Rubrics to review"),
        (Role.RESEARCHER, "Model runs"),
    ],
)
def test_home_shows_each_role_its_own_work(role_client, role, heading):
    body = role_client(role).get(reverse("home")).content.decode()
    assert heading in body
    others = {"Your rubrics", "Rubrics to review", "Model runs"} - {heading}
    assert not any(other in body for other in others)


def test_user_without_a_role_is_refused_with_an_explanation(role_client):
    response = role_client(None).get(reverse("home"))
    assert response.status_code == 403
    assert "role" in response.content.decode()


def test_login_with_wrong_password_says_so(client, make_user):
    make_user(Role.EXPERT, username="erin")
    response = client.post(reverse("login"), {"username": "erin", "password": "nope"})
    assert response.status_code == 200
    assert "didn't match" in response.content.decode()


def test_login_then_logout(client, make_user, password):
    make_user(Role.EXPERT, username="erin")
    response = client.post(reverse("login"), {"username": "erin", "password": password})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert client.get(reverse("home")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("home")).status_code == 302


def test_password_change(client, make_user, password):
    user = make_user(Role.REVIEWER, username="rosa")
    client.force_login(user)
    response = client.post(
        reverse("password_change"),
        {
            "old_password": password,
            "new_password1": "a fresh long one 42",
            "new_password2": "a fresh long one 42",
        },
    )
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password("a fresh long one 42")


def test_pages_escape_user_text(role_client, make_user, client):
    user = make_user(Role.EXPERT, username="x", first_name="<script>alert(1)</script>")
    client.force_login(user)
    body = client.get(reverse("home")).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_base_layout_carries_csrf_on_hx_headers_and_local_htmx(role_client):
    body = role_client(Role.EXPERT).get(reverse("home")).content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in body
    assert "/static/vendor/htmx/htmx-2.0.11.min.js" in body
    assert "https://" not in body.split("<body")[0]
