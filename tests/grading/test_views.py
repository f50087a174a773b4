"""The grading-run pages: the form, a draft's estimate and launch, live progress counted
from the rows, fidelity notes, scores with what is missing, retries, the judgments list,
and who may see any of it."""

import re
from decimal import Decimal

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.grading.models import CallState, ChecklistCall, GradingMode, GradingRun, Judgment
from apps.grading.services import grading_run_create, work_for_run
from apps.llm import engine
from apps.llm.models import PromptTemplate, Purpose, RunStatus
from apps.runs.services import sampling_run_create
from tests.factories import offline_model, question_make
from tests.grading.builders import (
    answered_run,
    graded_run,
    judgment_made_error,
    queue_unread,
    queued,
    work_through,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def quiet_queue():
    with queue_unread() as queue:
        yield queue


def criteria_per_answer(sampling_run) -> int:
    """Every rubric here has the same criteria: the factory's three and the shared set."""
    return sampling_run.responses.first().question.rubrics.get().criteria.count()


def counts(html: str) -> dict[str, int]:
    """The judgments' counts (data-count) and the grader calls' (the progress partial's
    data-testid, as calls-<state>)."""
    found = {k: int(v) for k, v in re.findall(r'data-count="([\w-]+)">(\d+)<', html)}
    calls = re.findall(r'data-testid="(done|failed|pending|running|total)">(\d+)<', html)
    states = {"failed": "error"}
    return found | {f"calls-{states.get(k, k)}": int(v) for k, v in calls}


@pytest.fixture
def answered(people, offline_provider_url):
    return answered_run(people, offline_provider_url)


@pytest.fixture
def grader(offline_provider_url):
    return offline_model(offline_provider_url, name="offline-grader")


@pytest.fixture
def client_researcher(client, researcher):
    client.force_login(researcher)
    return client


def test_a_draft_shows_its_estimate_and_launches(client_researcher, answered, grader, quiet_queue):
    page = client_researcher.get(reverse("grading:run_new") + f"?sampling_run={answered.pk}")
    assert f'<option value="{answered.pk}" selected>' in page.content.decode()
    response = client_researcher.post(
        reverse("grading:run_new"),
        {
            "sampling_run": answered.pk,
            "grader": grader.pk,
            "mode": GradingMode.PER_CRITERION,
            "temperature": "0",
            "params": "",
            "budget_usd": "5",
        },
    )
    run = GradingRun.objects.get()
    assert response.status_code == 302 and response.url == reverse(
        "grading:run_detail", args=[run.pk]
    )
    assert run.status == RunStatus.DRAFT and run.params == {"temperature": 0}
    assert run.prompt.purpose == Purpose.GRADE_CRITERION and run.budget_usd == Decimal("5")
    html = client_researcher.get(response.url).content.decode()
    found = counts(html)
    # 2 questions x 2 answers: per-criterion mode makes a call per criterion of each.
    per = criteria_per_answer(answered)
    assert per > 3  # the shared presentation criteria are graded too
    assert (found["estimate-answers"], found["estimate-calls"]) == (4, 4 * per)
    assert "Estimated cost: $" in html
    launched = client_researcher.post(reverse("grading:run_launch", args=[run.pk]), follow=True)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert "Launched" in launched.content.decode()
    assert queued(quiet_queue) >= 1  # the engine's batches were queued for a worker
    again = client_researcher.post(reverse("grading:run_launch", args=[run.pk]), follow=True)
    assert "The grading run is running, not a draft." in again.content.decode()


def test_checklist_estimate_is_one_call_per_answer(client_researcher, answered, grader):
    run = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    found = counts(
        client_researcher.get(reverse("grading:run_detail", args=[run.pk])).content.decode()
    )
    assert (found["estimate-answers"], found["estimate-calls"]) == (4, 4)


def test_a_grading_error_is_shown_on_the_form(client_researcher, answered, grader):
    v2 = PromptTemplate.objects.get(purpose=Purpose.GRADE_CRITERION, version=2)
    response = client_researcher.post(
        reverse("grading:run_new"),
        {
            "sampling_run": answered.pk,
            "grader": grader.pk,
            "mode": GradingMode.CHECKLIST,
            "prompt": v2.pk,
            "temperature": "0.7",
        },
    )
    html = response.content.decode()
    assert response.status_code == 422
    assert "is not a prompt for one call per answer" in html
    assert "The published auto-rater graded at temperature 0; this run uses 0.7." in html
    assert not GradingRun.objects.exists()


def test_the_grading_form_refuses_parameters_that_are_not_generation_settings(
    client_researcher, answered, grader
):
    response = client_researcher.post(
        reverse("grading:run_new"),
        {
            "sampling_run": answered.pk,
            "grader": grader.pk,
            "mode": GradingMode.CHECKLIST,
            "temperature": "0",
            "params": '{"base_url": "http://127.0.0.1:9/v1"}',
        },
    )
    assert response.status_code in (400, 422)
    assert "base_url is not a parameter a call may carry" in response.content.decode()
    assert not GradingRun.objects.exists()


def test_progress_counts_are_the_rows_and_add_up(client_researcher, answered, grader):
    run = graded_run(answered, grader, finish=False)
    engine.batch_run(work=work_for_run(run).name, scope=run.pk, limit=1)
    html = client_researcher.get(reverse("grading:run_detail", args=[run.pk])).content.decode()
    found = counts(html)
    calls = ChecklistCall.objects.filter(grading_run=run)
    for state in ("done", "error", "pending", "running"):
        assert found[f"calls-{state}"] == calls.filter(status=state).count()
    assert found["calls-done"] == 1 and found["calls-pending"] == 3
    assert found["calls-total"] == calls.count() == 4
    judgments = Judgment.objects.filter(grading_run=run)
    assert found["judgments-met"] == judgments.filter(status=CallState.DONE, met=True).count()
    assert found["judgments-not-met"] == judgments.filter(status=CallState.DONE, met=False).count()
    # The three answers still to grade will give a verdict per criterion each.
    per = criteria_per_answer(answered)
    assert found["judgments-pending"] == 3 * per
    assert (
        found["judgments-total"]
        == 4 * per
        == sum(found[f"judgments-{k}"] for k in ("met", "not-met", "error", "pending"))
    )
    assert 'hx-trigger="every 2s"' in html


def test_the_poll_gets_only_the_progress_partial_until_the_run_ends(
    client_researcher, answered, grader
):
    run = graded_run(answered, grader, finish=False)
    url = reverse("grading:run_detail", args=[run.pk])
    polled = client_researcher.get(url, HTTP_HX_REQUEST="true")
    assert "HX-Refresh" not in polled
    partial = polled.content.decode()
    assert partial.lstrip().startswith('<section id="progress"')
    assert 'hx-trigger="every 2s"' in partial and f'href="{url}#progress"' in partial
    assert "Scores" not in partial and "<html" not in partial
    work_through(work_for_run(run).name, run.pk)
    last = client_researcher.get(url, HTTP_HX_REQUEST="true")
    assert last["HX-Refresh"] == "true"  # once, so that the scores shown are the final ones
    ended = last.content.decode()
    assert "Finished" in ended and "hx-trigger" not in ended
    assert counts(ended)["calls-done"] == 4


def test_fidelity_note_for_a_temperature_other_than_zero(client_researcher, answered, grader):
    hot = grading_run_create(
        sampling_run=answered,
        grader=grader,
        mode=GradingMode.CHECKLIST,
        params={"temperature": 0.7},
    )
    cold = grading_run_create(sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST)
    note = "The published auto-rater graded at temperature 0; this run uses 0.7."
    assert (
        note in client_researcher.get(reverse("grading:run_detail", args=[hot.pk])).content.decode()
    )
    html = client_researcher.get(reverse("grading:run_detail", args=[cold.pk])).content.decode()
    assert 'data-testid="fidelity-note"' not in html


def test_fidelity_note_for_a_verdict_first_prompt(client_researcher, answered, grader):
    v1 = PromptTemplate.objects.get(purpose=Purpose.GRADE_CHECKLIST, version=1)
    run = grading_run_create(
        sampling_run=answered, grader=grader, mode=GradingMode.CHECKLIST, prompt=v1
    )
    html = client_researcher.get(reverse("grading:run_detail", args=[run.pk])).content.decode()
    assert "asks for the verdict first" in html


def test_scores_by_model_say_how_many_are_missing_and_why(client_researcher, answered, grader):
    run = graded_run(answered, grader)
    url = reverse("grading:run_detail", args=[run.pk])
    html = client_researcher.get(url).content.decode()
    assert "4 of 4 answers scored; 0 without a score." in html
    judgment_made_error(Judgment.objects.filter(grading_run=run).first())
    html = client_researcher.get(url).content.decode()
    assert "3 of 4 answers scored; 1 without a score: 1 with an error judgment" in html
    table = html[html.index('data-testid="scores-by-model"') :]
    assert 'data-count="missing">1<' in table and "offline demo model" in table
    mean = 100 * sum(s.score for s in run.scores.all()) / 3
    assert f"{mean:.1f}%" in table
    assert "earned points / all points" in html


def test_retry_puts_errored_calls_back(client_researcher, answered, offline_provider, quiet_queue):
    grader = offline_model(offline_provider(rate_malformed=1.0), name="offline-grader")
    run = graded_run(answered, grader)
    html = client_researcher.get(reverse("grading:run_detail", args=[run.pk])).content.decode()
    assert "<td>Answer failed validation</td><td>4</td>" in html and "Retry these" in html
    response = client_researcher.post(
        reverse("grading:run_retry", args=[run.pk]),
        {"error_kind": "invalid_output"},
        follow=True,
    )
    assert "4 failed calls to ask again." in response.content.decode()
    assert ChecklistCall.objects.filter(grading_run=run, status=CallState.PENDING).count() == 4
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert queued(quiet_queue) >= 1


def test_pause_resume_cancel_and_budget(client_researcher, answered, grader, quiet_queue):
    run = graded_run(answered, grader, finish=False)
    post = lambda name, **data: client_researcher.post(  # noqa: E731
        reverse(f"grading:{name}", args=[run.pk]), data, follow=True
    )
    post("run_pause")
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED
    post("run_resume")
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    post("run_budget", budget_usd="2.50")
    run.refresh_from_db()
    assert run.budget_usd == Decimal("2.50")
    post("run_cancel")
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert "cannot be running now" in post("run_resume").content.decode()


def test_judgments_list_filters_and_labels_offline_models(client_researcher, answered, grader):
    run = graded_run(answered, grader)
    url = reverse("grading:judgments", args=[run.pk])
    html = client_researcher.get(url).content.decode()
    assert html.count('data-testid="judgment"') == 4 * criteria_per_answer(answered)
    assert "offline demo model" in html
    not_met = Judgment.objects.filter(grading_run=run, met=False).count()
    assert (
        client_researcher.get(url + "?met=no").content.decode().count('data-testid="judgment"')
        == not_met
    )
    negatives = Judgment.objects.filter(grading_run=run, criterion__polarity="negative").count()
    filtered = client_researcher.get(url + "?polarity=negative").content.decode()
    assert filtered.count('data-testid="judgment"') == negatives
    assert 0 < negatives < Judgment.objects.filter(grading_run=run).count()


def test_list_shows_runs_with_progress(client_researcher, answered, grader):
    run = graded_run(answered, grader)
    html = client_researcher.get(reverse("grading:list")).content.decode()
    assert run.name in html and "4 of 4 calls made" in html and "Finished" in html


# --- permissions ---------------------------------------------------------------------------


@pytest.fixture
def draft(db):
    model = offline_model("http://127.0.0.1:9", name="offline-grader")
    question = question_make()
    sampling = sampling_run_create(
        name="S", questions=[question], models=[model], samples_per_item=1
    )
    return grading_run_create(sampling_run=sampling, grader=model, mode=GradingMode.CHECKLIST)


PAGES = [
    "grading:list",
    "grading:run_new",
    "grading:run_detail",
    "grading:judgments",
    "grading:export_judgments",
    "grading:export_scores",
]
ACTIONS = [
    "grading:run_launch",
    "grading:run_pause",
    "grading:run_resume",
    "grading:run_cancel",
    "grading:run_budget",
    "grading:run_retry",
]


def _url(name, run):
    return (
        reverse(name)
        if name in ("grading:list", "grading:run_new")
        else reverse(name, args=[run.pk])
    )


@pytest.mark.parametrize("name", PAGES + ACTIONS)
@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER])
def test_only_researchers_reach_grading(role_client, client, draft, name, role):
    url = _url(name, draft)
    if role is None:
        response = client.get(url) if name in PAGES else client.post(url)
        assert response.status_code == 302 and "/login" in response.url
    else:
        c = role_client(role)
        assert (c.get(url) if name in PAGES else c.post(url)).status_code == 403
    draft.refresh_from_db()
    assert draft.status == RunStatus.DRAFT


