"""Layout on a 360 px phone (and the console on a 1280 px screen), measured in Chromium:
item legends inside their cards, table headers that break between words only, the ledger's
list without sideways scrolling, and validation messages that go once they are answered."""

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.llm.models import LLMCall
from tests.browser.sessions import signed_in
from tests.browser.test_survey_participant import fake_prolific, link
from tests.factories import ModelConfigFactory, new_pid, user_with_role

PHONE = {"width": 360, "height": 740}

LEGENDS_OUTSIDE = """() => [...document.querySelectorAll('fieldset.item')].flatMap(card => {
  const legend = card.querySelector(':scope > legend');
  const box = card.getBoundingClientRect(), inner = legend.getBoundingClientRect();
  const border = parseFloat(getComputedStyle(card).borderTopWidth);
  const inside = inner.top >= box.top + border && inner.left >= box.left
    && inner.right <= box.right && inner.bottom <= box.bottom;
  return inside ? [] : [legend.textContent.trim().slice(0, 40)];
})"""

# Every word of every header cell on one line, and no cell narrower than what it holds.
BROKEN_HEADERS = """() => {
  const broken = [];
  for (const th of document.querySelectorAll('table th')) {
    if (th.scrollWidth > th.clientWidth + 1) broken.push('overflowing: ' + th.textContent.trim());
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(word[0]);
      }
    }
  }
  return broken;
}"""


@pytest.fixture
def study(transactional_db, make_study):
    return make_study(count=6, scenarios_per_participant=2, name="Messages at work")


def first_scenario(new_context, study, viewport=PHONE):
    context = new_context(viewport=viewport)
    fake_prolific(context)
    page = context.new_page()
    page.goto(link(study, new_pid()))
    page.get_by_role("button", name="I agree to take part").click()
    page.get_by_role("button", name="Start the first scenario").click()
    expect(page.get_by_role("heading", name="Scenario 1", exact=True)).to_be_visible()
    page.wait_for_load_state()  # htmx binds the autosaves once the page has loaded
    return page


def test_item_legends_sit_inside_their_cards_on_a_phone(new_context, study, screenshot):
    page = first_scenario(new_context, study)
    legends = page.locator("fieldset.item > legend")
    assert legends.count() >= 3
    # The wording runs to several lines at this width: the case that used to straddle.
    assert max(box["height"] for box in (legend.bounding_box() for legend in legends.all())) > 40
    assert page.evaluate(LEGENDS_OUTSIDE) == []
    screenshot(page, "legends")


def test_table_headers_break_between_words_on_a_phone(new_context, live_server, study, screenshot):
    model = ModelConfigFactory(name="offline-thorough")
    LLMCall.objects.create(
        model=model,
        purpose="scenario_response",
        attempt=1,
        status="ok",
        input_tokens=812,
        output_tokens=240,
        cost_usd=Decimal("0.004430"),
        latency_ms=900,
    )
    researcher = user_with_role(Role.RESEARCHER)
    page = signed_in(new_context, live_server, researcher, viewport=PHONE).new_page()
    for url in ("/llm/usage/", "/studies/", f"/studies/{study.pk}/"):
        page.goto(url)
        expect(page.locator("table th").first).to_be_visible()
        assert page.evaluate(BROKEN_HEADERS) == [], url
        screenshot(page, url.strip("/").replace("/", "-"))


def test_the_llm_call_list_fits_a_1280_px_screen(new_context, live_server, screenshot):
    model = ModelConfigFactory(name="offline-friendly")
    for attempt in range(1, 4):
        LLMCall.objects.create(
            model=model,
            purpose="grade_checklist",
            attempt=attempt,
            status="rate_limited",
            caller=f"grading-run:17 judgment-batch:{attempt} response:1204{attempt} "
            "criteria:88,89,90,91,92,93,94,95,96,97,98,99",
            error_class="litellm.RateLimitError",
            error_message="Rate limit reached for requests per minute; retry after 2 s.",
            input_tokens=123456,
            output_tokens=654321,
            cost_usd=Decimal("12.345678"),
            latency_ms=123456,
        )
    researcher = user_with_role(Role.RESEARCHER)
    screen = {"width": 1280, "height": 800}
    context = signed_in(new_context, live_server, researcher, viewport=screen)
    page = context.new_page()
    page.goto("/admin/llm/llmcall/")
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    screenshot(page, "llmcalls")
    wide = page.evaluate(
        """() => [document.documentElement, ...document.querySelectorAll('#changelist .results')]
        .filter(el => el.scrollWidth > el.clientWidth + 1).map(el => el.id || el.className
        || el.tagName)"""
    )
    assert wide == []


