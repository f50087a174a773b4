"""axe-core in Chromium over the pages people depend on: a participant's whole path, the
rubric editor, the researcher's study pages, and the model-run pages (sampling, grading,
calibration). No serious or critical violation, on a phone and on a desktop."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.db import connection
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.grading.services.calibration import calibration_create
from apps.runs.services import sampling_run_create
from apps.surveys import services as survey_services
from tests.analysis.builders import proxy
from tests.browser.sessions import signed_in
from tests.browser.test_mobile import answer
from tests.browser.test_survey_participant import fake_prolific, link
from tests.browser.test_survey_report import people_rated, rated
from tests.factories import (
    assign,
    draft_with_criteria,
    new_pid,
    offline_model,
    question_make,
    user_with_role,
)
from tests.grading.calibration_builders import graded, grader_model, set_make, world_make

AXE = Axe()
BLOCKING = {"serious", "critical"}
SIZES = {"phone": {"width": 360, "height": 740}, "desktop": {"width": 1280, "height": 900}}


def violations(page) -> list[str]:
    """The serious and critical violations on the page as it is now, one line each."""
    page.wait_for_load_state("load")
    results = AXE.run(page).response
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
        for v in results["violations"]
        if v["impact"] in BLOCKING
    ]


@pytest.fixture
def study(transactional_db, make_study):
    return make_study(count=6, scenarios_per_participant=2, name="Messages at work")


@pytest.mark.parametrize("size", list(SIZES))
def test_a_folded_result_has_no_serious_accessibility_violations_closed_or_open(
    new_context, transactional_db, make_study, size
):
    study = make_study(count=1, scenarios_per_participant=1)  # main100: one long result
    context = new_context(viewport=SIZES[size])
    fake_prolific(context)
    page = context.new_page()
    page.goto(link(study, new_pid()))
    page.get_by_role("button", name="I agree to take part").click()
    page.get_by_role("button", name="Start the first scenario").click()
    summary = page.locator("details.fold > summary")
    expect(summary).to_have_count(1)
    found = {"closed": violations(page)}
    summary.click()
    expect(page.locator("details.fold dl.json-object").first).to_be_visible()
    found["open"] = violations(page)
    assert found == {"closed": [], "open": []}


@pytest.mark.parametrize("size", list(SIZES))
def test_participant_pages_have_no_serious_accessibility_violations(new_context, study, size):
    context = new_context(viewport=SIZES[size])
    fake_prolific(context)
    page = context.new_page()
    found = {}
    page.goto(link(study, new_pid()))
    found["consent"] = violations(page)
    page.get_by_role("button", name="I agree to take part").click()
    expect(page.get_by_role("heading", name="How it works")).to_be_visible()
    found["instructions"] = violations(page)
    page.get_by_role("button", name="Start the first scenario").click()
    expect(page.get_by_role("heading", name="Scenario 1", exact=True)).to_be_visible()
    found["scenario"] = violations(page)
    page.locator("form.answers button[type=submit]").click()  # nothing answered yet
    expect(page.get_by_text("Some answers are missing")).to_be_visible()
    found["scenario with errors"] = violations(page)
    for position in (1, 2):
        expect(page.get_by_role("heading", name=f"Scenario {position}", exact=True)).to_be_visible()
        for item in page.locator("fieldset.item").all():
            answer(item)
        expect(page.locator("fieldset.item .save-state").last).to_contain_text("Saved")
        page.locator("form.answers button[type=submit]").click()
    expect(page.get_by_role("heading", name="About you")).to_be_visible()
    found["demographics"] = violations(page)
    for fieldset in page.locator("fieldset.item").all():
        fieldset.locator("label.choice").last.click()
    page.get_by_role("button", name="Finish and return to Prolific").click()
    page.wait_for_url("**/done/**")
    # Going back to Prolific by itself, unless the participant stays (a timed redirect is
    # one they can stop).
    page.get_by_role("button", name="Stay on this page").click()
    expect(page.get_by_text("You are staying on this page")).to_be_visible()
    found["completion"] = violations(page)
    page.wait_for_timeout(3500)  # past the redirect's pause: it was stopped
    assert "/done/" in page.url
    assert {name: lines for name, lines in found.items() if lines} == {}


@pytest.mark.parametrize("size", list(SIZES))
def test_the_rubric_editor_has_no_serious_accessibility_violations(
    new_context, live_server, migrated_rows, size
):
    expert = user_with_role(Role.EXPERT, first_name="Erin", last_name="Expert")
    reviewer = user_with_role(Role.REVIEWER)
    question = question_make()
    assign(question, author=expert, reviewer=reviewer)
    rubric = draft_with_criteria(question, expert)
    found = {}
    for who, user in (("expert", expert), ("reviewer", reviewer)):
        page = signed_in(new_context, live_server, user, viewport=SIZES[size]).new_page()
        page.goto(f"/rubrics/{rubric.pk}/")
        expect(page.get_by_test_id("criterion").first).to_be_visible()
        found[who] = violations(page)
    page = signed_in(new_context, live_server, expert, viewport=SIZES[size]).new_page()
    page.goto(f"/rubrics/{rubric.pk}/")
    page.locator("#add-criterion").get_by_role("button", name="Add criterion").click()
    expect(page.locator("#add-criterion .error")).to_be_visible()
    found["refused addition"] = violations(page)
    assert {name: lines for name, lines in found.items() if lines} == {}


@pytest.mark.parametrize("size", list(SIZES))
def test_the_study_pages_have_no_serious_accessibility_violations(
    new_context, live_server, study, size
):
    researcher = user_with_role(Role.RESEARCHER)
    page = signed_in(new_context, live_server, researcher, viewport=SIZES[size]).new_page()
    found = {}
    for name, url in (
        ("home", "/"),
        ("study list", "/studies/"),
        ("study detail", f"/studies/{study.pk}/"),
        ("usage", "/llm/usage/"),
    ):
        page.goto(url)
        found[name] = violations(page)
    assert {name: lines for name, lines in found.items() if lines} == {}


OPEN_DETAILS = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"


@pytest.mark.parametrize("size", list(SIZES))
def test_the_survey_report_and_proxy_run_pages_have_no_serious_accessibility_violations(
    new_context, live_server, study, offline_provider_url, size
):
    """With people's and two proxy models' answers stored, a draft proxy run and a running
    one (no worker: it stays running). Every <details> is opened: what it hides is checked."""
    models = [
        offline_model(offline_provider_url, name=n) for n in ("offline-terse", "offline-friendly")
    ]
    people_rated(study, people=5)
    for seed, model in enumerate(models * 2):
        rated(proxy(study, model, run_index=seed // len(models) + 1), seed=100 + seed)
    draft = survey_services.proxy_run_create(study=study, models=models[:1], runs_per_model=2)
    running = survey_services.proxy_run_launch(
        run=survey_services.proxy_run_create(study=study, models=models[1:], runs_per_model=1)
    )
    researcher = user_with_role(Role.RESEARCHER)
    page = signed_in(new_context, live_server, researcher, viewport=SIZES[size]).new_page()
    found = {}
    for name, url in (
        ("survey report", f"/analysis/studies/{study.pk}/survey/"),
        ("disagreements", f"/analysis/studies/{study.pk}/survey/disagreements/"),
        ("proxy runs", f"/studies/{study.pk}/proxies/"),
        ("draft proxy run", f"/studies/{study.pk}/proxies/{draft.pk}/"),
        ("running proxy run", f"/studies/{study.pk}/proxies/{running.pk}/"),
    ):
        assert page.goto(url).ok, name
        page.evaluate(OPEN_DETAILS)
        found[name] = violations(page)
    expect(page.get_by_test_id("progress")).to_be_visible()
    assert {name: lines for name, lines in found.items() if lines} == {}


def model_runs_made(url):
    """A finished sampling run graded in checklist mode, a calibration of it, and a draft
    run, made in a thread of its own: the engine's async_to_sync cannot run in the test's
    thread, where Playwright keeps its event loop (tests/browser/test_calibration.py)."""
    try:
        world = world_make(url, questions=2, samples=1)
        grading = graded(world.run, grader_model(url))
        calibration_set = set_make(world)
        calibration = calibration_create(
            calibration_set=calibration_set, grading_run=grading, user=world.researcher
        )
        draft = sampling_run_create(
            name="Draft run",
            questions=world.questions,
            models=world.models[:1],
            samples_per_item=2,
        )
        sample = calibration_set.samples.order_by("question_id").first()
        return world, draft, grading, calibration, sample
    finally:
        connection.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_the_model_run_pages_have_no_serious_accessibility_violations(
    new_context, live_server, transactional_db, offline_provider_url, size
):
    made = ThreadPoolExecutor(1).submit(model_runs_made, offline_provider_url).result()
    world, draft, grading, calibration, sample = made
    page = signed_in(new_context, live_server, world.researcher, viewport=SIZES[size]).new_page()
    found = {}
    for name, url in (
        ("sampling runs", "/runs/"),
        ("new sampling run", "/runs/new/"),
        ("draft run", f"/runs/{draft.pk}/"),
        ("finished run", f"/runs/{world.run.pk}/"),
        ("grading runs", "/grading/"),
        ("grading run", f"/grading/{grading.pk}/"),
        ("calibration report", f"/grading/calibration/reports/{calibration.pk}/"),
    ):
        page.goto(url)
        found[name] = violations(page)
    expect(page.get_by_test_id("score-row").first).to_be_visible()
    author = signed_in(new_context, live_server, world.author, viewport=SIZES[size]).new_page()
    author.goto(f"/grading/calibration/answers/{sample.pk}/")
    expect(author.get_by_test_id("criterion").first).to_be_focused()
    found["calibration grading (author)"] = violations(author)
    assert {name: lines for name, lines in found.items() if lines} == {}


def question_bank_made():
    """A bank part-way through every stage: sampled posts, a settled pair and an open post,
    a question labelled and one disputed, a rewrite waiting for review (made in a thread of
    its own: the ORM is synchronous and Playwright's loop runs in this one)."""
    from apps.llm.models import ModelKind
    from apps.questions.models import EmbeddingCosine, EmbeddingCosineJob
    from apps.questions.services import rewrite_approve
    from apps.questions.services.screening import screening_decide
    from apps.questions.services.strata import question_label, question_label_verify
    from tests.factories import (
        ModelConfigFactory,
        exclusion_reasons_seeded,
        question_from_post_make,
        rewrite_made,
        sampled_make,
    )

    first = user_with_role(Role.RESEARCHER, username="ana")
    second = user_with_role(Role.RESEARCHER, username="ben")
    exclusion_reasons_seeded()
    settled, _open = sampled_make(2, topic="scams", body="I paid a fake courier fee. What now?")
    for who in (first, second):
        screening_decide(sampled=settled, researcher=who, include=True)
    disputed = question_from_post_make(body="Someone logs into my email. I changed it. Why?")
    question_label(
        question=disputed,
        researcher=first,
        mentions_prior_attempt=True,
        needs_sensemaking=True,
        needs_guidance=False,
    )
    question_label_verify(
        question=disputed,
        researcher=second,
        mentions_prior_attempt=False,
        needs_sensemaking=True,
        needs_guidance=True,
    )
    rewrite = rewrite_made(
        question_from_post_make(body="Throwaway. My ex reads my texts. How do I stop it?"),
        text="Can you help me stop my ex from reading my texts?",
    )
    # An approved rewrite whose cosine of embeddings failed: the embeddings page's tables.
    text = "A fake courier asked me for a fee. What now?"
    approved = rewrite_approve(
        rewrite=rewrite_made(question_from_post_make(body=text + " Thanks"), text=text),
        text=text,
        user=first,
    )
    embedder = ModelConfigFactory(name="offline-embed", kind=ModelKind.EMBEDDING)
    job = EmbeddingCosineJob.objects.create(model=embedder, status="finished")
    EmbeddingCosine.objects.create(
        question=approved,
        model=embedder,
        job=job,
        status="failed",
        error_kind="rate_limited",
        error="offline-embed: gave up after 6 attempts; last error: RateLimitError",
    )
    return first, rewrite


@pytest.mark.parametrize("size", list(SIZES))
def test_the_question_bank_pages_have_no_serious_accessibility_violations(
    new_context, live_server, transactional_db, size
):
    researcher, rewrite = ThreadPoolExecutor(1).submit(question_bank_made).result()
    page = signed_in(new_context, live_server, researcher, viewport=SIZES[size]).new_page()
    found = {}
    for name, url in (
        ("bank", "/questions/"),
        ("samples", "/questions/samples/"),
        ("screening", "/questions/screening/"),
        ("screening progress", "/questions/screening/progress/"),
        ("strata labels", "/questions/labels/"),
        ("disputed labels", "/questions/labels/disputes/"),
        ("quotas", "/questions/quotas/"),
        ("rewriting", "/questions/rewrites/"),
        ("rewrite review", f"/questions/rewrites/{rewrite.pk}/"),
        ("cosine of embeddings", "/questions/rewrites/embeddings/"),
    ):
        page.goto(url)
        found[name] = violations(page)
    assert {name: lines for name, lines in found.items() if lines} == {}
