"""A grading run's answer viewer in Chromium, on a desktop and on a phone: reached from the
run's page, filtered by a verdict, moved through with J, K and the arrows and with its
buttons, the URL naming the answer shown (a reload lands on it), the answer shown kept in
sight in the list; axe finds no serious or critical violation, the page is no wider than the
screen, and nothing is logged to the console or blocked by the Content-Security-Policy."""

import re

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from tests.analysis.benchmark_builders import ERROR, FAILED, Q, bench_make
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import violations
from tests.browser.test_survey_report import watched
from tests.factories import user_with_role

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 360, "height": 740}}


@pytest.fixture
def world(transactional_db):
    questions = [Q(f"v{i}", topic=("accounts", "scams", "harassment")[i % 3]) for i in range(8)]
    answers = {
        (model, q.key): [((3 + 4 * m + 5 * i + s) % 21) / 20 for s in range(2)]
        for m, model in enumerate(("Alpha", "offline-beta"))
        for i, q in enumerate(questions)
    }
    answers[("offline-beta", "v0")] = [ERROR, 0.4]
    answers[("offline-beta", "v1")] = [FAILED]
    bench = bench_make(
        models={"Alpha": "Alpha", "offline-beta": "Beta"}, questions=questions, answers=answers
    )
    bench.sampling.responses.filter(pk=bench.answer("Alpha", "v2").pk).update(
        text="<script>window.__hacked = true</script>\nStep 1: change the password."
    )
    researcher = user_with_role(Role.RESEARCHER, username="rahul", first_name="Rahul")
    return bench, researcher


def shown(page) -> str:
    return page.get_by_test_id("answer-detail").get_attribute("data-answer")


def test_filter_by_verdict_and_move_with_the_keys_on_a_desktop_and_a_phone(
    new_context, live_server, world, screenshot
):
    bench, researcher = world
    run = bench.grading
    context = signed_in(new_context, live_server, researcher, viewport=SIZES["desktop"])
    problems = watched(context)
    page = context.new_page()
    page.goto(f"/grading/{run.pk}/")
    page.get_by_test_id("answers-link").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Answers")
    expect(page.get_by_test_id("answer-item")).to_have_count(len(bench.responses))
    found = {"every answer": violations(page)}

    page.get_by_label("Verdict").focus()
    page.get_by_label("Verdict").select_option(label="Not met")
    expect(page).to_have_url(re.compile(r"verdict=not_met"))
    items = page.get_by_test_id("answer-item")
    expect(page.get_by_test_id("answer-count")).to_contain_text("match these filters")
    order = [item.get_attribute("data-answer-id") for item in items.all()]
    assert 3 < len(order) < len(bench.responses)
    assert shown(page) == order[0]
    expect(page.locator(".criterion.matched").first).to_be_visible()
    # A filter changed by its select keeps the focus on it.
    expect(page.get_by_label("Verdict")).to_be_focused()

    page.locator("body").click(position={"x": 2, "y": 2})
    page.keyboard.press("j")
    expect(page.get_by_test_id("answer-detail")).to_have_attribute("data-answer", order[1])
    expect(page).to_have_url(re.compile(rf"verdict=not_met&answer={order[1]}$"))
    expect(page.locator("#answer-heading")).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_test_id("answer-detail")).to_have_attribute("data-answer", order[2])
    page.keyboard.press("k")
    expect(page.get_by_test_id("answer-detail")).to_have_attribute("data-answer", order[1])
    page.get_by_role("link", name="Next answer").click()
    expect(page.get_by_test_id("answer-detail")).to_have_attribute("data-answer", order[2])
    expect(page.get_by_test_id("answer-position")).to_have_text(f"Answer 3 of {len(order)}")
    current = page.locator(f'[data-answer-id="{order[2]}"] a')
    expect(current).to_have_attribute("aria-current", "true")
    expect(current).to_be_in_viewport()
    found["filtered, moved"] = violations(page)
    screenshot(page, "desktop")

    page.go_back()
    expect(page).to_have_url(re.compile(rf"answer={order[1]}$"))
    expect(page.get_by_test_id("answer-detail")).to_have_attribute("data-answer", order[1])
    page.reload()
    expect(page.get_by_test_id("answer-detail")).to_have_attribute("data-answer", order[1])
    expect(page.get_by_label("Verdict")).to_have_value("not_met")

    # An answer's text is shown as written, never run.
    page.goto(f"/grading/{run.pk}/answers/?answer={bench.answer('Alpha', 'v2').pk}")
    expect(page.get_by_test_id("answer-text")).to_contain_text("<script>window.__hacked")
    assert page.evaluate("window.__hacked") is None
    expect(page.get_by_test_id("answer-detail").locator(".badge.offline")).to_have_count(0)
    page.goto(f"/grading/{run.pk}/answers/?answer={bench.answer('offline-beta', 'v0', 1).pk}")
    expect(page.get_by_test_id("answer-detail").locator(".badge.offline")).to_have_text(
        "offline demo model"
    )
    found["one answer"] = violations(page)

    # On a phone: the list above the answer, in a box of its own; the keys work the same.
    page.set_viewport_size(SIZES["phone"])
    page.goto(f"/grading/{run.pk}/answers/?verdict=not_met&answer={order[1]}")
    expect(page.get_by_test_id("answer-detail")).to_have_attribute("data-answer", order[1])
    page.keyboard.press("j")
    expect(page.get_by_test_id("answer-detail")).to_have_attribute("data-answer", order[2])
    expect(page).to_have_url(re.compile(rf"answer={order[2]}$"))
    expect(page.locator(f'[data-answer-id="{order[2]}"] a')).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES["phone"]["width"]
    found["phone"] = violations(page)
    screenshot(page, "phone")
    assert found == {label: [] for label in found}
    assert problems == []
