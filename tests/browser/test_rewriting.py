"""A researcher reviews a model's rewrite in Chromium: the differences follow an edit in the
textarea, and after approval the page shows the approved text and its provenance."""

from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.questions.models import Question
from tests.browser.sessions import signed_in
from tests.factories import (
    ModelConfigFactory,
    question_from_post_make,
    rewrite_made,
    user_with_role,
)

POST = (
    "Long time lurker, first post. My Instagram got hacked and the email was changed. I "
    "already tried resetting my password twice. What should I do?"
)
REWRITE = (
    "Someone hacked my social media account and changed its email. I've already tried "
    "resetting my password twice. What would you advise me to do?"
)
EDITED = REWRITE.replace("What would you advise me to do?", "How do I get the account back?")


def test_a_rewrite_is_edited_in_the_textarea_and_approved(new_context, live_server, migrated_rows):
    rosa = user_with_role(Role.RESEARCHER, username="rosa", first_name="Rosa", last_name="Reyes")
    question = question_from_post_make(body=POST)
    rewrite = rewrite_made(
        question, text=REWRITE, model=ModelConfigFactory(name="offline-thorough")
    )

    page = signed_in(new_context, live_server, rosa).new_page()
    page.goto("/questions/rewrites/")
    page.get_by_role("link", name=f"Review {question.external_id}").click()
    expect(page.get_by_test_id("original")).to_contain_text("Long time lurker")
    expect(page.get_by_test_id("diff").locator("del").first).to_be_visible()
    expect(page.get_by_role("heading", name="Rewrite offline demo model")).to_be_visible()

    box = page.get_by_label("Question text to approve")
    expect(box).to_have_value(REWRITE)
    box.fill(EDITED)
    # The differences follow the edit (htmx, after a pause in typing).
    expect(page.get_by_test_id("diff").locator("ins").last).to_contain_text("get the account back")
    page.get_by_role("button", name="Approve").click()

    expect(page.get_by_role("status").first).to_contain_text("Approved")
    expect(page.get_by_test_id("rewrite-text")).to_contain_text("How do I get the account back?")
    provenance = page.get_by_test_id("provenance")
    expect(provenance).to_contain_text("offline-thorough")
    expect(provenance).to_contain_text("rewrite version 2")
    expect(page.get_by_test_id("approved-by")).to_have_text("Rosa Reyes")
    expect(page.get_by_test_id("cosine")).to_have_text(
        f"{Question.objects.get().rewrite_cosine:.3f}"
    )
    expect(page.get_by_label("Question text to approve")).to_have_count(0)
    assert Question.objects.get().text == EDITED and Question.objects.get().rewrite == rewrite
