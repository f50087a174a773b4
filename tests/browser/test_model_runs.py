"""A researcher's whole path through model runs in Chromium, against a real worker and the
offline provider over HTTP: a sampling run made and launched from the page, watched to its
end through the page's polling, graded by the offline grader in checklist mode, and the
grading run's calibration report read against expert labels.

What the pages say is compared with what the database holds; waits are for a state the page
shows, never a bound on how long it takes.
"""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from playwright.sync_api import expect
from scipy import stats

from apps.accounts.roles import Role
from apps.grading.models import GradingMode, GradingRun, Judgment, ResponseScore
from apps.grading.services.calibration import calibration_create, calibration_set_create
from apps.llm.models import RunStatus
from apps.rubrics import scoring
from apps.runs.models import Response, ResponseStatus, SamplingRun
from tests.browser.sessions import signed_in
from tests.factories import approved_rubric, offline_model, question_make, user_with_role
from tests.grading.calibration_builders import grade
from tests.workers.engine_builders import engine_workers

__all__ = ["engine_workers"]  # the fixture, imported to be found

pytestmark = pytest.mark.worker

QUESTIONS = 3  # the fewest for which Pearson's r says anything (stats.correlation.MIN_PAIRS)
SAMPLES = 2
MODEL_NAMES = ("offline-terse", "offline-friendly")
RUN_TIMEOUT_MS = 180_000  # generous: the machine may be busy; this is no bound on speed


def world(url):
    """Questions with approved rubrics by one expert, the offline models and grader, and the
    researchers: made before the browser opens, committed (the test is transactional)."""
    author = user_with_role(Role.EXPERT, username="alma", first_name="Alma", last_name="Author")
    reviewer = user_with_role(Role.REVIEWER, username="rita", first_name="Rita")
    for _ in range(QUESTIONS):
        approved_rubric(question_make(), author, reviewer)
    return {
        "author": author,
        "models": [offline_model(url, name=name) for name in MODEL_NAMES],
        "grader": offline_model(url, name="offline-grader"),
        "researcher": user_with_role(
            Role.RESEARCHER, username="rahul", first_name="Rahul", last_name="Researcher"
        ),
        "second": user_with_role(
            Role.RESEARCHER, username="sam", first_name="Sam", last_name="Second"
        ),
    }


def expert_labels(made, grading: GradingRun):
    """A calibration set over the graded run, both graders' labels agreeing with the
    auto-rater except on one criterion of the first answer, so every label is final at
    once. In a thread of its own, as tests/browser/test_calibration.py says why."""
    try:
        calibration_set = calibration_set_create(
            sampling_run=grading.sampling_run,
            models=made["models"],
            seed=11,
            second_grader=made["second"],
            user=made["researcher"],
            name="Experts",
        )
        rater = {
            (j.response_id, j.criterion_id): j.met
            for j in Judgment.objects.filter(grading_run=grading)
        }
        samples = list(calibration_set.samples.order_by("question_id"))
        flipped = samples[0].judgments.order_by("criterion__order", "criterion_id").first()
        for sample in samples:

            def verdict(criterion, sample=sample):
                said = rater[(sample.response_id, criterion.pk)]
                return not said if criterion.pk == flipped.criterion_id else said

            grade(sample, made["author"], verdict)
            grade(sample, made["second"], verdict)
        return calibration_create(
            calibration_set=calibration_set, grading_run=grading, user=made["researcher"]
        )
    finally:
        connection.close()


def expected_statistics(calibration) -> tuple[str, float, int]:
    """Pearson r of the answers' scores over all criteria and the accuracy of the labels,
    computed here from the rows, with scipy and the scoring rule called directly."""
    rater_scores, expert_scores, agree, pairs = [], [], 0, 0
    for sample in calibration.calibration_set.samples.all():
        rows = list(sample.judgments.select_related("criterion"))
        met = dict(
            Judgment.objects.filter(
                grading_run=calibration.grading_run, response=sample.response
            ).values_list("criterion_id", "met")
        )
        specs = [
            scoring.ScoredCriterion(
                id=r.criterion_id,
                polarity=r.criterion.polarity,
                kind=r.criterion.kind,
                points=r.criterion.points,
            )
            for r in rows
        ]
        rater_scores.append(scoring.score(specs, met).score)
        expert_scores.append(
            scoring.score(specs, {r.criterion_id: r.final_met for r in rows}).score
        )
        agree += sum(met[r.criterion_id] == r.final_met for r in rows)
        pairs += len(rows)
    n = len(rater_scores)
    if len(set(rater_scores)) < 2 or len(set(expert_scores)) < 2:
        r_text = f"not enough data (n = {n})"
    else:
        r_text = f"r = {stats.pearsonr(rater_scores, expert_scores).statistic:.3f}"
    return r_text, agree / pairs, pairs


