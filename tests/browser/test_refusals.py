"""What people are told when a change or a request is refused: the rubric editor's status line
counts the changes it could not save, a message goes once its field is fixed, a control a
role may not use is not shown to it, and a refused HTMX request says why."""

import re

from django.contrib.auth.models import Group
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.rubrics.models import Origin
from tests.browser.sessions import signed_in
from tests.conftest import wait_until
from tests.factories import assign, draft_with_criteria, question_make, user_with_role

LONG = (
    "Tells the person to call the bank on the number printed on the back of the card, not "
    "one from the text, to report that the password was typed into a fake page, and to ask "
    "the bank to look for payments or new payees set up since; to change the password on "
    "the bank's own site or app, and anywhere else the same password was used; to turn on "
    "two-step sign-in; and to watch for follow-up calls or texts that claim to be the bank "
    "and ask for a code, since whoever has the password will try to get past that step next."
)


def editor_draft():
    expert = user_with_role(Role.EXPERT, first_name="Erin", last_name="Expert")
    question = question_make()
    assign(question, author=expert, reviewer=user_with_role(Role.REVIEWER))
    return expert, draft_with_criteria(question, expert)


def own(rubric):
    return list(rubric.criteria.exclude(origin=Origin.SHARED).order_by("order"))


def test_the_status_line_counts_refused_changes_until_they_are_fixed(
    new_context, live_server, migrated_rows, screenshot
):
    expert, rubric = editor_draft()
    first, second = own(rubric)[:2]
    page = signed_in(new_context, live_server, expert).new_page()
    page.goto(f"/rubrics/{rubric.pk}/")
    status = page.locator("#save-status")

    page.locator(f"#text-{first.pk}").fill("")
    errors = page.locator(f"#criterion-{first.pk}-errors .error")
    expect(errors).to_contain_text("the text is empty")
    expect(status).to_have_text(re.compile(r"^1 change not saved: Criterion 1: .*text is empty"))

    # Another criterion saves, but the page still holds a change that was not saved.
    page.locator(f"#text-{second.pk}").fill("Says to report the text to the bank's fraud line.")
    wait_until(lambda: own(rubric)[1].text.startswith("Says to report"))
    expect(status).to_have_text(re.compile(r"^1 change not saved: "))
    expect(status).not_to_contain_text("All changes saved")
    screenshot(page, "refused")

    # Fixed: its message goes, and the line says everything is saved.
    page.locator(f"#text-{first.pk}").fill("Says to change the bank password at once.")
    expect(errors).to_have_count(0)
    expect(status).to_have_text(re.compile(r"^\s*All changes saved at"))
    assert own(rubric)[0].text == "Says to change the bank password at once."


def test_a_long_criterion_is_shown_whole_in_its_box(new_context, live_server, migrated_rows):
    expert, rubric = editor_draft()
    first = own(rubric)[0]
    page = signed_in(new_context, live_server, expert).new_page()
    page.goto(f"/rubrics/{rubric.pk}/")
    box = page.locator(f"#text-{first.pk}")
    box.fill(LONG)
    wait_until(lambda: own(rubric)[0].text == LONG)
    clipped = "el => el.scrollHeight - el.clientHeight"
    assert box.evaluate(clipped) <= 1
    page.reload()
    assert page.locator(f"#text-{first.pk}").evaluate(clipped) <= 1


def test_a_researcher_is_not_offered_reference_answers_and_nothing_is_refused(
    new_context, live_server, migrated_rows
):
    _expert, rubric = editor_draft()
    researcher = user_with_role(Role.RESEARCHER)
    page = signed_in(new_context, live_server, researcher).new_page()
    refused = []
    page.on("response", lambda r: refused.append(r.url) if r.status >= 400 else None)
    page.goto(f"/rubrics/{rubric.pk}/")
    expect(page.get_by_test_id("criterion").first).to_be_visible()
    expect(page.get_by_role("heading", name="What models answer")).to_have_count(0)
    expect(page.get_by_role("button", name=re.compile("Show two"))).to_have_count(0)
    page.wait_for_load_state("networkidle")
    assert [url for url in refused if "favicon" not in url] == []


def test_a_refused_request_says_why(new_context, live_server, migrated_rows, screenshot):
    expert, rubric = editor_draft()
    first = own(rubric)[0]
    page = signed_in(new_context, live_server, expert).new_page()
    page.goto(f"/rubrics/{rubric.pk}/")
    expect(page.get_by_test_id("criterion").first).to_be_visible()
    alert = page.locator("#request-error")
    expect(alert).to_be_empty()

    # The expert's role is taken away while the editor is open: the next save is refused.
    expert.groups.remove(Group.objects.get(name=Role.EXPERT))
    page.locator(f"#text-{first.pk}").fill("Says to call the bank on the number on the card.")
    expect(alert).to_have_text("Your account does not have the role this page needs.")
    expect(alert).to_have_attribute("role", "alert")
    screenshot(page, "editor")

    # And on a page with HTMX's own handling of errors (the rubric list's filters).
    reviewer = user_with_role(Role.REVIEWER)
    other = signed_in(new_context, live_server, reviewer).new_page()
    other.goto("/rubrics/")
    reviewer.groups.clear()
    other.locator("form.filters select").first.select_option(index=1)
    expect(other.locator("#request-error")).to_have_text(
        "Your account does not have the role this page needs."
    )
