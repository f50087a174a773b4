"""The sampling-run pages: list, new run, run page (estimate, launch, live progress,
actions), responses; against the offline provider over real HTTP, the engine run in this
process (a worker's chain does the same)."""

import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from apps.accounts.roles import Role
from apps.llm import engine
from apps.llm.models import Purpose, RunStatus
from apps.llm.selectors import prompt_current
from apps.questions.models import Topic
from apps.runs import selectors
from apps.runs.models import Response, ResponseStatus, RunKind, SamplingRun
from apps.runs.services import SAMPLE_WORK, reference_run_get, sampling_run_launch
from tests.factories import offline_model, question_make, questions_by_need
from tests.runs.builders import HX, graded_questions, offline_models, run_made, run_worked

pytestmark = pytest.mark.django_db

NOWHERE = "http://127.0.0.1:9"  # a provider nobody calls: for pages that make no call
GET_PAGES = ["detail", "responses", "export_responses"]
POST_ACTIONS = ["launch", "pause", "resume", "cancel", "budget", "retry"]


@pytest.fixture
def draft():
    return run_made(models=offline_models(NOWHERE), name="Permissions")


def url(name: str, run=None) -> str:
    return reverse(f"runs:{name}", args=[run.pk] if run is not None else [])


def as_shown(cost: Decimal) -> str:
    """A cost as the pages write it: Django's floatformat:4, which rounds half up (Python's
    format rounds half to even: 0.00525 would be 0.0052 here and 0.0053 on the page)."""
    return str(cost.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def shown(body: str, testid: str) -> int:
    found = re.search(rf'data-testid="{testid}">([\d.]+)<', body)
    assert found, f"{testid} not on the page"
    return int(found.group(1))


# --- permissions ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["list", "new", *GET_PAGES])
@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER])
def test_every_page_is_for_researchers_only(role_client, client, draft, name, role):
    target = url(name, None if name in ("list", "new") else draft)
    response = (role_client(role) if role else client).get(target)
    if role is None:
        assert response.status_code == 302 and "/login/" in response["Location"]
    elif role == Role.RESEARCHER:
        assert response.status_code == 200
    else:
        assert response.status_code == 403


@pytest.mark.parametrize("name", POST_ACTIONS)
@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER])
def test_actions_refuse_everyone_but_researchers(role_client, client, draft, name, role):
    response = (role_client(role) if role else client).post(url(name, draft))
    if role is None:
        assert response.status_code == 302 and "/login/" in response["Location"]
    else:
        assert response.status_code == 403
    draft.refresh_from_db()
    assert draft.status == RunStatus.DRAFT


@pytest.mark.parametrize("name", POST_ACTIONS)
def test_actions_take_only_posts(role_client, draft, name):
    assert role_client(Role.RESEARCHER).get(url(name, draft)).status_code == 405


def test_the_reference_run_has_no_page(role_client):
    reference = reference_run_get()
    researcher = role_client(Role.RESEARCHER)
    assert researcher.get(url("detail", reference)).status_code == 404
    assert reference.name not in researcher.get(url("list")).text


# --- the list -------------------------------------------------------------------------------


def test_the_list_shows_each_runs_counts_progress_and_cost(role_client, offline_provider_url):
    models = offline_models(offline_provider_url)
    run = run_made(models=models, questions=[question_make() for _ in range(3)], samples=2)
    sampling_run_launch(run=run)
    engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk, limit=5)
    reference_run_get()
    body = role_client(Role.RESEARCHER).get(url("list")).text
    assert body.count('data-testid="run-row"') == 1
    row = body.split('data-testid="run-row"')[1].split("</tr>")[0]
    cells = re.findall(r"<td>(.*?)</td>", row, re.S)
    assert cells[2:5] == ["2", "3", "2"]  # models, questions, answers per question
    assert cells[5].startswith("5 / 12")
    spent = sum(r.cost_usd for r in run.responses.exclude(cost_usd=None))
    assert cells[6] == as_shown(spent) and spent > 0
    assert "New sampling run" in body