@pytest.mark.parametrize("name", PAGES)
def test_researchers_see_every_page(role_client, draft, name):
    assert role_client(Role.RESEARCHER).get(_url(name, draft)).status_code == 200


@pytest.mark.parametrize("name", ACTIONS)
def test_actions_take_only_post(role_client, draft, name):
    assert role_client(Role.RESEARCHER).get(_url(name, draft)).status_code == 405
    draft.refresh_from_db()
    assert draft.status == RunStatus.DRAFT


def test_an_adaptive_grader_has_its_limit_drawn_beside_its_calls(
    client_researcher, answered, offline_provider_url
):
    """The grader that finds its concurrency by itself is listed by model, with its limit's
    history (apps/llm/limit_history.py); a grader with a fixed limit is not."""
    import datetime as dt

    from apps.grading.selectors.runs import grading_progress
    from apps.llm.models import LimitChange

    adaptive = offline_model(
        offline_provider_url,
        name="offline-grader",
        display_name="Adaptive <grader>",
        adapts_concurrency=True,
        min_concurrent=2,
        max_concurrent=16,
    )
    run = graded_run(answered, adaptive)
    LimitChange.objects.filter(model=adaptive).delete()  # the ones the calls just made
    at = run.launched_at + dt.timedelta(milliseconds=10)
    LimitChange.objects.create(model=adaptive, at=at, old=2, new=3, why="start", in_flight=2)
    progress = grading_progress(run=run)
    (row,) = progress.models
    assert row.model == adaptive and row.counts.done == ChecklistCall.objects.count() == 4
    assert row.limits.current == 3 and row.limits.changes_total == 1
    html = client_researcher.get(reverse("grading:run_detail", args=[run.pk])).content.decode()
    assert 'data-testid="limit-history"' in html
    assert "Adaptive &lt;grader&gt;" in html and "Adaptive <grader>" not in html

    fixed = graded_run(answered, offline_model(offline_provider_url, name="offline-grader"))
    assert grading_progress(run=fixed).models == []
    html = client_researcher.get(reverse("grading:run_detail", args=[fixed.pk])).content.decode()
    assert 'data-testid="limit-history"' not in html
