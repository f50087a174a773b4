"""A participant in Chromium: from the Prolific link to Prolific's completion page, on a
phone-sized screen and a desktop, by keyboard alone, across a closed tab, and with markup in
a scenario. Prolific itself is outside the machine: its completion page is answered by a
route in the browser."""

import re

import pytest
from playwright.sync_api import expect

from apps.surveys.models import Answer, ParticipantStatus, Scenario
from tests.factories import new_pid

PROLIFIC = re.compile(r"https://app\.prolific\.com/submissions/complete\?cc=DONE1234")
PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
REASON = "It answers the task and keeps the health details to itself."


@pytest.fixture
def study(transactional_db, make_study):
    return make_study(count=6, scenarios_per_participant=2)


def link(study, pid):
    return f"/s/{study.slug}/?PROLIFIC_PID={pid}&STUDY_ID={'b' * 24}&SESSION_ID={'c' * 24}"


def fake_prolific(context):
    context.route(
        "https://app.prolific.com/**",
        lambda route: route.fulfill(status=200, content_type="text/html", body="<h1>Prolific</h1>"),
    )


WIDER_THAN_SCREEN = """() => [...document.querySelectorAll('body *')]
  .filter(el => el.getBoundingClientRect().right > window.innerWidth + 1)
  .map(el => el.tagName + '.' + el.className).slice(0, 5)"""


def no_sideways_scroll(page):
    page.wait_for_load_state("load")
    wide = "document.documentElement.scrollWidth > document.documentElement.clientWidth"
    for _ in range(20):  # settle: the check must hold once the page has laid out
        if not page.evaluate(wide):
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"{page.url} scrolls sideways: {page.evaluate(WIDER_THAN_SCREEN)}")


def answer_scenario(page, value_index=3):
    for fieldset in page.locator("fieldset.item").all():
        choices = fieldset.locator("label.choice")
        choices.nth(0 if choices.count() == 2 else value_index).click()  # yes/no: "Yes"
        if fieldset.locator("textarea").count():  # H1 asks for no explanation
            fieldset.locator("textarea").fill(REASON)
    expect(page.locator("#state-P4")).to_contain_text("Saved")


@pytest.mark.parametrize("size", [(360, 740), (1280, 900)], ids=["phone", "desktop"])
def test_whole_path_from_prolific_link_to_completion_redirect(new_context, study, screenshot, size):
    context = new_context(viewport={"width": size[0], "height": size[1]})
    fake_prolific(context)
    page = context.new_page()
    pid = new_pid()
    page.goto(link(study, pid))
    no_sideways_scroll(page)
    screenshot(page, "consent")
    page.get_by_role("button", name="I agree to take part").click()
    expect(page.get_by_role("heading", name="How it works")).to_be_visible()
    page.get_by_role("button", name="Start the first scenario").click()
    for position in (1, 2):
        expect(page.get_by_role("heading", name=f"Scenario {position}", exact=True)).to_be_visible()
        no_sideways_scroll(page)
        answer_scenario(page)
        counter = page.locator("#count-H2")
        expect(counter).to_have_text(f"{len(REASON)} / 2000 characters")
        if position == 1:
            screenshot(page, "scenario")
        page.locator("form.answers button[type=submit]").click()
    expect(page.get_by_role("heading", name="About you")).to_be_visible()
    no_sideways_scroll(page)
    for legend in ("Your age", "Your gender", "The highest level", "Your household"):
        page.locator("fieldset", has_text=legend).get_by_label("Prefer not to say").check()
    page.get_by_role("button", name="Finish and return to Prolific").click()
    expect(page.locator("#completion-code")).to_have_text("DONE1234")
    screenshot(page, "done")
    page.wait_for_url(PROLIFIC, timeout=10_000)
    participant = study.participants.get(prolific_pid=pid)
    assert participant.status == ParticipantStatus.FINISHED
    assert Answer.objects.filter(assignment__participant=participant).count() == 14


