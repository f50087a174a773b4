"""The rubric's author grades a calibration answer in Chromium with the keyboard alone, and
the labels and the note are saved."""

from concurrent.futures import ThreadPoolExecutor

from django.db import connection
from playwright.sync_api import expect

from apps.grading.models import ExpertJudgment
from tests.browser.sessions import signed_in
from tests.grading.calibration_builders import set_make, world_make


def prepared(url):
    # Playwright keeps an event loop running in the test's thread, where the engine's
    # async_to_sync cannot run: the answers are sampled in a thread of their own (the test
    # is transactional, so what it commits is seen here).
    try:
        world = world_make(url, questions=2, samples=1)
        return world, set_make(world)
    finally:
        connection.close()


def test_the_author_grades_an_answer_with_the_keyboard_only(
    new_context, live_server, transactional_db, offline_provider_url, screenshot
):
    world, calibration_set = ThreadPoolExecutor(1).submit(prepared, offline_provider_url).result()
    first, second = calibration_set.samples.order_by("question_id")
    criteria = list(first.judgments.order_by("criterion__order", "criterion_id"))
    assert len(criteria) == 8

    page = signed_in(new_context, live_server, world.author).new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"/grading/calibration/answers/{first.pk}/")
    cards = page.get_by_test_id("criterion")
    expect(cards).to_have_count(8)
    # The first criterion has the focus on arrival, visibly.
    expect(cards.nth(0)).to_be_focused()
    outline = cards.nth(0).evaluate("e => getComputedStyle(e).outlineStyle")
    assert outline != "none"

    # Met, not met, alternately; J and K move without marking; E writes a note.
    page.keyboard.press("y")
    expect(cards.nth(1)).to_be_focused()
    page.keyboard.press("e")
    page.keyboard.type("Says nothing about sign-in activity.")
    page.keyboard.press("Escape")
    expect(cards.nth(1)).to_be_focused()
    page.keyboard.press("n")
    page.keyboard.press("k")
    expect(cards.nth(1)).to_be_focused()
    page.keyboard.press("j")
    for index in range(2, 8):
        expect(cards.nth(index)).to_be_focused()
        page.keyboard.press("1" if index % 2 == 0 else "0")
    expect(page.get_by_test_id("marked")).to_contain_text("8 of 8")
    screenshot(page, "marked")
    page.keyboard.press("Enter")  # every criterion is marked: saves and moves on

    expect(page.get_by_role("heading", level=1)).to_have_text(
        f"Grade the answer to {second.question.external_id}"
    )
    expect(page.locator(".messages")).to_contain_text("is saved")
    labels = [ExpertJudgment.objects.get(pk=row.pk).first_met for row in criteria]
    assert labels == [True, False, True, False, True, False, True, False]
    noted = ExpertJudgment.objects.get(pk=criteria[1].pk)
    assert noted.first_note == "Says nothing about sign-in activity."
    first.refresh_from_db()
    assert first.first_done_at is not None and first.second_done_at is None
    assert not errors, errors
