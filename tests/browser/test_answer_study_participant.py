"""A participant of a study of answers in Chromium on a 360 px phone: from the Prolific link
to the completion code, rating an answer (its Markdown formatted, markup in it shown as text)
and comparing a pair (stacked here, side by side on a wide screen), with no accessibility
violation axe can find and no page that scrolls sideways."""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from apps.surveys.models import Answer, ParticipantStatus, UnitKind
from tests.browser.test_mobile import BROKEN_HEADERS
from tests.browser.test_survey_participant import fake_prolific, link, no_sideways_scroll
from tests.factories import answer_study_make, new_pid

AXE = Axe()
PROLIFIC = re.compile(r"https://app\.prolific\.com/submissions/complete\?cc=DONE1234")
PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
ANSWER = (
    "**Change your password** from a device you trust, then:\n\n"
    "1. Turn on two-factor authentication.\n"
    "2. Check https://myaccount.example.com/security/recent-activity/sign-ins-and-devices "
    "for sign-ins you do not know.\n\n"
    "| Step | When |\n|---|---|\n| Password | Now |\n| Two-factor authentication | Today |\n\n"
    f"{PAYLOAD}"
)
REASON = "It says what to do first and why, in plain words."


def violations(page) -> list[str]:
    """Every violation axe finds on the page as it is now, one line each."""
    page.wait_for_load_state("load")
    found = AXE.run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:3]]}" for v in found]


@pytest.fixture
def study(transactional_db):
    study = answer_study_make(answers=1, pairs=1, scenarios_per_participant=2)
    answer = study.study_scenarios.get(kind=UnitKind.ANSWER)
    answer.question_text = "Someone got into my email.\nWhat should I do first?"
    answer.answer_text = ANSWER
    answer.save()
    return study


def rate_answer(page):
    markdown = page.locator(".markdown")
    expect(markdown.locator("strong")).to_have_text("Change your password")
    expect(markdown.locator("ol > li")).to_have_count(2)
    expect(markdown.locator("table td").first).to_have_text("Password")
    assert page.evaluate(BROKEN_HEADERS) == []
    expect(markdown).to_contain_text(PAYLOAD)  # shown as text, run never
    assert page.evaluate("window.__pwned") is None
    expect(page.locator(".question-text")).to_contain_text("What should I do first?")
    helpful = page.locator("fieldset", has_text="How helpful is this answer?")
    helpful.locator("label.choice").nth(3).click()
    helpful.locator("textarea").fill(REASON)
    page.locator("fieldset", has_text="Would you follow this advice?").get_by_label("Yes").check()
    expect(page.locator("#state-AU")).to_contain_text("Saved")


def compare_pair(page):
    first, second = (page.locator("section.answer").nth(i) for i in (0, 1))
    expect(first.get_by_role("heading", name="Answer A")).to_be_visible()
    expect(second.get_by_role("heading", name="Answer B")).to_be_visible()
    a, b = first.bounding_box(), second.bounding_box()
    assert b["y"] >= a["y"] + a["height"], "stacked on a phone"
    page.set_viewport_size({"width": 1280, "height": 900})
    a, b = first.bounding_box(), second.bounding_box()
    assert b["y"] == a["y"] and b["x"] > a["x"] + a["width"] - 1, "side by side when wide"
    page.set_viewport_size({"width": 360, "height": 740})
    which = page.locator("fieldset", has_text="Which answer helps the person more?")
    expect(which.locator("label.choice")).to_have_text(
        ["Answer A", "Answer B", "They help about the same"]
    )
    which.get_by_label("Answer B").check()
    which.locator("textarea").fill(REASON)
    expect(page.locator("#state-PP")).to_contain_text("Saved")


def test_a_participant_rates_an_answer_and_a_pair_on_a_phone(new_context, study, screenshot):
    context = new_context(viewport={"width": 360, "height": 740})
    fake_prolific(context)
    page = context.new_page()
    pid = new_pid()
    found = {}
    page.goto(link(study, pid))
    no_sideways_scroll(page)
    found["consent"] = violations(page)
    page.get_by_role("button", name="I agree to take part").click()
    expect(page.get_by_role("heading", name="How it works")).to_be_visible()
    expect(page.locator("main")).to_contain_text("either its answer or two answers to compare")
    found["instructions"] = violations(page)
    page.get_by_role("button", name="Start the first page").click()
    rated = []
    for position in (1, 2):
        expect(page.locator(".progress-note")).to_have_text(f"Page {position} of 2")
        page.wait_for_load_state()  # htmx binds the autosaves once the page has loaded
        heading = page.get_by_role("heading", level=1).inner_text()
        rated.append(heading)
        no_sideways_scroll(page)
        found[heading] = violations(page)
        screenshot(page, heading.replace(" ", "-").lower())
        if heading == "Rate this answer":
            rate_answer(page)
        else:
            assert heading == "Compare two answers"
            compare_pair(page)
        no_sideways_scroll(page)
        page.locator("form.answers button[type=submit]").click()
    assert sorted(rated) == ["Compare two answers", "Rate this answer"]
    expect(page.get_by_role("heading", name="About you")).to_be_visible()
    no_sideways_scroll(page)
    found["about you"] = violations(page)
    for legend in ("Your age", "Your gender", "The highest level", "Your household"):
        page.locator("fieldset", has_text=legend).get_by_label("Prefer not to say").check()
    page.get_by_role("button", name="Finish and return to Prolific").click()
    expect(page.locator("#completion-code")).to_have_text("DONE1234")
    no_sideways_scroll(page)
    found["done"] = violations(page)
    page.wait_for_url(PROLIFIC, timeout=10_000)
    assert found == {name: [] for name in found}
    participant = study.participants.get(prolific_pid=pid)
    assert participant.status == ParticipantStatus.FINISHED
    given = Answer.objects.filter(assignment__participant=participant)
    assert dict(given.values_list("item__code", "value")) == {"AH": "4", "AU": "yes", "PP": "b"}
