"""The API's docs page (/api/docs/) in Chromium: Swagger UI from Assay's own static files,
its operations listed from the schema, no request to another host, nothing the page's
Content-Security-Policy blocks and no error in the console; and "Try it out" works with the
session. The tokens page makes a key, shown once, that the API then takes."""

from urllib.parse import urlsplit

import httpx
from playwright.sync_api import expect

from apps.accounts.roles import Role
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import SIZES, violations
from tests.browser.test_content_security_policy import WATCH
from tests.factories import user_with_role


def _watched(context, live_server):
    """Console errors, CSP violations (events and messages) and requests to other hosts."""
    seen = {"errors": [], "foreign": []}
    context.add_init_script(WATCH)
    context.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    here = urlsplit(live_server.url).netloc
    context.on(
        "request",
        lambda r: (
            seen["foreign"].append(r.url)
            if urlsplit(r.url).netloc not in (here, "") and not r.url.startswith("data:")
            else None
        ),
    )
    return seen


def test_the_docs_page_lists_the_operations_with_no_cdn_and_no_error(
    new_context, live_server, transactional_db, screenshot
):
    researcher = user_with_role(Role.RESEARCHER, username="rahul")
    context = signed_in(new_context, live_server, researcher)
    seen = _watched(context, live_server)
    page = context.new_page()

    response = page.goto("/api/docs/")
    assert response.status == 200
    policy = response.headers["content-security-policy"]
    # The site's strict policy, unrelaxed: the page runs and styles only our own files.
    assert "script-src 'self'" in policy and "unsafe" not in policy
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Assay API")
    expect(page.locator(".opblock-tag-section").first).to_be_visible()
    for tag in ("judgments", "scores", "grading-runs", "answers"):
        expect(page.locator(f'.opblock-tag[data-tag="{tag}"]')).to_be_visible()
    assert page.locator(".opblock").count() >= 40  # the operations, all of them listed

    # "Try it out" on the topics list: the browser's session is let in.
    operation = page.locator("#operations-topics-topics_list")
    operation.locator(".opblock-summary").click()
    operation.get_by_role("button", name="Try it out").click()
    operation.get_by_role("button", name="Execute").click()
    expect(
        operation.locator(".live-responses-table tbody .response-col_status").first
    ).to_contain_text("200")
    screenshot(page, "api-docs")
    page.wait_for_timeout(200)  # a violation's event is queued after the blocked load
    assert page.evaluate("window.__violations") == []
    assert seen["errors"] == []
    assert seen["foreign"] == []


def test_the_tokens_page_shows_a_new_key_once_and_the_api_takes_it(
    new_context, live_server, transactional_db
):
    researcher = user_with_role(Role.RESEARCHER, username="rahul")
    context = signed_in(new_context, live_server, researcher)
    seen = _watched(context, live_server)
    page = context.new_page()
    page.goto("/accounts/tokens/")
    assert violations(page) == []
    page.get_by_label("Name").fill("analysis notebook")
    page.get_by_role("button", name="Make a token").click()
    key = page.get_by_role("textbox", name="Key", exact=True).input_value()
    assert key.startswith("assay_")
    expect(page.get_by_role("button", name="Copy the key")).to_be_visible()
    assert violations(page) == []  # the key shown, and the list with its revoke button
    page.set_viewport_size(SIZES["phone"])
    assert violations(page) == []
    page.set_viewport_size(SIZES["desktop"])

    # The key alone, without the browser's session.
    api = httpx.get(f"{live_server.url}/api/v1/topics/", headers={"Authorization": f"Bearer {key}"})
    assert api.status_code == 200

    page.goto("/accounts/tokens/")
    assert key not in page.content()
    page.get_by_role("button", name="Revoke analysis notebook").click()
    page.get_by_role("button", name="Revoke the token").click()
    expect(page.get_by_text("is refused from now on")).to_be_visible()
    refused = httpx.get(
        f"{live_server.url}/api/v1/topics/", headers={"Authorization": f"Bearer {key}"}
    )
    assert refused.status_code == 401
    page.wait_for_timeout(200)
    assert page.evaluate("window.__violations") == []
    assert seen["errors"] == []
