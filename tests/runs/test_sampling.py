"""Sampling runs on the bulk engine, against the offline provider over real HTTP."""

from decimal import Decimal

import psutil
import pytest

from apps.llm import engine
from apps.llm.models import LLMCall, RunStatus
from apps.runs.errors import RunError
from apps.runs.models import ResponseStatus
from apps.runs.services import (
    SAMPLE_WORK,
    call_seed,
    responses_retry,
    sampling_run_cancel,
    sampling_run_create,
    sampling_run_launch,
    sampling_run_pause,
    sampling_run_resume,
)
from tests.factories import offline_model, question_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def models(offline_provider_url):
    return [
        offline_model(offline_provider_url, name=n) for n in ("offline-terse", "offline-friendly")
    ]


def run_all(run, limit=None):
    """Work the run in this process, batch after batch, as the worker's chain would."""
    outcomes = []
    while True:
        outcome = engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk, limit=limit)
        outcomes.append(outcome)
        if outcome.again_in is None or not outcome.claimed:
            return outcomes


def test_a_run_has_one_response_per_model_question_and_sample_from_the_start(models):
    questions = [question_make() for _ in range(3)]
    run = sampling_run_create(name="Pilot", questions=questions, models=models, samples_per_item=5)
    assert run.responses.count() == 3 * 2 * 5
    assert run.responses.filter(status=ResponseStatus.PENDING).count() == 30
    seeds = set(run.responses.values_list("seed", flat=True))
    assert len(seeds) == 30
    first = run.responses.get(model=models[0], question=questions[0], sample_index=2)
    assert first.seed == call_seed(run.seed, models[0].pk, questions[0].pk, 2)


def test_a_launched_run_answers_every_row_once_and_samples_differ(models):
    questions = [question_make() for _ in range(2)]
    run = sampling_run_create(name="Pilot", questions=questions, models=models, samples_per_item=5)
    sampling_run_launch(run=run)
    run_all(run, limit=7)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    done = run.responses.filter(status=ResponseStatus.DONE)
    assert done.count() == 20
    assert LLMCall.objects.filter(caller__startswith="runs.sample:").count() == 20
    texts = set(done.filter(model=models[0], question=questions[0]).values_list("text", flat=True))
    assert len(texts) == 5  # five samples, five different answers
    assert run.responses.filter(cost_usd__isnull=True).count() == 0


def test_a_batch_claimed_twice_does_the_work_once(models):
    run = sampling_run_create(
        name="Twice", questions=[question_make()], models=models[:1], samples_per_item=3
    )
    sampling_run_launch(run=run)
    first = engine.batch_claim(SAMPLE_WORK, run.pk, owner="a:1", limit=10)
    second = engine.batch_claim(SAMPLE_WORK, run.pk, owner="b:2", limit=10)
    assert len(first) == 3 and second == []


def test_a_batch_claims_more_as_its_calls_start_until_its_time_is_up(models, monkeypatch):
    # Batches of 4, refilled whenever fewer than 3 calls wait: one batch works the whole
    # run, claim after claim, with no gap between batches for its process.
    monkeypatch.setattr(SAMPLE_WORK, "batch_size", 4)
    monkeypatch.setattr(engine, "REFILL_BELOW", 3)
    run = sampling_run_create(
        name="Refill",
        questions=[question_make() for _ in range(3)],
        models=models,
        samples_per_item=3,
    )
    sampling_run_launch(run=run)
    outcome = engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk)
    assert (outcome.claimed, outcome.done, outcome.failed) == (18, 18, 0)
    assert run.responses.filter(status=ResponseStatus.DONE).count() == 18
    assert LLMCall.objects.filter(caller__startswith="runs.sample:").count() == 18

    # Out of time, a batch takes only its first claim; a limit (as here) never refills.
    later = sampling_run_create(
        name="Timed", questions=[question_make()], models=models, samples_per_item=5
    )
    sampling_run_launch(run=later)
    monkeypatch.setattr(engine, "BATCH_SECONDS", 0.0)
    assert engine.batch_run(work=SAMPLE_WORK.name, scope=later.pk).claimed == 4
    assert engine.batch_run(work=SAMPLE_WORK.name, scope=later.pk, limit=2).claimed == 2
    assert later.responses.filter(status=ResponseStatus.DONE).count() == 6