def test_the_list_pages_by_25(role_client):
    models = offline_models(NOWHERE, names=["offline-terse"])
    question = question_make()
    for i in range(26):
        run_made(models=models, questions=[question], samples=1, name=f"Run {i}")
    researcher = role_client(Role.RESEARCHER)
    assert researcher.get(url("list")).text.count('data-testid="run-row"') == 25
    second = researcher.get(url("list"), {"page": 2}).text
    assert second.count('data-testid="run-row"') == 1 and "Run 0" in second


# --- a new run ------------------------------------------------------------------------------


def test_the_form_selects_approved_questions_by_default_and_labels_offline_models(
    role_client, expert, reviewer
):
    graded_questions(2, author=expert, reviewer=reviewer)
    question_make()  # no rubric: not selected
    offline_models(NOWHERE)
    body = role_client(Role.RESEARCHER).get(url("new")).text
    assert re.search(r'value="approved_rubric"[^>]*checked', body)
    assert "With an approved rubric" in body
    assert "2 questions selected." in body
    assert body.count("offline demo model") == 2
    assert 'name="samples_per_item" value="5"' in body
    assert "providers&#x27; defaults" in body


def test_counting_with_htmx_renders_only_the_count(role_client, expert, reviewer):
    graded_questions(2, author=expert, reviewer=reviewer, topic="accounts")
    graded_questions(1, author=expert, reviewer=reviewer, topic="scams")
    question_make(topic="scams")
    researcher = role_client(Role.RESEARCHER)
    scams = Topic.objects.get(name="scams").pk
    data = {"action": "count", "conditions": ["approved_rubric"], "topics": [scams]}
    partial = researcher.post(url("new"), data, **HX).text
    assert partial.strip().startswith('<p id="selected-count"')
    assert "1 question selected." in partial and "<form" not in partial
    everything = researcher.post(url("new"), {"action": "count", "topics": [scams]}, **HX).text
    assert "2 questions selected." in everything
    # Without JavaScript: the whole form again, as filled in, with no errors for the rest.
    page = researcher.post(url("new"), {"action": "count", "topics": [scams], "name": "Kept"})
    assert page.status_code == 200 and "2 questions selected." in page.text
    assert 'value="Kept"' in page.text and "This field is required" not in page.text
    assert not re.search(r'value="approved_rubric"[^>]*checked', page.text)


def test_creating_a_run_saves_a_draft_with_its_selection_and_shows_the_estimate(
    role_client, expert, reviewer
):
    questions = graded_questions(3, author=expert, reviewer=reviewer)
    priced = offline_model(NOWHERE, name="offline-terse")
    unpriced = offline_model(
        NOWHERE, name="offline-friendly", input_price_per_mtok=None, output_price_per_mtok=None
    )
    researcher = role_client(Role.RESEARCHER)
    response = researcher.post(
        url("new"),
        {
            "action": "create",
            "name": "Pilot",
            "conditions": ["approved_rubric"],
            "models": [priced.pk, unpriced.pk],
            "samples_per_item": 4,
            "prompt": prompt_current(purpose=Purpose.SAMPLE).pk,
            "params": '{"temperature": 0.7}',
            "budget_usd": "12.50",
            "seed": "42",
        },
    )
    run = SamplingRun.objects.get(name="Pilot")
    assert response.status_code == 302 and response["Location"] == url("detail", run)
    assert run.status == RunStatus.DRAFT and run.seed == 42
    assert run.params == {"temperature": 0.7} and run.budget_usd == Decimal("12.50")
    assert run.responses.count() == 3 * 2 * 4
    assert set(run.questions.all()) == set(questions)
    assert run.selection == {
        "conditions": ["approved_rubric"],
        "topics": [],
        "length_buckets": [],
        "prior_attempt": None,
        "needs_sensemaking": None,
        "needs_guidance": None,
    }
    page = researcher.get(response["Location"]).text
    assert "Draft saved" in page
    assert shown(page, "calls") == 24
    rows = page.split('data-testid="estimate-row"')[1:]
    assert "price unknown" in rows[0] and "offline-friendly" in rows[0]
    assert "price unknown" not in rows[1] and "offline demo model" in rows[1]
    assert "the price of 1 model is unknown" in page
    assert "with an approved rubric" in page  # the selection, in words
    assert 'action="' + url("launch", run) + '"' in page


