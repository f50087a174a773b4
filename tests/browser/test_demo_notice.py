"""The demo's notice on its two reports, in Chromium: the survey report of a study whose people
are simulated and whose proxies are offline, and the benchmark report of a grading run whose
answers, grades and expert grades are offline; each states what made its data, with the
parameters as the demo recorded them (from the offline provider over HTTP), and that any
agreement with the paper is by construction. No serious or critical axe violation, on a phone
and on a desktop, and nothing logged to the console or blocked by the CSP."""

import httpx
import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.demo.simulation import grading_simulation, study_simulation
from apps.surveys.models import StudySimulation
from tests.analysis.benchmark_builders import Q, bench_make
from tests.browser.sessions import signed_in
from tests.browser.test_accessibility import SIZES, violations
from tests.browser.test_survey_report import people_rated, watched
from tests.factories import user_with_role

HEADING = "Demo data: an illustration, not a finding"


def reported(url: str, models: list[str]) -> dict:
    return httpx.get(f"{url}/offline/parameters", params=[("model", m) for m in models]).json()


def notice_shows(page, record: dict) -> None:
    """The notice on `page` shows each part of `record`, each parameter in its row."""
    notice = page.get_by_test_id("demo-notice")
    expect(notice.get_by_role("heading", level=2)).to_have_text(HEADING)
    expect(notice).to_contain_text("by construction of these parameters: it is not a finding")
    notice.get_by_text("What generated each part, with its parameters").click()
    expect(notice.get_by_role("heading", level=3)).to_have_text(
        [part["what"] for part in record["parts"]]
    )
    listed = [part["parameters"] for part in record["parts"] if part["parameters"]]
    tables = notice.get_by_test_id("demo-parameters")
    expect(tables).to_have_count(len(listed))
    for table, parameters in zip(tables.all(), listed, strict=True):
        expect(table.locator("tbody th")).to_have_text([p["name"] for p in parameters])
        expect(table.locator("tbody td.num")).to_have_text([str(p["value"]) for p in parameters])


@pytest.mark.parametrize("size", list(SIZES))
def test_the_demo_studys_survey_report_states_what_made_it(
    new_context,
    live_server,
    transactional_db,
    make_study,
    offline_provider_url,
    screenshot,
    size,
):
    study = make_study(live=False, count=4, name="Demo illustration")
    people_rated(study, people=5)
    record = study_simulation(
        people=5,
        proxies={"offline-terse": "Offline Terse (demo)"},
        runs=2,
        writer="Offline Thorough (demo)",
        reported=reported(offline_provider_url, ["offline-terse"]),
    )
    StudySimulation.objects.create(study=study, record=record)
    researcher = user_with_role(Role.RESEARCHER)
    context = signed_in(new_context, live_server, researcher, viewport=SIZES[size])
    problems = watched(context)
    page = context.new_page()

    page.goto(f"/analysis/studies/{study.pk}/survey/")

    notice_shows(page, record)
    screenshot(page, "notice")
    assert violations(page) == []
    assert problems == []


@pytest.mark.parametrize("size", list(SIZES))
def test_the_demo_grading_runs_benchmark_report_states_what_made_it(
    new_context, live_server, transactional_db, offline_provider_url, screenshot, size
):
    questions = [Q(f"d{i}", topic=("accounts", "scams")[i % 2]) for i in range(4)]
    models = {"offline-terse": "Offline demo", "offline-friendly": "Offline demo"}
    answers = {(m, q.key): [0.5, 0.75] for m in models for q in questions}
    bench = bench_make(models=models, questions=questions, answers=answers, name="Demo run")
    names = ["offline-terse", "offline-friendly", "offline-grader", "offline-offline-expert-a"]
    grading = bench.grading
    grading.simulation = grading_simulation(
        answerers={"offline-terse": "offline-terse", "offline-friendly": "offline-friendly"},
        grader=("offline-grader", "Offline Grader (demo)"),
        experts={"offline-offline-expert-a": "Offline Expert A (demo)"},
        reported=reported(offline_provider_url, names),
    )
    grading.save(update_fields=["simulation"])
    researcher = user_with_role(Role.RESEARCHER)
    context = signed_in(new_context, live_server, researcher, viewport=SIZES[size])
    problems = watched(context)
    page = context.new_page()

    page.goto(f"/analysis/grading/{grading.pk}/")

    notice_shows(page, grading.simulation)
    screenshot(page, "notice")
    assert violations(page) == []
    assert problems == []