def test_a_paused_run_takes_no_calls_and_resumes_where_it_stopped(models):
    run = sampling_run_create(
        name="P", questions=[question_make()], models=models, samples_per_item=2
    )
    sampling_run_launch(run=run)
    engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk, limit=2)
    sampling_run_pause(run=run)
    outcome = engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk)
    assert outcome.claimed == 0
    assert run.responses.filter(status=ResponseStatus.DONE).count() == 2
    sampling_run_resume(run=run)
    run_all(run)
    assert run.responses.filter(status=ResponseStatus.DONE).count() == 4
    assert LLMCall.objects.filter(caller__startswith="runs.sample:").count() == 4


def test_a_cancelled_run_calls_nothing_more(models):
    run = sampling_run_create(
        name="C", questions=[question_make()], models=models, samples_per_item=2
    )
    sampling_run_launch(run=run)
    sampling_run_cancel(run=run)
    assert engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk).claimed == 0
    with pytest.raises(RunError):
        sampling_run_resume(run=run)


def test_the_budget_is_reserved_before_calls_and_stops_the_run(offline_provider_url):
    # $1,000 per million tokens out: about $0.10 a call, so $1 buys about half the run.
    model = offline_model(offline_provider_url, output_price_per_mtok=Decimal(1000))
    questions = [question_make() for _ in range(5)]
    run = sampling_run_create(
        name="B",
        questions=questions,
        models=[model],
        samples_per_item=4,
        budget_usd=Decimal("1.00"),
    )
    sampling_run_launch(run=run)
    run_all(run)
    run.refresh_from_db()
    assert run.status == RunStatus.BUDGET_REACHED
    done = run.responses.filter(status=ResponseStatus.DONE)
    assert 0 < done.count() < 20
    spent = sum(r.cost_usd for r in done)
    assert spent <= Decimal("1.00")
    assert run.responses.filter(status=ResponseStatus.PENDING).count() == 20 - done.count()
    assert LLMCall.objects.filter(caller__startswith="runs.sample:").count() == done.count()
    with pytest.raises(RunError, match="raise the budget"):
        sampling_run_resume(run=run)


def test_failed_responses_keep_their_reason_and_are_retried_by_kind(offline_provider):
    model = offline_model(offline_provider(), api_key_env="ASSAY_TEST_KEY_UNSET")
    run = sampling_run_create(
        name="F", questions=[question_make()], models=[model], samples_per_item=2
    )
    sampling_run_launch(run=run)
    run_all(run)
    failed = run.responses.filter(status=ResponseStatus.FAILED)
    assert failed.count() == 2
    assert set(failed.values_list("error_kind", flat=True)) == {"auth_error"}
    assert "ASSAY_TEST_KEY_UNSET" in failed.first().error
    assert responses_retry(run=run, error_kind="timeout") == 0
    assert responses_retry(run=run, error_kind="auth_error") == 2
    assert run.responses.filter(status=ResponseStatus.PENDING, attempts=0).count() == 2


def test_batches_leave_no_connection_to_the_provider_open(offline_provider_url, models):
    """Each batch runs on an event loop of its own; litellm caches an HTTP client per loop
    and keeps it for minutes, so a batch must close its clients (gateway.aclose_loop) or a
    long run leaks a keep-alive connection per call slot per batch."""
    port = int(offline_provider_url.rsplit(":", 1)[1].split("/")[0])

    def open_to_provider() -> int:
        return sum(
            1
            for c in psutil.Process().net_connections(kind="tcp")
            if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
        )

    run = sampling_run_create(
        name="Leak",
        questions=[question_make() for _ in range(3)],
        models=models,
        samples_per_item=4,
    )
    sampling_run_launch(run=run)
    for _ in range(4):
        engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk, limit=6)
        assert open_to_provider() == 0
    assert run.responses.filter(status=ResponseStatus.DONE).count() == 24