@pytest.mark.parametrize(
    "needs,chosen",
    [
        ({"needs_sensemaking": "yes"}, {"both", "sense"}),
        ({"needs_guidance": "yes"}, {"both", "guide"}),
        ({"needs_sensemaking": "yes", "needs_guidance": "yes"}, {"both"}),
        ({"needs_sensemaking": "no"}, {"guide", "neither"}),
        ({"needs_sensemaking": "no", "needs_guidance": "no"}, {"neither"}),
        ({}, {"both", "sense", "guide", "neither", "unlabelled"}),
    ],
)
def test_a_run_selects_questions_by_each_need(role_client, needs, chosen):
    made = questions_by_need()
    model = offline_model(NOWHERE)
    researcher = role_client(Role.RESEARCHER)
    count = researcher.post(url("new"), {"action": "count", **needs}, **HX).text
    assert f"{len(chosen)} question{'s' if len(chosen) > 1 else ''} selected." in count
    response = researcher.post(
        url("new"),
        {
            "action": "create",
            "name": "By need",
            "models": [model.pk],
            "samples_per_item": 1,
            "prompt": prompt_current(purpose=Purpose.SAMPLE).pk,
            **needs,
        },
    )
    assert response.status_code == 302, response.text
    run = SamplingRun.objects.get(name="By need")
    assert set(run.questions.all()) == {made[key] for key in chosen}
    yes_no = {"yes": True, "no": False}
    assert run.selection["needs_sensemaking"] == yes_no.get(needs.get("needs_sensemaking"))
    assert run.selection["needs_guidance"] == yes_no.get(needs.get("needs_guidance"))
    page = researcher.get(response["Location"]).text
    for need in ("sensemaking", "guidance"):
        said = {"yes": f"asks for {need}", "no": f"does not ask for {need}"}
        if f"needs_{need}" in needs:
            assert said[needs[f"needs_{need}"]] in page
        else:
            assert f"ask for {need}" not in page and f"asks for {need}" not in page


def test_the_new_run_page_offers_each_need_and_a_run_chosen_by_need_type_still_says_so(
    role_client,
):
    researcher = role_client(Role.RESEARCHER)
    page = researcher.get(url("new")).text
    for need in ("sensemaking", "guidance"):
        assert f'name="needs_{need}"' in page
    assert 'name="need_types"' not in page
    assert selectors.selection_described(selection={"need_types": ["guidance"]}) == [
        "need type: guidance"
    ]


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"models": []}, "Choose at least one model."),
        ({"params": "{temperature: 1}"}, "These parameters cannot be used: it is not valid JSON"),
        ({"params": '{"seed": 3}'}, "cannot be set here: each call gets its own"),
        ({"params": '{"base_url": "http://127.0.0.1:9/v1"}'}, "base_url is not a parameter"),
        ({"params": '{"extra_headers": {"X": "1"}}'}, "extra_headers is not a parameter"),
        ({"params": '{"max_tokens": -1}'}, "max_tokens must be a whole number from 1"),
        ({"conditions": [], "topics": ["scams"]}, "Choose at least one question."),
        ({"samples_per_item": 21}, "less than or equal to 20"),
    ],
)
def test_a_form_that_cannot_make_a_run_says_why(role_client, expert, reviewer, fields, message):
    graded_questions(1, author=expert, reviewer=reviewer, topic="accounts")
    model = offline_model(NOWHERE)
    data = {
        "action": "create",
        "name": "Bad",
        "conditions": ["approved_rubric"],
        "models": [model.pk],
        "samples_per_item": 5,
        "prompt": prompt_current(purpose=Purpose.SAMPLE).pk,
        **fields,
    }
    if data.get("topics") == ["scams"]:
        data["topics"] = [Topic.objects.get(name="scams").pk]
    response = role_client(Role.RESEARCHER).post(url("new"), data)
    assert response.status_code == 400
    assert message in response.text
    assert not SamplingRun.objects.filter(name="Bad").exists()


