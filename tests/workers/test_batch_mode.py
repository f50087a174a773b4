"""Batch mode (apps/llm/batches.py) worked by real Celery workers and beat, against the
offline provider's batch API over HTTP through litellm: a run ends with every row answered
once in provider batches at the batch price; failed lines are asked again in the next batch
or live, as the run chose; an expired batch's rows go back without counting an attempt;
pause and cancel reach the provider's batches; a worker and beat killed while batches are
pending lose nothing and submit nothing twice.

Everything is counted: rows, the ledger, and the batches and requests the provider saw."""

import os
import signal
from collections import Counter
from decimal import Decimal

import httpx
import pytest

from apps.grading.models import (
    CallState,
    ChecklistCall,
    GradingMode,
    GradingRun,
    Judgment,
    ResponseScore,
)
from apps.grading.services import grading_run_create, grading_run_launch
from apps.llm.models import BatchRetry, CallStatus, LLMCall, ProviderBatch, RunStatus
from apps.runs.models import ResponseStatus, SamplingRun
from apps.runs.services import (
    sampling_run_cancel,
    sampling_run_create,
    sampling_run_launch,
    sampling_run_pause,
    sampling_run_resume,
)
from apps.surveys import services
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import (
    Assignment,
    GenerationStatus,
    ProxyCallStatus,
    Study,
    StudyStatus,
)
from tests.conftest import wait_until
from tests.factories import CODES, approved_rubric, offline_model, question_make
from tests.workers.engine_builders import dead, engine_workers, provider_stats, statuses

__all__ = ["engine_workers"]  # the fixture, imported to be found

pytestmark = pytest.mark.worker

DONE, PENDING, FAILED = ResponseStatus.DONE, ResponseStatus.PENDING, ResponseStatus.FAILED
LIST_PRICE = (Decimal("2.50"), Decimal("10.00"))  # tests.factories.ModelConfigFactory's


@pytest.fixture
def batch_workers(engine_workers, tmp_path):
    """`start()`: a worker and beat that polls the batches every second."""
    engine_workers.env.update(LLM_BATCH_POLL_SECONDS="1", LLM_BATCH_HOLD_SECONDS="5")

    def start():
        worker = engine_workers.start()
        beat = engine_workers.beat(schedule=str(tmp_path / f"beat-{len(engine_workers.started)}"))
        return worker, beat

    return start


def batched_run(url, *, retry=BatchRetry.BATCH, models=("offline-terse",), questions=3, samples=2):
    configs = [offline_model(url, name=name, batch_api=True) for name in models]
    run = sampling_run_create(
        name="Batched",
        questions=[question_make() for _ in range(questions)],
        models=configs,
        samples_per_item=samples,
    )
    SamplingRun.objects.filter(pk=run.pk).update(batch_mode=True, batch_retry=retry)
    run.refresh_from_db()
    return sampling_run_launch(run=run)


def ended(run, status=RunStatus.FINISHED, timeout=120):
    def reached():
        run.refresh_from_db()
        held = run.responses.filter(status=ResponseStatus.RUNNING).exists()
        return run.status == status and not held

    assert wait_until(reached, timeout=timeout, interval=0.3), (run.status, statuses(run))


def ledger(run) -> list[LLMCall]:
    return list(LLMCall.objects.filter(caller__startswith="runs.sample:").order_by("pk"))


def batch_price(call: LLMCall) -> Decimal:
    listed = (LIST_PRICE[0] * call.input_tokens + LIST_PRICE[1] * call.output_tokens) / 10**6
    return (listed * Decimal("0.5")).quantize(Decimal("0.000001"))


def provider_batches(url) -> Counter:
    return Counter(provider_stats(url)["batches"])


def test_a_run_in_batch_mode_is_answered_in_batches_once_at_the_batch_price(
    batch_workers, offline_provider
):
    url = offline_provider(batch_seconds=1)
    batch_workers()
    run = batched_run(url, models=("offline-terse", "offline-friendly"))

    ended(run)
    assert statuses(run) == {DONE: 12}
    assert set(run.responses.values_list("attempts", flat=True)) == {1}
    calls = ledger(run)
    assert len(calls) == 12 and {c.status for c in calls} == {CallStatus.OK}
    assert len({c.caller for c in calls}) == 12  # each row's line recorded once
    assert all(c.batch_id is not None for c in calls)
    assert all(c.cost_usd == batch_price(c) and c.cost_usd > 0 for c in calls)
    costs = {r.pk: r.cost_usd for r in run.responses.all()}
    assert {int(c.caller.split(":")[1]): c.cost_usd for c in calls} == costs
    # One batch per model, nothing called live.
    assert provider_stats(url)["requests"] == 0
    assert provider_batches(url)["created"] == 2
    batches = ProviderBatch.objects.filter(scope=run.pk)
    assert sorted(batches.values_list("status", "requests", "recorded")) == [
        ("completed", 6, 6),
        ("completed", 6, 6),
    ]
    assert all(b.recorded_at is not None for b in batches)


