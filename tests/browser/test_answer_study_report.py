"""An answer study's report in Chromium, on a phone and on a desktop: the page never scrolls
sideways (a wide table scrolls in its own region), its contents lead to sections that fold,
axe finds no serious or critical violation, and nothing is logged to the console or blocked
by the Content-Security-Policy."""

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from tests.analysis.answer_study_builders import hand_study_make
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import violations
from tests.browser.test_survey_report import watched
from tests.conftest import ARTIFACTS
from tests.factories import user_with_role

WIDTHS = {360: {"width": 360, "height": 740}, 1366: {"width": 1366, "height": 800}}


@pytest.fixture
def world(transactional_db):
    built = hand_study_make()
    return built, user_with_role(Role.RESEARCHER, username="rahul", first_name="Rahul")


def test_the_answer_study_report_fits_the_screen_and_passes_axe(new_context, live_server, world):
    built, researcher = world
    url = f"/analysis/studies/{built.study.pk}/answers/"
    for width, viewport in WIDTHS.items():
        context = signed_in(new_context, live_server, researcher, viewport=viewport)
        problems = watched(context)
        page = context.new_page()
        page.goto(url)
        expect(page.get_by_test_id("headline")).to_be_visible()
        page.wait_for_load_state("load")

        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width

        # The contents lead to a section, which folds and opens again.
        section = page.locator("section.report-section").first
        slug = section.get_attribute("id")
        page.get_by_test_id("contents").locator(f"a[href='#{slug}']").click()
        expect(page).to_have_url(f"{live_server.url}{url}#{slug}")
        summary = section.locator("summary").first
        body = section.locator("details > :not(summary)").first
        expect(body).to_be_visible()
        summary.click()
        expect(body).to_be_hidden()
        summary.click()
        expect(body).to_be_visible()

        assert violations(page) == [], width
        page.evaluate("window.scrollTo(0, 0)")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"answer-study-report-{width}.png"), full_page=True)
        assert problems == []
        context.close()
