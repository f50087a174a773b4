import re

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from tests.factories import PASSWORD, user_with_role

HEADINGS = {
    Role.EXPERT: "Your rubrics",
    Role.REVIEWER: "Rubrics to review",
    Role.RESEARCHER: "Model runs",
}


@pytest.mark.parametrize("role", list(Role), ids=str)
def test_each_role_logs_in_and_sees_its_home_page(page, transactional_db, screenshot, role):
    user = user_with_role(role, username=f"demo-{role}")

    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.get_by_role("heading", name=HEADINGS[role])).to_be_visible()
    for other_role, heading in HEADINGS.items():
        if other_role != role:
            expect(page.get_by_role("heading", name=heading)).to_have_count(0)
    screenshot(page, "home")

    page.get_by_role("button", name=re.compile("Sign out")).click()
    expect(page).to_have_url(re.compile(r"/accounts/login/$"))


def test_anonymous_visitor_is_sent_to_the_login_page(page, transactional_db):
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_wrong_password_is_explained(page, transactional_db):
    user_with_role(Role.EXPERT, username="erin")
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("erin")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("didn't match")


def test_home_fits_a_360px_phone_without_sideways_scrolling(
    new_context, transactional_db, screenshot
):
    user_with_role(Role.RESEARCHER, username="rahul")
    page = new_context(viewport={"width": 360, "height": 740}).new_page()
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("rahul")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Model runs")).to_be_visible()
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    screenshot(page, "phone")