def test_failed_lines_are_asked_again_in_the_next_batch(batch_workers, offline_provider):
    url = offline_provider(batch_seconds=0.5, batch_rate_failed=0.3, fault_seed=5)
    batch_workers()
    run = batched_run(url, questions=6, samples=2)

    ended(run)
    counts = statuses(run)
    assert counts[DONE] + counts[FAILED] == 12 and not counts[PENDING]
    calls = ledger(run)
    failed_lines = [c for c in calls if c.status == CallStatus.SERVER_ERROR]
    assert failed_lines, "the provider failed no line: the test shows nothing"
    assert all(c.batch_id is not None for c in calls)  # asked again in batches, never live
    assert provider_stats(url)["requests"] == 0
    assert provider_batches(url)["created"] >= 2
    for response in run.responses.all():
        mine = [c for c in calls if c.caller == f"runs.sample:{response.pk}"]
        # One ledger row per line; the last is the answer, unless the row is out of lines
        # (as many as a live call's attempts). A failed line counts no attempt of the row's.
        assert [c.attempt for c in mine] == list(range(1, len(mine) + 1))
        if response.status == DONE:
            assert [c.status for c in mine][-1] == CallStatus.OK
            assert sum(c.status == CallStatus.OK for c in mine) == 1
            assert response.attempts == 1
        else:
            assert len(mine) == 6 and response.error_kind == CallStatus.SERVER_ERROR
    assert any(
        len([c for c in calls if c.caller == caller]) > 1 for caller in {c.caller for c in calls}
    )


def test_failed_lines_are_asked_again_live_when_the_run_says_so(batch_workers, offline_provider):
    url = offline_provider(batch_seconds=0.5, batch_rate_failed=0.3, fault_seed=5)
    batch_workers()
    run = batched_run(url, retry=BatchRetry.LIVE, questions=6, samples=2)

    ended(run)
    assert statuses(run) == {DONE: 12}
    calls = ledger(run)
    failed = {c.caller for c in calls if c.status == CallStatus.SERVER_ERROR}
    live = [c for c in calls if c.batch_id is None]
    assert failed and {c.caller for c in live} == failed
    assert all(c.status == CallStatus.OK for c in live)
    assert provider_stats(url)["requests"] == len(live)  # at the list price
    assert provider_batches(url)["created"] == 1
    for call in live:
        listed = (LIST_PRICE[0] * call.input_tokens + LIST_PRICE[1] * call.output_tokens) / 10**6
        assert call.cost_usd == listed.quantize(Decimal("0.000001"))


def test_an_expired_batch_puts_its_rows_back_without_counting_an_attempt(
    batch_workers, offline_provider
):
    url = offline_provider(batch_seconds=1)
    httpx.post(f"{url}/offline/batches", json={"expire_next": 1}, timeout=5)
    batch_workers()
    run = batched_run(url, questions=5, samples=2)

    ended(run)
    assert statuses(run) == {DONE: 10}
    assert set(run.responses.values_list("attempts", flat=True)) == {1}
    batches = list(ProviderBatch.objects.filter(scope=run.pk).order_by("pk"))
    assert [(b.status, b.requests, b.recorded, b.retried) for b in batches] == [
        ("expired", 10, 6, 4),
        ("completed", 4, 4, 0),
    ]
    calls = ledger(run)
    assert len(calls) == 10 and len({c.caller for c in calls}) == 10


def pending_batch(batch_workers, offline_provider):
    """(the provider, a run of 20 rows whose one batch is in progress for 8 s)."""
    url = offline_provider(batch_seconds=8, batch_cancel_seconds=0.3)
    batch_workers()
    run = batched_run(url, questions=10, samples=2)
    assert wait_until(
        lambda: ProviderBatch.objects.filter(scope=run.pk, status="in_progress").exists(),
        timeout=60,
    )
    return url, run


def recorded(run) -> None:
    """Wait until a batch of the run has been recorded."""
    done = ProviderBatch.objects.filter(scope=run.pk, recorded_at__isnull=False)
    assert wait_until(done.exists, timeout=60)


def test_pause_cancels_the_providers_batches_and_resume_asks_only_what_was_not_done(
    batch_workers, offline_provider
):
    url, run = pending_batch(batch_workers, offline_provider)

    sampling_run_pause(run=run)
    recorded(run)
    first = ProviderBatch.objects.get(scope=run.pk)
    assert first.status == "cancelled" and first.cancel_asked_at is not None
    counts = statuses(run)
    assert counts[DONE] == first.recorded < 20 and counts[PENDING] == 20 - first.recorded
    assert set(run.responses.filter(status=PENDING).values_list("attempts", flat=True)) == {0}
    assert provider_batches(url)["created"] == 1  # a paused run submits nothing

    sampling_run_resume(run=run)
    ended(run, timeout=120)
    assert statuses(run) == {DONE: 20}
    assert len({c.caller for c in ledger(run)}) == len(ledger(run)) == 20


def test_cancel_reaches_the_providers_batches_and_keeps_what_was_done(
    batch_workers, offline_provider
):
    url, run = pending_batch(batch_workers, offline_provider)

    sampling_run_cancel(run=run)
    recorded(run)
    batch = ProviderBatch.objects.get(scope=run.pk)
    assert batch.status == "cancelled"
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    counts = statuses(run)
    assert counts[DONE] == batch.recorded and counts[PENDING] == 20 - batch.recorded
    assert provider_batches(url)["created"] == 1


