"""`manage.py sample`: the same services as the pages, from the command line."""

import io
import re
import threading

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse

from apps.llm.models import RunStatus
from apps.runs.models import ResponseStatus, SamplingRun
from tests.factories import offline_model, question_make, questions_by_need
from tests.runs.builders import graded_questions, offline_models
from workers.engine import run_batch_task

SAFETY_SECONDS = 180


def in_thread(function, *args):
    """`function(*args)` in a thread, so that a run that never stops fails this test (a
    safety net, not a measure of speed) rather than hanging the suite."""
    result = {}

    def target():
        try:
            result["value"] = function(*args)
        finally:
            connection.close()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(SAFETY_SECONDS)
    assert not thread.is_alive(), f"still waiting after {SAFETY_SECONDS} s"
    return result["value"]


def sample(*args) -> str:
    out = io.StringIO()
    call_command("sample", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_sample_creates_and_launches_one_response_per_model_question_and_answer(
    expert, reviewer, offline_provider_url, django_capture_on_commit_callbacks
):
    questions = graded_questions(3, author=expert, reviewer=reviewer)
    question_make()  # no approved rubric: not sampled
    models = offline_models(offline_provider_url)
    names = ",".join(m.display_name for m in models)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        out = sample(
            "--name",
            "CLI run",
            "--models",
            names,
            "--samples",
            "4",
            "--params",
            '{"temperature":0.7}',
            "--budget",
            "12.50",
            "--seed",
            "7",
        )
    run = SamplingRun.objects.get(name="CLI run")
    assert run.status == RunStatus.RUNNING and len(callbacks) == settings.LLM_ENGINE_CHAINS
    assert run.responses.count() == 3 * 2 * 4
    assert set(run.questions.all()) == set(questions)
    assert run.params == {"temperature": 0.7} and str(run.budget_usd) == "12.50"
    assert run.seed == 7 and run.selection["conditions"] == ["approved_rubric"]
    assert f"Run {run.pk} “CLI run”: 3 question(s) x 2 model(s) x 4 answer(s)" in out
    assert f"Page: {reverse('runs:detail', args=[run.pk])}" in out
    assert "24 calls, estimated $" in out and "Launched" in out


@pytest.mark.django_db
def test_a_draft_is_created_not_launched_and_its_estimate_printed(
    offline_provider_url, django_capture_on_commit_callbacks
):
    question_make(topic="scams", length_bucket="short")
    question_make(topic="scams", length_bucket="long")
    question_make(topic="accounts", length_bucket="short")
    unpriced = offline_model(
        offline_provider_url,
        name="offline-friendly",
        input_price_per_mtok=None,
        output_price_per_mtok=None,
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        out = sample(
            "--name",
            "Draft",
            "--any-question",
            "--topic",
            "scams",
            "--length-bucket",
            "short",
            "--models",
            unpriced.display_name,
            "--samples",
            "2",
            "--draft",
        )
    run = SamplingRun.objects.get(name="Draft")
    assert run.status == RunStatus.DRAFT and callbacks == []
    assert run.responses.count() == 2 and run.questions.get().topic.name == "scams"
    assert re.search(
        r"offline-friendly.*\(offline demo model\): 2 calls, \d+ tokens in, "
        r"\d+ out, price unknown",
        out,
    )
    assert "Saved as a draft" in out


@pytest.mark.django_db
def test_a_draft_takes_the_questions_asking_for_each_need_chosen(
    offline_provider_url, django_capture_on_commit_callbacks
):
    made = questions_by_need()
    model = offline_model(offline_provider_url)
    with django_capture_on_commit_callbacks(execute=False):
        sample(
            "--name",
            "Needs",
            "--any-question",
            "--sensemaking",
            "yes",
            "--guidance",
            "no",
            "--models",
            model.display_name,
            "--samples",
            "1",
            "--draft",
        )
    run = SamplingRun.objects.get(name="Needs")
    assert list(run.questions.all()) == [made["sense"]]
    assert (run.selection["needs_sensemaking"], run.selection["needs_guidance"]) == (True, False)


@pytest.mark.django_db
def test_an_unknown_model_is_refused_naming_the_available_ones(offline_provider_url):
    models = offline_models(offline_provider_url)
    question_make()
    with pytest.raises(CommandError) as raised:
        sample("--name", "X", "--any-question", "--models", f"{models[0].display_name},gpt-9")
    message = str(raised.value)
    assert "No model named 'gpt-9'" in message
    assert all(m.display_name in message for m in models)
    assert not SamplingRun.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "extra,message",
    [
        (["--params", "{temperature: 1}"], "--params is not valid JSON"),
        (["--params", '{"seed": 1}'], "cannot be set here: each call gets its own"),
        (["--params", '{"base_url": "http://127.0.0.1:9/v1"}'], "base_url is not a parameter"),
        (["--params", '{"mock_response": "forged"}'], "mock_response is not a parameter"),
        (["--params", '{"temperature": 3}'], "temperature must be a number from 0 to 2"),
        (["--budget", "twelve"], "is not an amount in USD"),
        (["--budget", "0"], "A budget must be more than $0"),
        (["--samples", "21"], "Answers per question must be between 1 and 20"),
        (["--prompt-version", "999"], "No sample prompt version 999. Versions: "),
        (["--topic", "cooking"], "No topic 'cooking'. Topics: "),
    ],
)
def test_what_the_services_refuse_is_a_command_error_with_their_message(
    offline_provider_url, extra, message
):
    [model] = offline_models(offline_provider_url, names=["offline-terse"])
    question_make()
    with pytest.raises(CommandError, match=re.escape(message)):
        sample("--name", "X", "--any-question", "--models", model.display_name, *extra)
    assert not SamplingRun.objects.exists()


@pytest.mark.django_db
def test_without_approved_questions_nothing_is_made(offline_provider_url):
    [model] = offline_models(offline_provider_url, names=["offline-terse"])
    question_make()
    with pytest.raises(CommandError, match="Choose at least one question"):
        sample("--name", "X", "--models", model.display_name)


def test_wait_shows_progress_until_a_real_worker_finishes_the_run(
    route_to_worker, offline_provider_url
):
    route_to_worker(run_batch_task)
    for _ in range(2):
        question_make()
    names = ",".join(m.display_name for m in offline_models(offline_provider_url))
    args = ("--name", "Waited", "--any-question", "--models", names, "--samples", "3", "--wait")
    out = in_thread(sample, *args)
    run = SamplingRun.objects.get(name="Waited")
    assert run.status == RunStatus.FINISHED
    assert run.responses.filter(status=ResponseStatus.DONE).count() == 2 * 2 * 3
    frames = out.split("\r")[1:]
    assert frames, out
    assert frames[-1].startswith("[" + "#" * 30 + "] 100.0%  done 12  failed 0  pending 0")
    assert "Finished: 12 done, 0 failed, 0 not done" in out