# --- launch and progress --------------------------------------------------------------------


def test_launch_queues_the_engine_and_the_page_polls_until_the_run_finishes(
    role_client, offline_provider_url, django_capture_on_commit_callbacks
):
    run = run_made(models=offline_models(offline_provider_url), samples=2)
    researcher = role_client(Role.RESEARCHER)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = researcher.post(url("launch", run), follow=True)
    assert len(callbacks) == settings.LLM_ENGINE_CHAINS
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert "Launched" in response.text and "Running: the workers" in response.text
    assert 'hx-trigger="every 2s"' in response.text
    assert f'href="{url("detail", run)}#progress" hx-get="{url("detail", run)}"' in response.text
    assert f"/grading/new/?sampling_run={run.pk}" in response.text

    partial = researcher.get(url("detail", run), **HX).text
    assert partial.strip().startswith('<section id="progress"')
    assert "<html" not in partial and "Settings" not in partial
    assert shown(partial, "pending") == 8 and shown(partial, "done") == 0

    run_worked(run)
    partial = researcher.get(url("detail", run), **HX).text
    assert "every 2s" not in partial  # the run stopped: so does the polling
    assert 'id="run-status" class="badge status-finished" hx-swap-oob="true">Finished' in partial
    assert "Finished: 8 answers." in partial
    assert shown(partial, "done") == 8 and "100.0% done" in partial
    assert partial.count('data-testid="model-row"') == 2 and "offline demo model" in partial


def test_progress_counts_are_the_databases(role_client, offline_provider_url):
    run = run_made(models=offline_models(offline_provider_url), samples=3)
    sampling_run_launch(run=run)
    engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk, limit=5)
    held = run.responses.filter(status=ResponseStatus.PENDING)[:2]
    Response.objects.filter(pk__in=[r.pk for r in held]).update(status=ResponseStatus.RUNNING)
    failed = run.responses.filter(status=ResponseStatus.PENDING).first()
    Response.objects.filter(pk=failed.pk).update(
        status=ResponseStatus.FAILED, error_kind="timeout", completed_at=timezone.now()
    )
    body = role_client(Role.RESEARCHER).get(url("detail", run), **HX).text
    rows = run.responses
    assert shown(body, "done") == rows.filter(status=ResponseStatus.DONE).count() == 5
    assert shown(body, "failed") == 1
    assert shown(body, "running") == 2
    assert shown(body, "pending") == rows.filter(status=ResponseStatus.PENDING).count() == 4
    assert 'max="12" value="6"' in body and "50.0% done" in body
    spent = sum(r.cost_usd for r in rows.exclude(cost_usd=None))
    assert f"${as_shown(spent)}" in body
    assert "Timed out" in body


def test_rate_and_eta_are_measured_over_the_last_minute(offline_provider_url):
    run = run_made(
        models=offline_models(NOWHERE, names=["offline-terse"]),
        samples=5,
        questions=[question_make() for _ in range(10)],
    )
    now = timezone.now()
    SamplingRun.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, launched_at=now - dt.timedelta(minutes=10)
    )
    run.refresh_from_db()
    ids = list(run.responses.values_list("pk", flat=True))
    Response.objects.filter(pk__in=ids[:30]).update(
        status=ResponseStatus.DONE, completed_at=now - dt.timedelta(seconds=30), latency_ms=200
    )
    Response.objects.filter(pk__in=ids[30:35]).update(
        status=ResponseStatus.DONE, completed_at=now - dt.timedelta(minutes=5), latency_ms=400
    )
    progress = selectors.run_progress(run=run, now=now)
    assert progress.calls_per_second == 30 / 60
    assert progress.eta_seconds == 15 / 0.5
    assert progress.models[0].mean_latency_ms == pytest.approx((30 * 200 + 5 * 400) / 35)


