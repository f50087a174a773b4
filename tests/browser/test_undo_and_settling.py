"""Undo and settling in Chromium, by keyboard: a researcher screens a post and undoes it;
the rubric's author settles an answer's disagreements, taking their own label for a
selection, walks to the next answer and reloads onto it. axe finds nothing serious, at
1366 px and at 360 px."""

from concurrent.futures import ThreadPoolExecutor

from django.db import connection
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.grading.models import ExpertJudgment
from apps.questions.models import ScreeningDecision, ScreeningWithdrawal
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import violations
from tests.factories import exclusion_reasons_seeded, sampled_make, user_with_role
from tests.grading.calibration_builders import grade, set_make, world_make

DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 360, "height": 740}


def prepared(url):
    # The answers are sampled in a thread of its own: Playwright keeps an event loop in the
    # test's thread, where the engine's async_to_sync cannot run.
    try:
        world = world_make(url, questions=2, samples=1)
        samples = list(set_make(world).samples.order_by("question_id"))
        for sample in samples:
            ordered = list(
                sample.judgments.order_by("criterion__order", "criterion_id").values_list(
                    "criterion_id", flat=True
                )
            )
            differ = set(ordered[::2])
            grade(sample, world.author, lambda c: True, note="The author's reason.")
            grade(sample, world.second, lambda c, d=differ: c.pk not in d, note="Not quite.")
        return world, samples
    finally:
        connection.close()


def test_a_slip_is_undone_by_key_and_disagreements_are_settled_by_keyboard(
    new_context, live_server, transactional_db, offline_provider_url, screenshot
):
    exclusion_reasons_seeded()
    first_post, second_post = sampled_make(2, topic="scams")
    ana = user_with_role(Role.RESEARCHER, username="ana")
    page = signed_in(new_context, live_server, ana, viewport=DESKTOP).new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    # Screening: I includes the first post, U undoes it and shows it again.
    page.goto("/questions/screening/?topic=scams")
    title = page.get_by_test_id("post-title")
    expect(title).to_have_text(first_post.post.title)
    page.keyboard.press("i")
    expect(title).to_have_text(second_post.post.title)
    expect(page.get_by_role("button", name="U Undo your last decision")).to_be_visible()
    page.keyboard.press("u")
    expect(page.get_by_test_id("done")).to_contain_text(
        f"Undone: your decision on {first_post.post.external_id} is withdrawn"
    )
    expect(title).to_have_text(first_post.post.title)
    expect(title).to_be_focused()
    assert not ScreeningDecision.objects.exists()
    assert ScreeningWithdrawal.objects.get().sampled_id == first_post.pk
    assert violations(page) == []

    # Settling: four disagreements on the first answer, by keyboard alone.
    world, (first, second) = ThreadPoolExecutor(1).submit(prepared, offline_provider_url).result()
    rows = list(
        ExpertJudgment.objects.filter(sample=first, final_met__isnull=True).order_by(
            "criterion__order", "criterion_id"
        )
    )
    assert len(rows) == 4
    page = signed_in(new_context, live_server, world.author, viewport=DESKTOP).new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    address = f"/grading/calibration/answers/{first.pk}/adjudicate/"
    page.goto(address)
    cards = page.get_by_test_id("disagreement")
    expect(cards).to_have_count(4)
    expect(cards.nth(0)).to_be_focused()
    page.keyboard.press("x")  # select the first
    page.keyboard.press("j")
    page.keyboard.press("x")  # and the second
    page.keyboard.press("j")
    page.keyboard.press("0")  # the third: not met (and on to the fourth)
    expect(cards.nth(3)).to_be_focused()
    page.keyboard.press("1")  # the fourth: met
    page.keyboard.press("a")  # the author's label for the selection
    expect(cards.nth(0).locator('input[type=radio][value="1"]')).to_be_checked()
    expect(cards.nth(1).locator('input[type=radio][value="1"]')).to_be_checked()
    expect(cards.nth(0).locator("[data-pick]")).not_to_be_checked()
    screenshot(page, "chosen")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("done")).to_have_text("Saved 4 final labels.")
    saved = [ExpertJudgment.objects.get(pk=row.pk).final_met for row in rows]
    assert saved == [True, True, False, True]
    first.refresh_from_db()
    assert first.resolved_at is not None

    # N walks to the next answer; the address follows it, and a reload lands on it.
    heading = page.get_by_role("heading", level=1)
    page.keyboard.press("n")
    expected = f"Settle the grades of {second.question.external_id}"
    expect(heading).to_have_text(expected)
    following = f"/grading/calibration/answers/{second.pk}/adjudicate/"
    assert page.url.endswith(following)
    expect(page).to_have_title(f"Settle {second.question.external_id} · Assay")
    page.reload()
    expect(heading).to_have_text(expected)
    expect(page.get_by_test_id("walk-place")).to_contain_text("Answer 2 of 2")
    assert violations(page) == []
    page.go_back()
    expect(heading).to_have_text(f"Settle the grades of {first.question.external_id}")

    # On a phone the screen fits its width, and axe still finds nothing serious.
    page.set_viewport_size(PHONE)
    page.goto(following)
    expect(cards).to_have_count(4)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert violations(page) == []
    screenshot(page, "phone")
    assert not errors, errors
