import datetime as dt
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.utils import timezone

from apps.llm.models import CallStatus, LLMCall
from apps.surveys import services
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import (
    Assignment,
    AssignmentStatus,
    GenerationStatus,
    ResponseSource,
    ScenarioCallStatus,
    ScenarioResponseCall,
    StudyStatus,
)
from apps.surveys.services.scenarios import SCENARIO_RESPONSE_WORK
from tests.conftest import ROOT, live_database_url, wait_until
from tests.factories import CODES, offline_model
from workers.engine import run_batch_task
from workers.surveys import expire_reservations_task


def draft_study(scenarios, count=6):
    return services.study_create(scenarios=scenarios[:count], name="w", **DEFAULT_TEXTS, **CODES)


def generation_of(study, model, go_live=False) -> int:
    generation, _started = services.scenario_responses_request(
        study=study, model=model, go_live=go_live
    )
    return generation.pk


def generate(generation: int) -> dict:
    """A batch of the generation's calls, worked here as a worker works it."""
    return run_batch_task.run(SCENARIO_RESPONSE_WORK.name, generation)


@pytest.fixture(scope="module")
def worker_queue(django_db_setup):
    """One real worker (as start_worker makes them) for the tests here that need one: starting
    one takes seconds (it loads the whole LLM stack) and stopping one two more. Its database
    connection closes after every task, so each test's flush finds nothing held."""
    queue = f"test-{uuid.uuid4().hex[:12]}"
    celery = shutil.which("celery", path=str(Path(sys.executable).parent))
    env = dict(os.environ, DATABASE_URL=live_database_url(), DB_CONN_MAX_AGE="0")
    process = subprocess.Popen(
        [
            celery,
            "-A",
            "config",
            "worker",
            "--pool",
            "solo",
            "--queues",
            queue,
            "--hostname",
            f"{uuid.uuid4().hex[:8]}@%h",
            "--without-mingle",
            "--without-gossip",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    yield queue
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()


def test_worker_generates_responses_with_provenance_and_the_study_goes_live(
    worker_queue,
    transactional_db,
    offline_provider,
    scenarios,
):
    model = offline_model(offline_provider(), name="offline-thorough")
    study = draft_study(scenarios)

    run_batch_task.apply_async(
        args=[SCENARIO_RESPONSE_WORK.name, generation_of(study, model, go_live=True)],
        queue=worker_queue,
    )

    assert wait_until(
        lambda: study.__class__.objects.get(pk=study.pk).status == StudyStatus.LIVE, timeout=90
    )
    for ss in study.study_scenarios.select_related("response", "scenario"):
        response = ss.response
        assert response.text.strip()
        assert (response.source, response.model_id, response.offline) == (
            ResponseSource.GENERATED,
            model.pk,
            True,
        )
        assert response.prompt_version == "scenario_response v2"
        row = ScenarioResponseCall.objects.get(study_scenario=ss)
        assert (row.status, row.response_id) == (ScenarioCallStatus.DONE, response.pk)
        call = LLMCall.objects.get(caller=f"scenario_response_call:{row.pk}", status=CallStatus.OK)
        # The call saw the scenario's own task and context, through the versioned prompt.
        assert call.prompt_template_id == response.prompt_id


# The gateway saves its ledger from another thread: these tests commit (transactional_db).
def test_generating_twice_makes_no_call_twice(
    transactional_db,
    offline_provider,
    scenarios,
):
    model = offline_model(offline_provider(), name="offline-thorough")
    study = draft_study(scenarios, count=3)
    generation = generation_of(study, model)
    first = generate(generation)
    calls = LLMCall.objects.count()
    again = generate(generation)  # a redelivered message: does nothing
    second = generate(generation_of(study, model))  # asked again: nothing missing
    other = draft_study(scenarios, count=3)  # same scenarios in a new study: reused, not re-asked
    third = generate(generation_of(other, model))
    assert first["done"] == 3
    assert again["claimed"] == second["claimed"] == third["claimed"] == 0  # nothing to call
    assert other.study_scenarios.filter(response__isnull=True).count() == 0  # reused
    assert LLMCall.objects.count() == calls == 3


def test_a_failed_generation_is_recorded_and_the_study_stays_a_draft(
    transactional_db,
    scenarios,
):
    model = offline_model("http://127.0.0.1:9", name="offline-thorough", timeout_seconds=1)
    model.api_base = ""
    model.litellm_model = "openai/offline-thorough"
    model.api_key_env = "ASSAY_TEST_MISSING_KEY"
    model.save()
    study = draft_study(scenarios, count=2)
    generation = generation_of(study, model, go_live=True)
    outcome = generate(generation)
    assert outcome["failed"] == 2
    study.refresh_from_db()
    assert study.status == StudyStatus.DRAFT
    failed = study.generations.get(pk=generation)
    assert failed.status == GenerationStatus.FAILED and "2 scenario(s)" in failed.error
    assert all("ASSAY_TEST_MISSING_KEY" in ss.response_error for ss in study.study_scenarios.all())


def test_worker_expires_overdue_reservations_and_running_twice_is_harmless(
    worker_queue,
    transactional_db,
    scenarios,
):
    study = draft_study(scenarios, count=5)
    services.response_import_csv(
        text="scenario,response,model\n" + "".join(f"{s.name},Hello,M\n" for s in scenarios[:5]),
        study=study,
    )
    study = services.study_set_status(study=study, status=StudyStatus.LIVE)
    params = services.ProlificParams("a" * 24, "b" * 24, "c" * 24)
    participant = services.participant_consent(study=study, params=params, consent_seconds=None)
    Assignment.objects.filter(participant=participant, position__lte=2).update(
        reserved_until=timezone.now() - dt.timedelta(minutes=1)
    )

    expire_reservations_task.apply_async(queue=worker_queue)
    expired = lambda: participant.assignments.filter(status=AssignmentStatus.EXPIRED).count()  # noqa: E731
    assert wait_until(lambda: expired() == 2, timeout=60)
    assert expire_reservations_task.run() == 0
    assert participant.assignments.filter(status=AssignmentStatus.RESERVED).count() == 3


def test_response_generation_is_routed_to_the_llm_queue():
    from config.celery import app

    route = app.amqp.router.route({}, run_batch_task.name, (), {}, None)
    assert route["queue"].name == "llm"