# --- errors and retries ---------------------------------------------------------------------


def test_errors_are_listed_by_kind_and_retried_by_kind_or_all(
    role_client, offline_provider_url, django_capture_on_commit_callbacks
):
    model = offline_model(
        offline_provider_url, name="offline-thorough", api_key_env="ASSAY_TEST_KEY_UNSET"
    )
    run = run_made(models=[model], samples=3)
    sampling_run_launch(run=run)
    run_worked(run)
    # Two rows as the lease sweep leaves them when workers died on them repeatedly.
    gave_up = list(run.responses.values_list("pk", flat=True)[:2])
    Response.objects.filter(pk__in=gave_up).update(error_kind="")
    researcher = role_client(Role.RESEARCHER)
    page = researcher.get(url("detail", run)).text
    kinds = page.split('data-testid="error-kind"')[1:]
    assert "Authentication or permission error" in kinds[0] and "<td>4</td>" in kinds[0]
    assert "The worker stopped repeatedly" in kinds[1] and "<td>2</td>" in kinds[1]
    assert 'name="error_kind" value="worker"' in kinds[1]

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = researcher.post(url("retry", run), {"error_kind": "auth_error"}, follow=True)
    assert "4 failed answers to ask again." in response.text
    assert len(callbacks) == settings.LLM_ENGINE_CHAINS
    assert run.responses.filter(status=ResponseStatus.PENDING).count() == 4
    assert set(
        run.responses.filter(status=ResponseStatus.FAILED).values_list("pk", flat=True)
    ) == set(gave_up)
    researcher.post(url("retry", run), {"error_kind": ""})
    assert run.responses.filter(status=ResponseStatus.PENDING).count() == 6


def test_retrying_a_cancelled_run_is_refused_with_a_message(role_client, draft):
    researcher = role_client(Role.RESEARCHER)
    researcher.post(url("cancel", draft), {"confirmed": "yes"})
    response = researcher.post(url("retry", draft), {"error_kind": ""}, follow=True)
    assert "The run was cancelled: nothing in it is called again." in response.text


# --- pause, resume, cancel, budget ----------------------------------------------------------


def test_pause_resume_and_cancel_move_the_run_and_refusals_are_shown(
    role_client, draft, django_capture_on_commit_callbacks
):
    sampling_run_launch(run=draft)
    researcher = role_client(Role.RESEARCHER)
    page = researcher.post(url("pause", draft), follow=True).text
    draft.refresh_from_db()
    assert draft.status == RunStatus.PAUSED and "Paused: no new calls are made" in page
    assert "every 2s" not in page and 'action="' + url("resume", draft) + '"' in page
    again = researcher.post(url("pause", draft), follow=True).text
    assert "The run is paused: it cannot be paused now." in again

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        researcher.post(url("resume", draft))
    draft.refresh_from_db()
    assert draft.status == RunStatus.RUNNING and len(callbacks) == settings.LLM_ENGINE_CHAINS

    confirm = researcher.post(url("cancel", draft))
    draft.refresh_from_db()
    assert confirm.status_code == 200 and draft.status == RunStatus.RUNNING
    assert 'name="confirmed" value="yes"' in confirm.text
    done = researcher.post(url("cancel", draft), {"confirmed": "yes"}, follow=True).text
    draft.refresh_from_db()
    assert draft.status == RunStatus.CANCELLED and "Cancelled: nothing more is called" in done
    refused = researcher.post(url("resume", draft), follow=True).text
    assert "The run is cancelled: it cannot be running now." in refused