def test_a_researcher_samples_grades_and_calibrates_from_the_pages(
    new_context, live_server, engine_workers, offline_provider, screenshot
):
    url = offline_provider(latency_ms=200)  # slow enough that progress is seen moving
    engine_workers.start(pool="prefork")
    made = world(url)
    page = signed_in(new_context, live_server, made["researcher"]).new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    # A new run: the approved-rubric condition is ticked by default and selects them all.
    page.goto("/runs/new/")
    expect(page.get_by_label("With an approved rubric")).to_be_checked()
    expect(page.get_by_test_id("selected-count")).to_have_text(f"{QUESTIONS} questions selected.")
    page.get_by_label("Name").fill("Two offline models")
    for model in made["models"]:
        page.get_by_label(model.display_name).check()
    page.get_by_label("Answers per question").fill(str(SAMPLES))
    page.get_by_role("button", name="Save as a draft").click()

    calls = QUESTIONS * len(MODEL_NAMES) * SAMPLES
    expect(page.get_by_role("heading", level=1)).to_contain_text("Two offline models")
    expect(page.locator("#run-status")).to_have_text("Draft")
    expect(page.get_by_test_id("calls")).to_have_text(str(calls))
    expect(page.get_by_test_id("estimate-row")).to_have_count(len(MODEL_NAMES))
    run = SamplingRun.objects.get(name="Two offline models")
    assert run.responses.count() == calls
    screenshot(page, "draft")

    page.get_by_role("button", name="Launch").click()
    expect(page.locator(".messages")).to_contain_text("Launched")
    progress = page.get_by_test_id("progress")
    # The polled partial replaces itself until the run ends, and the badge in the heading
    # comes along out of band.
    expect(progress).to_contain_text(f"Finished: {calls} answers.", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#run-status")).to_have_text("Finished")
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    done = run.responses.filter(status=ResponseStatus.DONE).count()
    assert done == calls
    expect(page.get_by_test_id("done")).to_have_text(str(done))
    expect(page.get_by_test_id("failed")).to_have_text("0")
    expect(page.get_by_test_id("pending")).to_have_text("0")
    expect(page.get_by_test_id("percent")).to_have_text("100.0% done")
    rows = page.get_by_test_id("model-row")
    expect(rows).to_have_count(len(MODEL_NAMES))
    for model in made["models"]:
        row = rows.filter(has_text=model.display_name)
        expect(row).to_contain_text("offline demo model")
        answered = Response.objects.filter(run=run, model=model, status=ResponseStatus.DONE)
        expect(row.locator("td").nth(1)).to_have_text(str(answered.count()))
    screenshot(page, "sampled")

    # Grading: the offline grader, one call per answer.
    page.get_by_role("link", name="Grade these answers").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("New grading run")
    expect(page.get_by_label("Sampling run")).to_have_value(str(run.pk))
    page.get_by_label("Grader model").select_option(label=str(made["grader"]))
    page.get_by_label(GradingMode.CHECKLIST.label).check()
    page.get_by_role("button", name="Create the draft").click()
    estimate = page.get_by_test_id("estimate")
    expect(estimate.locator("[data-count=estimate-calls]")).to_have_text(str(calls))
    expect(estimate.locator("[data-count=estimate-answers]")).to_have_text(str(calls))
    grading = GradingRun.objects.get(sampling_run=run)
    assert (grading.mode, grading.grader) == (GradingMode.CHECKLIST, made["grader"])
    page.get_by_role("button", name="Launch", exact=True).click()
    expect(page.get_by_test_id("run-status")).to_have_text("Finished", timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("progress").get_by_test_id("done")).to_have_text(str(calls))
    judged = Judgment.objects.filter(grading_run=grading)
    met = judged.filter(met=True).count()
    expect(page.locator("[data-count=judgments-met]")).to_have_text(str(met))
    expect(page.locator("[data-count=judgments-not-met]")).to_have_text(
        str(judged.filter(met=False).count())
    )
    expect(page.locator("[data-count=judgments-error]")).to_have_text("0")
    expect(page.locator("[data-count=judgments-total]")).to_have_text(str(judged.count()))

    # The scores are outside the polled partial: read once the run has ended.
    page.reload()
    scored = ResponseScore.objects.filter(grading_run=grading)
    assert scored.count() == calls
    expect(page.get_by_test_id("scores-missing")).to_have_text(
        f"{calls} of {calls} answers scored; 0 without a score."
    )
    by_model = page.get_by_test_id("scores-by-model").locator("tbody tr")
    expect(by_model).to_have_count(len(MODEL_NAMES))
    for model in made["models"]:
        row = by_model.filter(has_text=model.display_name)
        mine = [s.score for s in scored.filter(response__model=model)]
        mean = 100 * sum(mine) / len(mine)
        expect(row.locator("td").nth(0)).to_have_text(f"{mean:.1f}%")
        expect(row.locator("td").nth(1)).to_have_text(str(len(mine)))
    screenshot(page, "graded")

    # Calibration against expert labels made through the services.
    calibration = ThreadPoolExecutor(1).submit(expert_labels, made, grading).result()
    r_text, accuracy, pairs = expected_statistics(calibration)
    page.goto(f"/grading/calibration/reports/{calibration.pk}/")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Calibration of {grading.name}")
    expect(page.get_by_test_id("grader")).to_contain_text(made["grader"].display_name)
    expect(
        page.get_by_role("heading", name="Response scores: auto-rater against experts")
    ).to_be_visible()
    overall = page.get_by_test_id("score-row").filter(has_text="All criteria")
    expect(overall).to_contain_text(r_text)
    if r_text.startswith("r ="):
        expect(overall).to_contain_text(f"n = {QUESTIONS}")
    expect(page.get_by_test_id("score-row")).to_have_count(3)
    expect(
        page.get_by_role("heading", name="Criterion labels: auto-rater against experts")
    ).to_be_visible()
    labels = page.get_by_test_id("agreement-row").filter(has_text="All criteria")
    expect(labels.get_by_test_id("accuracy")).to_have_text(f"{accuracy:.3f}")
    expect(labels).to_contain_text(f"n = {pairs}")
    # The one criterion the experts labelled otherwise is the one disagreement.
    expect(page.get_by_test_id("disagreement-total")).to_have_text("1 disagreement shown.")
    expect(page.get_by_test_id("disagreement")).to_have_count(1)
    screenshot(page, "calibration")
    assert not errors, errors
