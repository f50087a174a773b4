"""A study's page in Chromium follows its ratings without a reload: a participant finishes and
another returns, through the services, and the counts, the table of scenarios and the
summary (the one live region) change on the page; axe finds no serious or critical
violation, on a desktop and on a phone."""

from django.test import Client
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.surveys import services
from apps.surveys.models import Participant
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import violations
from tests.browser.test_survey_participant import no_sideways_scroll
from tests.factories import user_with_role
from tests.surveys.flow import consent, finish

POLLED_MS = 20_000  # a poll every 5 s; generous, the machine may be busy


def test_the_study_page_follows_its_ratings_without_a_reload(
    new_context, live_server, transactional_db, make_study, screenshot
):
    study = make_study(count=4, scenarios_per_participant=2, ratings_per_scenario=2)
    pid, _ = consent(Client(), study)
    rating = Participant.objects.get(study=study, prolific_pid=pid)
    researcher = user_with_role(Role.RESEARCHER)
    context = signed_in(
        new_context, live_server, researcher, viewport={"width": 1366, "height": 900}
    )
    page = context.new_page()
    page.goto(f"/studies/{study.pk}/")
    summary = page.get_by_test_id("progress-summary")
    expect(summary).to_have_text(
        "0 of 8 ratings completed, 2 in progress; 0 of 4 scenarios complete."
    )
    expect(page.get_by_test_id("reserved")).to_have_text("2")
    expect(page.get_by_test_id("scenario-row")).to_have_count(4)
    # The summary is the only live region: the counts and the table change silently.
    assert page.locator("#study-progress [role=status], #study-progress [aria-live]").count() == 0
    assert summary.get_attribute("role") == "status"
    assert violations(page) == []
    page.evaluate("window.notReloaded = true")

    # Another participant rates two scenarios and finishes.
    finish(Client(), study)
    expect(page.get_by_test_id("completed")).to_have_text("2", timeout=POLLED_MS)
    expect(summary).to_contain_text("2 of 8 ratings completed, 2 in progress")
    expect(page.get_by_test_id("scenario-completed").filter(has_text="1 / 2")).to_have_count(2)
    assert page.evaluate("window.notReloaded") is True
    screenshot(page, "desktop")

    # On a phone: the first participant returns their submission.
    page.set_viewport_size({"width": 360, "height": 740})
    services.participant_mark_returned(participant=rating)
    expect(page.get_by_test_id("returned")).to_have_text("2", timeout=POLLED_MS)
    expect(page.get_by_test_id("reserved")).to_have_text("0")
    expect(summary).to_contain_text("2 of 8 ratings completed, 0 in progress")
    assert page.evaluate("window.notReloaded") is True
    no_sideways_scroll(page)
    assert violations(page) == []
    screenshot(page, "phone")