def answer(item):
    choices = item.locator("label.choice")
    choices.nth(0 if choices.count() == 2 else 3).click()
    if item.locator("textarea").count():
        item.locator("textarea").fill("It does what was asked and keeps the rest private.")


def test_validation_messages_go_once_the_answers_are_given(new_context, study, screenshot):
    page = first_scenario(new_context, study)
    page.locator("form.answers button[type=submit]").click()
    expect(page.get_by_text("Some answers are missing")).to_be_visible()
    page.wait_for_load_state()  # the page came again: its autosaves are bound once loaded
    first = page.locator("fieldset.item").first
    code = first.get_attribute("id").removeprefix("item-")
    expect(first.locator(".error")).not_to_have_count(0)
    unanswered = page.locator("fieldset.item").nth(1)
    expect(unanswered.locator(".error")).not_to_have_count(0)

    # Answering the first item saves it and clears its messages, and only its own: the
    # second item still says what it lacks.
    answer(first)
    expect(page.locator(f"#state-{code}")).to_contain_text("Saved")
    expect(first.locator(".error")).to_have_count(0)
    expect(unanswered.locator(".error")).not_to_have_count(0)
    expect(page.get_by_text("Some answers are missing")).to_be_visible()
    screenshot(page, "one-answered")

    for item in page.locator("fieldset.item").all()[1:]:
        answer(item)
    expect(page.locator("fieldset.item .error")).to_have_count(0)
    expect(page.get_by_text("Some answers are missing")).to_have_count(0)
    page.locator("form.answers button[type=submit]").click()
    expect(page.get_by_role("heading", name="Scenario 2", exact=True)).to_be_visible()

    # The rest of the way, to the completion page, which goes back to Prolific by itself.
    for item in page.locator("fieldset.item").all():
        answer(item)
    expect(page.locator("fieldset.item .save-state").last).to_contain_text("Saved")
    page.locator("form.answers button[type=submit]").click()
    expect(page.get_by_role("heading", name="About you")).to_be_visible()
    for fieldset in page.locator("fieldset.item").all():
        fieldset.get_by_label("Prefer not to say").check()
    page.get_by_role("button", name="Finish and return to Prolific").click()
    expect(page.get_by_text("Taking you back to Prolific")).to_be_visible()
    page.wait_for_url(re.compile(r"https://app\.prolific\.com/submissions/complete\?cc="))


# Where the first question starts, in screens from the top of the page.
FIRST_QUESTION_SCREENS = """() => (window.scrollY
  + document.querySelector('fieldset.item').getBoundingClientRect().top) / window.innerHeight"""


def test_long_results_are_folded_on_a_phone_and_open_from_the_keyboard(
    new_context, transactional_db, make_study, screenshot
):
    # main100 alone: its one result runs to 1,992 characters, 34 lines.
    study = make_study(count=1, scenarios_per_participant=1)
    page = first_scenario(new_context, study)
    fold = page.locator("details.fold")
    expect(fold).to_have_count(1)
    assert fold.evaluate("d => d.open") is False
    summary, result = fold.locator("summary"), fold.locator(":scope > :not(summary)")
    expect(summary).to_contain_text(re.compile(r"What it got back from \w+ \([\d,]+ characters\)"))
    expect(summary.locator(".fold-show")).to_be_visible()
    expect(summary.locator(".fold-hide")).to_be_hidden()
    expect(result).to_be_hidden()
    # Folded, the result is in the page all the same: what is shown when it opens.
    folded_text = result.text_content()
    assert len(folded_text) > 100
    folded_at = page.evaluate(FIRST_QUESTION_SCREENS)
    summary.scroll_into_view_if_needed()
    screenshot(page, "folded")

    summary.focus()
    page.keyboard.press("Enter")
    expect(result).to_be_visible()
    assert fold.evaluate("d => d.open") is True and result.text_content() == folded_text
    expect(summary.locator(".fold-hide")).to_be_visible()
    expect(summary.locator(".fold-show")).to_be_hidden()
    # What folding is for: the questions start screens sooner (main100: 1.5 against 4.1).
    assert page.evaluate(FIRST_QUESTION_SCREENS) > folded_at + 1
    page.evaluate("() => window.scrollBy(0, 400)")
    screenshot(page, "opened")
    page.keyboard.press("Space")
    expect(result).to_be_hidden()
