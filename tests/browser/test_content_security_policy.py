"""Every page runs under a Content-Security-Policy that allows only our own scripts and
styles, and nothing on them trips it: no inline script, inline style, style="" or hx-on,
and htmx (whose own indicator <style> is turned off) still saves what people type."""

import re

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.rubrics.models import Origin
from apps.surveys.models import Answer
from tests.browser.sessions import signed_in
from tests.browser.test_survey_participant import fake_prolific, link
from tests.factories import draft_with_criteria, new_pid, user_with_role

# Installed before any page script, outside the page's policy: records every violation.
WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(
  `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`
));
"""


def watched(context):
    """Collect CSP violations from events and from the console, for every page of `context`."""
    messages = []
    context.add_init_script(WATCH)
    context.on(
        "console",
        lambda m: messages.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return messages


def assert_no_violations(page, console):
    page.wait_for_load_state("load")
    page.wait_for_timeout(200)  # a violation's event is queued after the blocked load
    assert page.evaluate("window.__violations") == []
    assert console == []


def assert_strict_policy(response):
    policy = response.headers["content-security-policy"]
    assert re.search(r"script-src 'self'(;|$)", policy), policy
    assert re.search(r"style-src 'self'(;|$)", policy), policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


def test_the_login_page_and_signing_in_break_no_rule(new_context, transactional_db, password):
    user_with_role(Role.EXPERT, username="erin")
    context = new_context()
    console = watched(context)
    page = context.new_page()

    assert_strict_policy(page.goto("/admin/login/"))
    assert_no_violations(page, console)
    assert_strict_policy(page.goto("/accounts/login/"))
    assert_no_violations(page, console)
    page.get_by_label("Username").fill("erin")
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Your rubrics")).to_be_visible()
    assert_no_violations(page, console)


def test_the_rubric_editor_saves_through_htmx_under_the_policy(
    new_context, live_server, people, question
):
    rubric = draft_with_criteria(question, people["erin"])
    first = rubric.criteria.exclude(origin=Origin.SHARED).order_by("order").first()
    context = signed_in(new_context, live_server, people["erin"])
    console = watched(context)
    page = context.new_page()

    assert_strict_policy(page.goto(f"/rubrics/{rubric.pk}/"))
    page.locator(f"#text-{first.pk}").fill("Says to call the bank on the number on its card.")
    expect(page.locator("#save-status")).to_contain_text("All changes saved")

    first.refresh_from_db()
    assert first.text == "Says to call the bank on the number on its card."
    assert page.locator("head style").count() == 0, "htmx injected its indicator <style>"
    assert_no_violations(page, console)


def test_every_page_reports_what_the_policy_refuses_on_it(
    new_context, policy_violations, transactional_db
):
    """The watch that `new_context` puts on every page (and fails a test on) hears a refused
    style attribute as the page is parsed, and a refused <style> added by script later."""
    context = new_context()

    def with_inline_style(route):
        page = route.fetch().text().replace("<main ", '<main style="color: red" ', 1)
        route.fulfill(response=route.fetch(), body=page)

    context.route("**/accounts/login/", with_inline_style)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.evaluate("document.head.append(document.createElement('style'))")
    page.evaluate("() => new Promise((resolve) => setTimeout(resolve, 50))")

    seen = list(policy_violations)
    policy_violations.clear()  # refused as they should be; the test's own, not the site's
    on_login = [line for line in seen if line.startswith(f"{page.url}: ")]
    assert page.url.endswith("/accounts/login/")
    assert any("style-src-attr refused inline" in line for line in on_login), seen
    assert any("style-src-elem refused inline" in line for line in on_login), seen
    logged = [line for line in on_login if ": console: " in line]
    assert len(logged) == 2, seen


# Firefox and Safari cannot size a text box to its text in CSS (field-sizing); this makes
# Chromium answer as they do, so the rubric editor grows its boxes by script.
NO_FIELD_SIZING = """
const supports = CSS.supports.bind(CSS);
CSS.supports = (...args) => !String(args[0]).includes('field-sizing') && supports(...args);
"""


def test_the_rubric_editor_swaps_boxes_it_grew_by_script_under_the_policy(
    new_context, live_server, people, question, policy_violations
):
    rubric = draft_with_criteria(question, people["erin"])
    context = signed_in(new_context, live_server, people["erin"])
    context.add_init_script(NO_FIELD_SIZING)
    page = context.new_page()
    page.goto(f"/rubrics/{rubric.pk}/")
    criteria = page.get_by_test_id("criterion")
    count = criteria.count()
    assert "height" in page.locator("#new-text").get_attribute("style")  # grown by script

    page.get_by_label("What a good answer should include or avoid").fill("Says to call the bank.")
    page.locator("#add-criterion").get_by_role("button", name="Add criterion").click()
    expect(criteria).to_have_count(count + 1)
    first = criteria.first.locator("textarea[name=text]").input_value()
    page.get_by_role("button", name="Move criterion 1 down").click()
    expect(criteria.nth(1).locator("textarea[name=text]")).to_have_value(first)
    expect(page.locator("#save-status")).to_contain_text("All changes saved")

    page.evaluate("() => new Promise((resolve) => setTimeout(resolve, 50))")
    assert policy_violations == []


@pytest.fixture
def study(transactional_db, make_study):
    return make_study(count=4, scenarios_per_participant=2)


def test_a_participants_pages_save_answers_through_htmx_under_the_policy(new_context, study):
    context = new_context()
    fake_prolific(context)
    console = watched(context)
    page = context.new_page()

    assert_strict_policy(page.goto(link(study, new_pid())))
    assert_no_violations(page, console)
    page.get_by_role("button", name="I agree to take part").click()
    page.get_by_role("button", name="Start the first scenario").click()
    expect(page.get_by_role("heading", name="Scenario 1", exact=True)).to_be_visible()
    item = page.locator("fieldset.item").first
    item.locator("label.choice").first.click()  # each answer is saved by htmx as it is given
    expect(item.locator(".save-state")).to_contain_text("Saved")
    assert Answer.objects.filter(assignment__participant__study=study).count() == 1
    assert_no_violations(page, console)


def test_the_console_works_under_the_policy(new_context, live_server, transactional_db):
    researcher = user_with_role(Role.RESEARCHER, username="rahul")
    context = signed_in(new_context, live_server, researcher)
    console = watched(context)
    page = context.new_page()

    for url in (
        "/admin/",
        "/admin/accounts/user/",
        f"/admin/accounts/user/{researcher.pk}/change/",
        "/admin/axes/accessattempt/",
    ):
        assert_strict_policy(page.goto(url))
        assert_no_violations(page, console)
    page.goto("/admin/accounts/user/")
    page.locator("#action-toggle").check()  # the admin's own script selects every row
    expect(page.locator(".action-counter")).to_contain_text("1 of 1 selected")
    assert_no_violations(page, console)
