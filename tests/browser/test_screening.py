"""Screening in Chromium: one researcher screens with the keyboard alone, and a second
researcher, in a browser of their own, completes the pair: the post becomes a question."""

from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.questions.models import Question, ScreeningDecision, ScreeningOutcome
from tests.browser.sessions import signed_in
from tests.factories import exclusion_reasons_seeded, sampled_make, user_with_role

BODY = "A stranger messaged my daughter on a game and asked for her address. What do I do?"


def test_a_pair_of_researchers_screens_a_post_into_the_bank(
    new_context, live_server, transactional_db, screenshot
):
    reasons = exclusion_reasons_seeded()
    first, second = sampled_make(2, topic="harassment", body=BODY)
    ana = user_with_role(Role.RESEARCHER, username="ana")
    ben = user_with_role(Role.RESEARCHER, username="ben")

    page = signed_in(new_context, live_server, ana).new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto("/questions/screening/?topic=harassment")
    title = page.get_by_test_id("post-title")
    expect(title).to_have_text(first.post.title)
    expect(page.get_by_test_id("left")).to_contain_text("2 posts left for you")
    expect(page.get_by_role("button", name="I Include")).to_have_attribute("aria-keyshortcuts", "i")

    # N opens the note, Escape leaves it, I includes: the next post arrives in place.
    page.keyboard.press("n")
    expect(page.locator("#screening-note")).to_be_focused()
    page.keyboard.type("Clear question about a child's safety.")
    page.keyboard.press("Escape")
    page.keyboard.press("i")
    expect(page.get_by_test_id("done")).to_contain_text(
        f"Saved: you included {first.post.external_id}."
    )
    expect(title).to_have_text(second.post.title)
    expect(title).to_be_focused()
    expect(page.get_by_test_id("left")).to_contain_text("1 post left for you")
    screenshot(page, "ana-second-post")
    # 2 excludes with the second reason; then the queue is empty for her.
    page.keyboard.press("2")
    expect(page.get_by_test_id("done")).to_contain_text(f"excluded ({reasons[1].text})")
    expect(page.get_by_role("heading", name="Nothing left for you to screen in harassment"))
    assert not errors, errors
    decisions = ScreeningDecision.objects.filter(researcher=ana).order_by("decided_at")
    assert [(d.sampled_id, d.include, d.reason_id, d.note) for d in decisions] == [
        (first.pk, True, None, "Clear question about a child's safety."),
        (second.pk, False, reasons[1].pk, ""),
    ]
    assert not Question.objects.exists()

    # Ben, in his own browser, gets the first post without any sign of Ana's decision.
    other = signed_in(new_context, live_server, ben).new_page()
    other.goto("/questions/screening/")
    expect(other.get_by_test_id("post-title")).to_have_text(first.post.title)
    expect(other.locator("#screening")).not_to_contain_text("Clear question about")
    other.keyboard.press("i")
    expect(other.get_by_test_id("done")).to_contain_text(
        "Both screeners included it: it is now a question in the bank."
    )
    first.refresh_from_db()
    assert first.outcome == ScreeningOutcome.INCLUDED
    question = Question.objects.get(source_post=first.post)
    assert question.text == BODY and question.topic.name == "harassment"

    # The dashboard shows the outcome: one sampled post of harassment included.
    other.goto("/questions/screening/progress/")
    row = other.get_by_test_id("topic-row").filter(has_text="harassment")
    expect(row.locator("td").nth(4)).to_have_text("1")  # included
    expect(row.locator("td").nth(2)).to_have_text("1")  # decided by one: Ana's exclusion
    screenshot(other, "dashboard")