def test_a_worker_and_beat_killed_while_batches_are_pending_lose_nothing_and_submit_nothing_twice(
    batch_workers, offline_provider
):
    url = offline_provider(batch_seconds=4)
    worker, beat = batch_workers()
    run = batched_run(url, models=("offline-terse", "offline-friendly"), questions=5, samples=2)
    assert wait_until(
        lambda: ProviderBatch.objects.filter(scope=run.pk, status="in_progress").count() == 2,
        timeout=60,
    )
    for process in (worker, beat):
        os.killpg(process.pid, signal.SIGKILL)
    assert wait_until(lambda: dead(worker.pid) and dead(beat.pid), timeout=20)

    batch_workers()
    ended(run, timeout=120)
    assert statuses(run) == {DONE: 20}
    calls = ledger(run)
    assert len(calls) == 20 and len({c.caller for c in calls}) == 20
    assert provider_batches(url)["created"] == ProviderBatch.objects.filter(scope=run.pk).count()
    assert provider_stats(url)["requests"] == 0


def test_checklist_grading_in_batch_mode_scores_every_answer_once(
    batch_workers, offline_provider, people
):
    url = offline_provider(batch_seconds=0.5)
    batch_workers()
    questions = []
    for _ in range(3):
        question = question_make()
        approved_rubric(question, people["erin"], people["rosa"])
        questions.append(question)
    sampling = sampling_run_create(
        name="S",
        questions=questions,
        models=[offline_model(url, name="offline-terse", batch_api=True)],
        samples_per_item=2,
    )
    sampling = sampling_run_launch(run=sampling)
    ended(sampling)
    grading = grading_run_create(
        sampling_run=sampling,
        grader=offline_model(url, name="offline-grader", batch_api=True),
        mode=GradingMode.CHECKLIST,
        batch_mode=True,
    )
    grading = grading_run_launch(run=grading)

    ended_grading = wait_until(
        lambda: GradingRun.objects.get(pk=grading.pk).status == RunStatus.FINISHED, timeout=120
    )
    assert ended_grading
    checklists = ChecklistCall.objects.filter(grading_run=grading)
    assert set(checklists.values_list("status", flat=True)) == {CallState.DONE}
    assert ResponseScore.objects.filter(grading_run=grading).count() == 6
    judgments = Judgment.objects.filter(grading_run=grading)
    assert judgments.exists()
    assert judgments.filter(status=CallState.DONE, met__isnull=False).count() == judgments.count()
    grader = LLMCall.objects.filter(caller__startswith="grading.checklist:")
    assert grader.count() == 6 and not grader.filter(batch__isnull=True).exists()
    assert provider_batches(url)["created"] == 1  # the grader's; sampling ran live


def test_a_studys_scenario_responses_are_generated_in_batch_mode(
    batch_workers, offline_provider, scenarios
):
    url = offline_provider(batch_seconds=0.5)
    batch_workers()
    study = services.study_create(scenarios=scenarios[:6], name="w", **DEFAULT_TEXTS, **CODES)
    model = offline_model(url, name="offline-thorough", batch_api=True)
    generation, _ = services.scenario_responses_request(
        study=study, model=model, go_live=True, batch_mode=True
    )

    assert wait_until(
        lambda: Study.objects.get(pk=study.pk).status == StudyStatus.LIVE, timeout=120
    )
    generation.refresh_from_db()
    assert generation.status == GenerationStatus.DONE
    assert all(ss.response.text.strip() for ss in study.study_scenarios.all())
    calls = LLMCall.objects.filter(caller__startswith="scenario_response_call:")
    assert calls.count() == 6 and not calls.filter(batch__isnull=True).exists()
    assert provider_stats(url)["requests"] == 0


def test_a_proxy_run_in_batch_mode_records_every_survey_once(
    batch_workers, offline_provider, make_study
):
    url = offline_provider(batch_seconds=0.5, batch_rate_failed=0.1, fault_seed=3)
    batch_workers()
    study = make_study(live=False, count=5)
    models = [offline_model(url, name=name, batch_api=True) for name in ("offline-terse",)]
    run = services.proxy_run_create(
        study=study, models=models, runs_per_model=2, seed=11, batch_mode=True
    )
    run = services.proxy_run_launch(run=run)

    def finished():
        run.refresh_from_db()
        return run.status == RunStatus.FINISHED

    assert wait_until(finished, timeout=120), Counter(run.calls.values_list("status", flat=True))
    assert set(run.calls.values_list("status", flat=True)) == {ProxyCallStatus.DONE}
    assert run.calls.count() == 10
    assert Assignment.objects.filter(participant__proxy_run=run).count() == 10
    calls = LLMCall.objects.filter(caller__startswith=f"{services.PROXY_WORK.caller}:")
    assert calls.filter(status=CallStatus.OK).count() == 10
    assert not calls.filter(batch__isnull=True).exists()
    assert provider_stats(url)["requests"] == 0