def focus(page, selector, limit=80):
    """Press Tab until the focused element matches `selector`."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_keyboard_only_with_visible_focus(new_context, study, screenshot):
    context = new_context(viewport={"width": 360, "height": 740})
    fake_prolific(context)
    page = context.new_page()
    pid = new_pid()
    page.goto(link(study, pid))
    focus(page, "button[value=agree]")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/instructions/$"))
    focus(page, "form button[type=submit]")
    page.keyboard.press("Enter")
    for position in (1, 2):
        page.wait_for_url(re.compile(r"/scenario/\d+/$"))
        expect(page.get_by_role("heading", name=f"Scenario {position}", exact=True)).to_be_visible()
        for code in ("H1", "H2", "H3", "P1", "P2", "P3", "P4"):
            focus(page, f"input[name=value_{code}]")
            outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
            assert outline != "none", "focus must be visible"
            page.keyboard.press("Space")
            if code != "H1":
                page.keyboard.press("ArrowRight")
            if code != "H1":  # H1 asks for no explanation
                focus(page, f"textarea[name=explanation_{code}]")
                page.keyboard.type("Typed with the keyboard alone, as a reason.")
        screenshot(page, "keyboard-scenario")
        focus(page, "form.answers button[type=submit]")
        page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/about-you/$"))
    for name in ("age", "gender", "education", "income"):
        focus(page, f"input[name={name}]")
        page.keyboard.press("Space")
    focus(page, "form button[type=submit]")
    page.keyboard.press("Enter")
    page.wait_for_url(PROLIFIC, timeout=10_000)
    participant = study.participants.get(prolific_pid=pid)
    assert participant.status == ParticipantStatus.FINISHED
    values = set(
        Answer.objects.filter(assignment__participant=participant, item__code="H2").values_list(
            "value", flat=True
        )
    )
    assert values == {"2"}, "Space picked the first point and ArrowRight the second"


def test_closing_the_tab_and_resuming_on_another_device(new_context, study, screenshot):
    phone = new_context(viewport={"width": 360, "height": 740})
    page = phone.new_page()
    pid = new_pid()
    page.goto(link(study, pid))
    page.get_by_role("button", name="I agree to take part").click()
    page.get_by_role("button", name="Start the first scenario").click()
    h2 = page.locator("fieldset#item-H2")
    h2.locator("label.choice").nth(4).click()
    h2.locator("textarea").fill("Saved before the tab closed.")
    expect(page.locator("#state-H2")).to_contain_text("Saved")
    first_url = page.url
    page.close()

    laptop = new_context(viewport={"width": 1280, "height": 900})
    again = laptop.new_page()
    again.goto(link(study, pid))
    assert again.url == first_url, "resumes on the scenario that was being answered"
    expect(again.locator("fieldset#item-H2 input[value='5']")).to_be_checked()
    expect(again.locator("fieldset#item-H2 textarea")).to_have_value("Saved before the tab closed.")
    screenshot(again, "resumed")
    assert Answer.objects.filter(assignment__participant__prolific_pid=pid).count() == 1


def test_script_in_a_scenario_and_an_explanation_stays_inert(new_context, study, screenshot):
    for ss in study.study_scenarios.select_related("scenario"):
        Scenario.objects.filter(pk=ss.scenario_id).update(
            task="Reply to Ann. " + PAYLOAD,
            trajectory='Action: Search\nAction Input: {"q": "x"}\nObservation: {"note": "'
            + PAYLOAD.replace('"', '\\"')
            + '"}',
        )
    page = new_context().new_page()
    page.goto(link(study, new_pid()))
    page.get_by_role("button", name="I agree to take part").click()
    page.get_by_role("button", name="Start the first scenario").click()
    page.locator("fieldset#item-H2 textarea").fill(PAYLOAD)
    expect(page.locator("#state-H2")).to_contain_text("Saved")
    page.reload()
    expect(page.locator(".task-text")).to_contain_text("<script>window.__pwned = 1</script>")
    expect(page.locator(".step .json-string").last).to_contain_text("<img src=x")
    expect(page.locator("fieldset#item-H2 textarea")).to_have_value(PAYLOAD)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    screenshot(page, "payload")
