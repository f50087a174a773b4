"""Batch mode's parts (apps/llm/batches.py, the gateway's batch API), run in this process
against the offline provider over HTTP: files within a model's limits, a model without a
batch API, a batch the provider refuses or forgets, a submission cut short by a death
(adopted, not submitted twice), and how a line of an output or error file is read.
tests/workers/test_batch_mode.py runs whole runs with real workers and beat."""

import datetime as dt
import gc
import json
from decimal import Decimal

import httpx
import pytest
from django.utils import timezone

from apps.llm import batches, gateway
from apps.llm.errors import PermanentLLMError, RetryableLLMError
from apps.llm.models import CallStatus, ProviderBatch
from apps.runs.models import Response, ResponseStatus, SamplingRun
from apps.runs.services import SAMPLE_WORK, sampling_run_create, sampling_run_launch
from tests.conftest import wait_until
from tests.factories import offline_model, question_make
from tests.workers.engine_builders import provider_stats

SCHEMA = {"type": "object", "required": ["met"], "properties": {"met": {"type": "boolean"}}}


def batched_run(url, *, questions=4, samples=2, **model_fields):
    model = offline_model(url, name="offline-terse", batch_api=True, **model_fields)
    run = sampling_run_create(
        name="Batched",
        questions=[question_make() for _ in range(questions)],
        models=[model],
        samples_per_item=samples,
    )
    SamplingRun.objects.filter(pk=run.pk).update(batch_mode=True)
    run.refresh_from_db()
    return sampling_run_launch(run=run)


def held_by(batch: ProviderBatch) -> set[int]:
    return set(Response.objects.filter(lease_owner=batch.owner).values_list("pk", flat=True))


def test_rows_are_split_into_files_within_the_models_limits(db, offline_provider):
    url = offline_provider(batch_seconds=30)
    run = batched_run(url, questions=4, samples=2, batch_max_requests=3)

    batches.scope_work(work=SAMPLE_WORK.name, scope=run.pk)

    made = list(ProviderBatch.objects.filter(scope=run.pk).order_by("pk"))
    assert [b.requests for b in made] == [3, 3, 2]
    assert all(b.status == "validating" and b.provider_batch_id for b in made)
    assert set().union(*map(held_by, made)) == set(run.responses.values_list("pk", flat=True))
    assert provider_stats(url)["batches"]["created"] == 3