def test_the_budget_stops_the_run_and_raising_it_lets_it_resume(role_client, offline_provider_url):
    # $1,000 per million tokens out: about $0.10 a call, so $1 buys about half the run.
    model = offline_model(
        offline_provider_url, name="offline-pricey", output_price_per_mtok=Decimal(1000)
    )
    run = run_made(
        models=[model],
        samples=4,
        questions=[question_make() for _ in range(5)],
        budget_usd=Decimal("1.00"),
    )
    sampling_run_launch(run=run)
    run_worked(run)
    run.refresh_from_db()
    assert run.status == RunStatus.BUDGET_REACHED
    researcher = role_client(Role.RESEARCHER)
    page = researcher.get(url("detail", run)).text
    spent = sum(r.cost_usd for r in run.responses.exclude(cost_usd=None))
    assert (
        f"Stopped: budget reached — ${as_shown(spent)} of $1.00 spent; raise the budget to resume."
    ) in page
    refused = researcher.post(url("resume", run), follow=True).text
    assert "raise the budget before resuming" in refused

    raised = researcher.post(url("budget", run), {"budget_usd": "100"}, follow=True).text
    run.refresh_from_db()
    assert run.budget_usd == Decimal("100") and "Budget: $100.00. Resume the run" in raised
    researcher.post(url("resume", run))
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING


def test_the_budget_form_refuses_nonsense_and_clears(role_client, draft):
    researcher = role_client(Role.RESEARCHER)
    bad = researcher.post(url("budget", draft), {"budget_usd": "0"}, follow=True).text
    assert "Budget: Ensure this value is greater than or equal to 0.01." in bad
    researcher.post(url("budget", draft), {"budget_usd": "5"})
    draft.refresh_from_db()
    assert draft.budget_usd == Decimal("5")
    cleared = researcher.post(url("budget", draft), {"budget_usd": ""}, follow=True).text
    draft.refresh_from_db()
    assert draft.budget_usd is None and "Budget: none." in cleared


# --- responses ------------------------------------------------------------------------------


def test_responses_are_filtered_and_failed_ones_show_their_error(role_client, offline_provider_url):
    [good] = offline_models(offline_provider_url, names=["offline-terse"])
    failing = offline_model(
        offline_provider_url, name="offline-thorough", api_key_env="ASSAY_TEST_KEY_UNSET"
    )
    run = run_made(models=[good, failing], samples=2)
    sampling_run_launch(run=run)
    run_worked(run)
    researcher = role_client(Role.RESEARCHER)
    everything = researcher.get(url("responses", run)).text
    assert everything.count('data-testid="response"') == 8
    assert "offline demo model" in everything
    done = run.responses.filter(status=ResponseStatus.DONE).first()
    assert done.text.splitlines()[0][:40] in everything.replace("&#x27;", "'")

    failed = researcher.get(url("responses", run), {"status": "failed"}, **HX).text
    assert failed.strip().startswith('<div id="response-table"') and "<html" not in failed
    assert failed.count('data-testid="response"') == 4
    assert "Authentication or permission error" in failed and "ASSAY_TEST_KEY_UNSET" in failed
    by_model = researcher.get(url("responses", run), {"model": good.pk}).text
    assert by_model.count('data-testid="response"') == 4
    question = run.questions.first()
    by_question = researcher.get(url("responses", run), {"question": question.external_id}).text
    assert by_question.count('data-testid="response"') == 4


def test_pages_escape_what_people_wrote(role_client):
    model = offline_model(NOWHERE)
    question = question_make(text="<img src=x onerror=alert(2)> help?")
    run = run_made(
        models=[model], name="<script>alert(1)</script>", samples=1, questions=[question]
    )
    Response.objects.filter(run=run).update(status=ResponseStatus.DONE, text="<b>bold</b>")
    researcher = role_client(Role.RESEARCHER)
    for page in ("detail", "responses"):
        body = researcher.get(url(page, run)).text
        assert "<script>alert(1)" not in body and "&lt;script&gt;" in body
    body = researcher.get(url("responses", run)).text
    assert "<img src=x" not in body and "<b>bold</b>" not in body


def test_a_draft_run_is_not_graded_yet(role_client, draft):
    body = role_client(Role.RESEARCHER).get(url("detail", draft)).text
    assert "/grading/new/" not in body
    assert "Browse the responses" in body and url("export_responses", draft) in body
    assert draft.kind == RunKind.BENCHMARK