def test_a_file_is_cut_where_its_bytes_would_pass_the_limit(db, offline_provider):
    url = offline_provider(batch_seconds=30)
    run = batched_run(url, questions=3, samples=2)
    line = len(batches._line(SAMPLE_WORK.calls([run.responses.first().pk])[0][0]))
    run.responses.first().model.__class__.objects.update(batch_max_bytes=line * 2 + line // 2)

    batches.scope_work(work=SAMPLE_WORK.name, scope=run.pk)

    made = ProviderBatch.objects.filter(scope=run.pk)
    assert sorted(made.values_list("requests", flat=True)) == [2, 2, 2]
    assert all(b.bytes <= b.model.batch_max_bytes for b in made)


def test_a_model_without_a_batch_api_fails_its_rows_with_the_reason(db, offline_provider):
    url = offline_provider()
    run = batched_run(url, questions=1, samples=2)
    run.responses.first().model.__class__.objects.update(batch_api=False)

    batches.scope_work(work=SAMPLE_WORK.name, scope=run.pk)

    failed = run.responses.filter(status=ResponseStatus.FAILED)
    assert failed.count() == 2
    assert all("has no batch API" in r.error for r in failed)
    assert not ProviderBatch.objects.exists()


def test_a_batch_the_provider_refuses_fails_its_rows_with_the_providers_reason(
    db, offline_provider
):
    url = offline_provider(batch_max_requests=2)  # the model config says 50,000
    run = batched_run(url, questions=2, samples=2)

    batches.scope_work(work=SAMPLE_WORK.name, scope=run.pk)
    batches.batches_poll()

    batch = ProviderBatch.objects.get(scope=run.pk)
    assert batch.status == "failed" and batch.recorded_at is not None
    assert "too_many_requests" in batch.error
    failed = run.responses.filter(status=ResponseStatus.FAILED)
    assert failed.count() == 4
    assert all("too_many_requests" in r.error for r in failed)
    assert {r.error_kind for r in failed} == {CallStatus.BAD_REQUEST}


def test_a_batch_the_provider_forgot_puts_its_rows_back_uncounted(db, offline_provider):
    url = offline_provider(batch_seconds=30)
    run = batched_run(url, questions=1, samples=2)
    batches.scope_work(work=SAMPLE_WORK.name, scope=run.pk)
    ProviderBatch.objects.update(provider_batch_id="batch-offline-unknown")

    batches.batches_poll()

    batch = ProviderBatch.objects.get()
    assert batch.status == "failed" and "No such batch" in batch.error
    assert batch.retried == 2 and batch.recorded_at is not None
    assert set(run.responses.values_list("status", "attempts", "lease_owner")) == {
        (ResponseStatus.PENDING, 0, "")
    }


def death_before_recording(run, url, *, created: bool) -> ProviderBatch:
    """The state a worker leaves when it dies after handing rows to a batch and before
    recording its submission: (`created`) after the provider made the batch, or before."""
    owner = "dead-host:1"
    ids = batches.engine.batch_claim(SAMPLE_WORK, run.pk, owner=owner, limit=100)
    calls, _ = SAMPLE_WORK.calls(ids)
    written = batches._File(calls[0].model)
    for call in calls:
        written.add(call.row_id, batches._line(call))
    batch = batches._rows_hand_over(SAMPLE_WORK, run.pk, written, owner=owner)
    content = b"".join(batches._line(call) for call in calls)
    if created:
        gateway.batch_create(
            model=batch.model,
            content=content,
            filename="dead.jsonl",
            metadata=batches._metadata(batch),
        )
    ProviderBatch.objects.filter(pk=batch.pk).update(
        held_until=timezone.now() - dt.timedelta(seconds=1)
    )
    return batch


@pytest.mark.parametrize("created", [True, False])
def test_a_submission_cut_short_is_taken_up_by_the_poll_and_never_made_twice(
    db, offline_provider, created
):
    url = offline_provider(batch_seconds=0.2)
    run = batched_run(url, questions=2, samples=2)
    batch = death_before_recording(run, url, created=created)
    assert batch.status == "preparing" and len(held_by(batch)) == 4

    batches.batches_poll()  # adopts the provider's batch, or submits it

    batch.refresh_from_db()
    assert batch.status != "preparing" and batch.provider_batch_id
    assert provider_stats(url)["batches"]["created"] == 1
    assert httpx.get(f"{url}/batches/{batch.provider_batch_id}").json()["metadata"][
        "assay_batch"
    ] == str(batch.pk)

    def recorded():
        batches.batches_poll()
        batch.refresh_from_db()
        return batch.recorded_at is not None

    assert wait_until(recorded, timeout=30, interval=0.3)
    assert set(run.responses.values_list("status", flat=True)) == {ResponseStatus.DONE}
    assert provider_stats(url)["batches"]["created"] == 1


def test_a_batch_held_by_a_live_reader_is_left_alone(db, offline_provider):
    url = offline_provider(batch_seconds=30)
    run = batched_run(url, questions=1, samples=1)
    batches.scope_work(work=SAMPLE_WORK.name, scope=run.pk)
    ProviderBatch.objects.update(
        held_by="other:1", held_until=timezone.now() + dt.timedelta(minutes=1)
    )

    assert batches.batches_poll() == {"read": 0, "recorded": 0}


# --- reading a line ---------------------------------------------------------------------------


def answered(content: str, *, usage=(100, 20)) -> dict:
    body = {
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
    }
    return {"custom_id": "1", "response": {"status_code": 200, "body": body}, "error": None}


def failed(code: int, message: str) -> dict:
    body = {"error": {"message": message}}
    return {"custom_id": "1", "response": {"status_code": code, "body": body}, "error": None}


def test_an_answer_is_priced_at_the_batch_price_and_validated_as_a_live_one(db):
    model = offline_model("http://127.0.0.1:9/v1", batch_api=True, batch_discount=Decimal("0.4"))

    ok = gateway.batch_answer(model=model, line=answered('{"met": true}'), schema=SCHEMA)
    # (2.50 * 100 + 10.00 * 20) / 1e6 = 0.00045, at 40%
    assert ok.completion.data == {"met": True} and ok.completion.cost_usd == Decimal("0.00018")
    assert ok.ledger["status"] == CallStatus.OK and ok.ledger["cost_usd"] == Decimal("0.00018")

    bad = gateway.batch_answer(model=model, line=answered('{"met": "yes"}'), schema=SCHEMA)
    assert isinstance(bad.error, RetryableLLMError)
    assert bad.error.status == CallStatus.INVALID_OUTPUT and bad.error.cost_usd == Decimal(
        "0.00018"
    )
    assert "does not match the schema" in bad.ledger["error_message"]

    checked = gateway.batch_answer(
        model=model,
        line=answered('{"met": true}'),
        schema=SCHEMA,
        check=lambda data: "a verdict needs a reason",
    )
    assert checked.error.status == CallStatus.INVALID_OUTPUT


def test_a_failed_line_is_retryable_unless_the_request_itself_was_wrong(db):
    model = offline_model("http://127.0.0.1:9/v1", batch_api=True)

    server = gateway.batch_answer(model=model, line=failed(500, "overloaded"))
    assert isinstance(server.error, RetryableLLMError)
    assert server.error.status == CallStatus.SERVER_ERROR and "overloaded" in str(server.error)
    assert server.ledger["status"] == CallStatus.SERVER_ERROR

    request = gateway.batch_answer(model=model, line=failed(400, "bad messages"))
    assert isinstance(request.error, PermanentLLMError)
    assert request.error.status == CallStatus.BAD_REQUEST


@pytest.mark.parametrize(
    "line",
    [
        None,
        {"custom_id": "1", "response": None, "error": {"code": "batch_expired", "message": "."}},
        {"custom_id": "1", "response": None, "error": {"code": "batch_cancelled", "message": "."}},
    ],
)
def test_a_line_the_batch_never_ran_is_asked_again_without_a_ledger_row(db, line):
    model = offline_model("http://127.0.0.1:9/v1", batch_api=True)
    answer = gateway.batch_answer(model=model, line=line)
    assert answer.not_run and answer.ledger is None


def test_a_request_line_carries_the_live_calls_parameters_and_seed(db, offline_provider):
    url = offline_provider()
    run = batched_run(url, questions=1, samples=1)
    call = SAMPLE_WORK.calls(list(run.responses.values_list("pk", flat=True)))[0][0]
    line = json.loads(batches._line(call))
    assert line["custom_id"] == str(call.row_id) and line["url"] == "/v1/chat/completions"
    assert line["body"]["model"] == "offline-terse"
    assert line["body"]["messages"] == call.messages
    assert line["body"]["seed"] == call.params["seed"]
    assert line["body"]["metadata"] == {"assay_purpose": "sample"}


def test_a_line_is_found_by_its_custom_id_wherever_the_provider_writes_it():
    late = json.dumps({"response": {"body": {"text": "x" * 500}}, "custom_id": "13"})
    lines = batches._Lines()
    lines.add(b'{"id": "r1", "custom_id": "12", "response": null}\n' + late.encode() + b"\n")
    lines.add(b'not json\n{"custom_id": "14"\n')
    assert lines.get("12")["id"] == "r1"
    assert lines.get("13")["response"]["body"]["text"] == "x" * 500
    assert lines.get("14") is None and lines.get("15") is None


def test_a_batch_is_read_less_often_as_it_ages_but_at_once_when_cancelled(db):
    model = offline_model("http://127.0.0.1:9/v1", batch_api=True)
    now = timezone.now()
    young = ProviderBatch(model=model, submitted_at=now - dt.timedelta(seconds=20))
    young.read_at = now - dt.timedelta(seconds=2.5)
    old = ProviderBatch(model=model, submitted_at=now - dt.timedelta(hours=3))
    old.read_at = now - dt.timedelta(minutes=9)
    assert batches._due(young) and not batches._due(old)
    old.read_at = now - dt.timedelta(minutes=11)
    assert batches._due(old)
    old.read_at, old.cancel_asked_at = now, now
    assert batches._due(old)


def test_submitting_and_polling_leave_no_client_of_the_batch_api_behind(db, offline_provider):
    url = offline_provider(batch_seconds=30)
    run = batched_run(url, questions=2, samples=1, batch_max_requests=1)
    thresholds = gc.get_threshold()
    gc.set_threshold(10**6)  # as rarely as a worker's collector runs (engine.GC_THRESHOLDS)
    try:
        gc.collect()
        batches.scope_work(work=SAMPLE_WORK.name, scope=run.pk)
        submitted = clients()
        for _ in range(3):
            batches.batches_poll()
        polled = clients()
    finally:
        gc.set_threshold(*thresholds)
    assert ProviderBatch.objects.filter(read_at__isnull=False).count() == 2
    assert (submitted, polled) == (0, 0)


def clients() -> int:
    return sum(type(o).__name__ in ("OpenAI", "OpenAIHTTPClient") for o in gc.get_objects())


def test_rows_taken_over_while_their_file_was_written_are_left_out_of_the_batch(
    db, offline_provider
):
    url = offline_provider(batch_seconds=30)
    run = batched_run(url, questions=2, samples=2)
    owner = "slow-host:1"
    ids = batches.engine.batch_claim(SAMPLE_WORK, run.pk, owner=owner, limit=100)
    written = batches._File(run.responses.first().model)
    for call in SAMPLE_WORK.calls(ids)[0]:
        written.add(call.row_id, batches._line(call))
    lost = ids[1]
    Response.objects.filter(pk=lost).update(status=ResponseStatus.PENDING, lease_owner="")

    batch = batches._rows_hand_over(SAMPLE_WORK, run.pk, written, owner=owner)

    written.file.seek(0)
    sent = [json.loads(line)["custom_id"] for line in written.file]
    assert sent == [str(pk) for pk in ids if pk != lost] == [str(pk) for pk in written.ids]
    assert batch.requests == 3 and held_by(batch) == set(ids) - {lost}
    written.file.close()
