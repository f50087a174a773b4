"""Batch mode: a run's calls through the provider's batch API, at the batch price.

A run in batch mode (`Batched.batch_mode`) is worked by the same engine task as a live one
(apps/llm/engine.py); instead of calling, the task

1. claims the run's rows as a live batch would (`engine.batch_claim`, within the budget),
   builds their calls (`Work.calls`), groups them by model and splits them into files within
   the model's limits (requests and bytes per file);
2. for each file, in one transaction, makes a `ProviderBatch` row and hands the file's rows
   to it: their lease owner becomes `batch:<id>` with a lease longer than the provider's
   24-hour window, so that the lease sweep leaves them alone while the provider works;
3. uploads the file and creates the batch, with `{"assay_batch": <id>}` in its metadata.

The beat task `batches_poll` then reads every open batch. It cancels those of a paused or
cancelled run at the provider, and once a batch has ended it downloads its output and
error files and records each line through the work's own `record`, as a live call's result,
in short transactions that also write the line's ledger row (marked with the batch, at the
batch price). A line the batch never ran (expired, cancelled) goes back to waiting, its
attempt not counted; a failed line (a 5xx, an answer that failed validation) is asked again,
in the next batch or live as the run chose (`batch_retry`), until it is out of attempts.

Nothing is lost or done twice when a worker dies at any moment: rows recorded are no longer
held by the batch, so reading it again records only the rest, each with its ledger row in
the same transaction; a batch is held by whoever submits or reads it for a while
(`held_until`), and one left preparing is taken up by the next poll, which first looks at
the provider for a batch that carries its id in its metadata before it submits the rows
again.
"""

import datetime as dt
import json
import logging
import re
import tempfile
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from . import engine, gateway, leases
from .errors import LLMError, PermanentLLMError
from .models import BatchRetry, CallStatus, LLMCall, ModelConfig, ProviderBatch
from .services import llm_calls_record

log = logging.getLogger(__name__)

# A provider has 24 hours to end a batch, and then writes its files: the rows a batch holds
# stay out of the lease sweep's reach for that long and a margin.
ROW_LEASE = dt.timedelta(hours=26)
RECORD_CHUNK = 200  # lines recorded per transaction
Status = ProviderBatch.Status


def scope_work(*, work: str, scope: int) -> engine.BatchOutcome:
    """The engine's task for a scope: live calls (`engine.batch_run`), or in batch mode, its
    due rows submitted in provider batches and, if the run so chose, what failed in a batch
    asked again live."""
    job = engine.work_for(work)
    retry = job.batch_choice(scope)
    if retry is None:
        return engine.batch_run(work=work, scope=scope)
    owner = leases.lease_owner_name()
    submitted = scope_submit(job, scope, owner=owner, retry=retry)
    if retry == BatchRetry.LIVE:
        # What a batch failed (tried before) is asked again live; the rest go in batches.
        outcome = engine.batch_run(work=work, scope=scope, where=Q(attempts__gt=0))
    else:
        outcome = engine.BatchOutcome(again_in=engine.scope_next(job, scope))
    outcome.claimed += submitted
    return outcome


def scope_submit(job: engine.Work, scope: int, *, owner: str, retry: str) -> int:
    """Claim up to LLM_BATCH_ROWS of the scope's due rows and submit them in provider
    batches; how many rows were claimed. Their requests are built BUILD_ROWS at a time and
    written to a file per model, sent whenever it reaches the model's limits: a worker
    holds no more than that many requests in memory."""
    job.prepare(scope)
    fresh = Q(attempts=0) if retry == BatchRetry.LIVE else None
    ids = engine.batch_claim(job, scope, owner=owner, limit=settings.LLM_BATCH_ROWS, where=fresh)
    files: dict[int, _File] = {}
    refused: list[tuple[int, str]] = []
    for start in range(0, len(ids), BUILD_ROWS):
        calls, cannot = job.calls(ids[start : start + BUILD_ROWS])
        refused += cannot
        for call in calls:
            if not call.model.batch_api:
                refused.append((call.row_id, no_batch_api(call.model)))
                continue
            held = files.get(call.model.pk)
            try:
                line = _line(call)
            except LLMError as exc:
                refused.append((call.row_id, str(exc)))
                continue
            if len(line) > call.model.batch_max_bytes:
                refused.append((call.row_id, _too_large(call.model, len(line))))
                continue
            if held is not None and not held.fits(line):
                _send(job, scope, held, owner=owner)
                held = None
                _renew(job, ids, owner=owner)
            if held is None:
                held = files[call.model.pk] = _File(call.model)
            held.add(call.row_id, line)
    for held in files.values():
        _send(job, scope, held, owner=owner)
    if refused:
        job.refuse(refused, owner=owner)
    return len(ids)


BUILD_ROWS = 200  # requests built at a time


def _renew(job: engine.Work, ids: list[int], *, owner: str) -> None:
    """Keep the claim on the rows not yet handed to a batch while files are sent."""
    rows = job.model._default_manager.filter(pk__in=ids)
    leases.lease_renew(rows, states=job.states, owner=owner)


def no_batch_api(model: ModelConfig) -> str:
    return (
        f"{model.display_name} has no batch API (its model config says so): run it live, or "
        "say in the console that its provider takes batches."
    )


def batch_mode_refusal(
    *, batch_mode: bool, batch_retry: str, models: Iterable[ModelConfig]
) -> str | None:
    """Why a run of `models` cannot have these batch settings (a message a researcher can
    read), or None when it can: every service that makes a run checks this."""
    if batch_retry not in BatchRetry.values:
        choices = " or ".join(repr(value) for value in BatchRetry.values)
        return f"Failed batch lines are asked again {choices}, not {batch_retry!r}."
    if not batch_mode:
        return None
    return next((no_batch_api(model) for model in models if not model.batch_api), None)


def _too_large(model: ModelConfig, size: int) -> str:
    return (
        f"The request is {size} bytes: more than {model.display_name}'s batch files may hold "
        f"({model.batch_max_bytes} bytes). Run it live."
    )


def _line(call: engine.Call) -> bytes:
    body = gateway.batch_body(
        model=call.model, messages=call.messages, purpose=call.purpose, params=call.params
    )
    line = {"custom_id": str(call.row_id), "method": "POST", "url": gateway.BATCH_ENDPOINT}
    return json.dumps({**line, "body": body}, ensure_ascii=False).encode() + b"\n"


class _File:
    """A batch input file being written, on disk, within its model's limits."""

    def __init__(self, model: ModelConfig):
        self.model = model
        self.ids: list[int] = []
        self.size = 0
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 (_send closes it)

    def fits(self, line: bytes) -> bool:
        return (
            len(self.ids) < self.model.batch_max_requests
            and self.size + len(line) <= self.model.batch_max_bytes
        )

    def add(self, row_id: int, line: bytes) -> None:
        self.file.write(line)
        self.ids.append(row_id)
        self.size += len(line)

    def keep(self, ids: set[int]) -> None:
        """Write the file again with only the lines of `ids`."""
        self.file.seek(0)
        kept = tempfile.TemporaryFile()  # noqa: SIM115 (_send closes it)
        self.size = 0
        for line in self.file:
            found = CUSTOM_ID.search(line)
            if found and int(found.group(1)) in ids:
                kept.write(line)
                self.size += len(line)
        self.file.close()
        self.file, self.ids = kept, [pk for pk in self.ids if pk in ids]


def _send(job: engine.Work, scope: int, held: _File, *, owner: str) -> None:
    try:
        batch = _rows_hand_over(job, scope, held, owner=owner)
        if batch is not None:
            held.file.seek(0)
            _submit(job, batch, held.file)
    finally:
        held.file.close()


def _hold() -> dict:
    return {
        "held_by": leases.lease_owner_name(),
        "held_until": timezone.now() + dt.timedelta(seconds=settings.LLM_BATCH_HOLD_SECONDS),
    }


def _rows_hand_over(
    job: engine.Work, scope: int, held: _File, *, owner: str
) -> ProviderBatch | None:
    """A new batch that holds the file's rows (those `owner` still holds), in one
    transaction."""
    with transaction.atomic():
        rows = engine.held(
            job.model._default_manager.filter(pk__in=held.ids), states=job.states, owner=owner
        )
        mine = set(rows.select_for_update().values_list("pk", flat=True))
        if not mine:
            return None
        batch = ProviderBatch.objects.create(
            work=job.name,
            scope=scope,
            model=held.model,
            requests=len(mine),
            bytes=held.size,
            **_hold(),
        )
        job.model._default_manager.filter(pk__in=mine).update(
            lease_owner=batch.owner, lease_expires_at=timezone.now() + ROW_LEASE
        )
    if len(mine) < len(held.ids):
        # Their lease ran out while the file was written (the sweep put them back): they go
        # to whoever claims them next, not in this batch.
        log.warning(
            "batch %s: %s of its rows were taken over first", batch.pk, len(held.ids) - len(mine)
        )
        held.keep(mine)
        ProviderBatch.objects.filter(pk=batch.pk).update(bytes=held.size)
    return batch


def _metadata(batch: ProviderBatch) -> dict:
    return {"assay_batch": str(batch.pk), "assay_work": batch.work, "assay_scope": str(batch.scope)}


def _submit(job: engine.Work, batch: ProviderBatch, content) -> None:
    """Upload the batch's file and create it at the provider; a failure the provider may get
    over leaves it preparing, for the next poll to take up."""
    try:
        state = gateway.batch_create(
            model=batch.model,
            content=content,
            filename=f"assay-batch-{batch.pk}.jsonl",
            metadata=_metadata(batch),
        )
    except PermanentLLMError as exc:
        _batch_refused(job, batch, exc)
        return
    except LLMError as exc:
        log.warning("batch %s not submitted, the next poll tries again: %s", batch.pk, exc)
        ProviderBatch.objects.filter(pk=batch.pk).update(error=str(exc)[:2000], held_until=None)
        return
    _submitted(batch, state)


def _submitted(batch: ProviderBatch, state: dict) -> None:
    batch.provider_batch_id, batch.input_file_id = state["id"], state["input_file_id"]
    batch.status, batch.submitted_at = state["status"], timezone.now()
    batch.error, batch.held_by, batch.held_until = "", "", None
    batch.save(
        update_fields=[
            "provider_batch_id",
            "input_file_id",
            "status",
            "submitted_at",
            "error",
            "held_by",
            "held_until",
        ]
    )


def _batch_refused(job: engine.Work, batch: ProviderBatch, error: LLMError) -> None:
    """The provider refused the batch (a bad file, a bad key): its rows fail with the
    provider's reason, to be retried from the run's page once it is put right."""
    ids = list(
        job.model._default_manager.filter(lease_owner=batch.owner).values_list("pk", flat=True)
    )
    job.refuse([(pk, str(error)) for pk in ids], owner=batch.owner)
    ProviderBatch.objects.filter(pk=batch.pk).update(
        status=Status.FAILED,
        error=str(error)[:2000],
        ended_at=timezone.now(),
        recorded_at=timezone.now(),
        held_by="",
        held_until=None,
    )
    _scope_after(job, batch.scope)


# --- the poll ------------------------------------------------------------------------------


def batches_poll(*, scope: tuple[str, int] | None = None) -> dict[str, int]:
    """Beat: read every open batch (that nobody else is reading), cancel those of a stopped
    run, record those that ended. How many it read, and recorded."""
    open_batches = ProviderBatch.objects.filter(recorded_at__isnull=True)
    if scope is not None:
        open_batches = open_batches.filter(work=scope[0], scope=scope[1])
    counts = {"read": 0, "recorded": 0}
    listed = _listed(open_batches)
    for pk in open_batches.order_by("pk").values_list("pk", flat=True):
        batch = _take(pk)
        if batch is None:
            continue
        counts["read"] += 1
        try:
            if _advance(batch, listed.get(batch.provider_batch_id)):
                counts["recorded"] += 1
        except LLMError as exc:
            log.warning("batch %s could not be read, the next poll tries again: %s", pk, exc)
            ProviderBatch.objects.filter(pk=pk).update(error=str(exc)[:2000])
        finally:
            ProviderBatch.objects.filter(pk=pk, held_by=batch.held_by).update(
                held_by="", held_until=None
            )
    return counts


def _listed(open_batches) -> dict[str, dict]:
    """The open batches that are due to be read, as their providers list them: one listing
    per provider connection, not a call per batch (each call costs a client of litellm's)."""
    due: dict[tuple, list[ProviderBatch]] = {}
    for batch in open_batches.exclude(provider_batch_id="").select_related("model"):
        if _due(batch):
            due.setdefault(gateway.batch_connection(batch.model), []).append(batch)
    states: dict[str, dict] = {}
    for batches in due.values():
        try:
            states |= gateway.batch_states(
                model=batches[0].model, batch_ids={b.provider_batch_id for b in batches}
            )
        except LLMError as exc:
            log.warning("listing batches failed, each is read on its own: %s", exc)
    return states


def _take(pk: int) -> ProviderBatch | None:
    """Hold the batch for a while, unless another holds it: two polls never read one batch
    at once, and one that died holding it lets go when its hold runs out."""
    now = timezone.now()
    hold = _hold()
    hold["held_by"] = f"{hold['held_by']}:{now.timestamp():.6f}"
    free = Q(held_until__isnull=True) | Q(held_until__lt=now)
    taken = ProviderBatch.objects.filter(free, pk=pk, recorded_at__isnull=True).update(**hold)
    return ProviderBatch.objects.select_related("model").get(pk=pk) if taken else None


def _advance(batch: ProviderBatch, listed: dict | None = None) -> bool:
    """Move the batch on by what the provider says (`listed`: as it listed the batch this
    poll); whether its results were recorded."""
    job = engine.work_for(batch.work)
    if batch.status == Status.PREPARING:
        _recover(job, batch)
        return False
    if batch.cancel_asked_at is None and job.batches_stop(batch.scope):
        try:
            gateway.batch_cancel(model=batch.model, batch_id=batch.provider_batch_id)
        except PermanentLLMError as exc:
            # It ended first, or the provider forgot it: read below either way.
            log.info("batch %s was not cancelled: %s", batch.pk, exc)
        ProviderBatch.objects.filter(pk=batch.pk).update(cancel_asked_at=timezone.now())
    elif not _due(batch):
        return False
    try:
        state = listed or gateway.batch_retrieve(
            model=batch.model, batch_id=batch.provider_batch_id
        )
    except gateway.BatchGone as exc:
        # Nothing of it can be read: every row is asked again, its attempt not counted.
        _rows_put_back(job, batch, str(exc))
        return True
    batch.status, batch.read_at, batch.error = state["status"], timezone.now(), ""
    batch.completed, batch.failed = state["completed"], state["failed"]
    batch.output_file_id, batch.error_file_id = state["output_file_id"], state["error_file_id"]
    batch.save(
        update_fields=[
            "status",
            "read_at",
            "completed",
            "failed",
            "output_file_id",
            "error_file_id",
        ]
    )
    if batch.status not in gateway.BATCH_ENDED:
        return False
    if batch.status == Status.FAILED:
        reason = state["errors"] or "the provider gave no reason"
        _batch_refused(
            job,
            batch,
            PermanentLLMError(
                f"The provider refused the batch: {reason}", status=CallStatus.BAD_REQUEST
            ),
        )
        return True
    _record(job, batch)
    return True


# A batch is read at every poll while it is young, then less often as it ages (a tenth of its
# age, at most every READ_MAX): a provider takes up to 24 hours, and each read costs a new
# client of litellm's (about 25 ms of CPU), which every few seconds for a day would cost more
# than the calls themselves.
READ_SHARE = 0.1
READ_MAX = dt.timedelta(minutes=10)


def _due(batch: ProviderBatch) -> bool:
    if batch.read_at is None or batch.cancel_asked_at is not None:
        return True
    now = timezone.now()
    age = now - (batch.submitted_at or batch.created_at)
    return now - batch.read_at >= min(age * READ_SHARE, READ_MAX)


def _recover(job: engine.Work, batch: ProviderBatch) -> None:
    """A batch left preparing (its submitter died, or the provider failed it): adopt the
    provider's batch if it was created after all, else submit its rows again."""
    found = gateway.batch_find(model=batch.model, metadata={"assay_batch": str(batch.pk)})
    if found is not None:
        _submitted(batch, found)
        return
    ids = list(
        job.model._default_manager.filter(lease_owner=batch.owner).values_list("pk", flat=True)
    )
    if not ids:
        _recorded(batch)
        return
    calls, refused = job.calls(ids)
    if refused:
        job.refuse(refused, owner=batch.owner)
    if calls:
        with tempfile.TemporaryFile() as content:
            for call in calls:
                content.write(_line(call))
            content.seek(0)
            _submit(job, batch, content)


def _rows_put_back(job: engine.Work, batch: ProviderBatch, error: str) -> None:
    ids = list(
        job.model._default_manager.filter(lease_owner=batch.owner).values_list("pk", flat=True)
    )
    put_back = engine.batch_unclaim(job, ids, owner=batch.owner)
    ProviderBatch.objects.filter(pk=batch.pk).update(
        status=Status.FAILED, error=error[:2000], retried=F("retried") + put_back
    )
    _recorded(batch)
    _scope_after(job, batch.scope)


def _record(job: engine.Work, batch: ProviderBatch) -> None:
    """Record every line of an ended batch for the rows it still holds."""
    lines = _Lines()
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            lines.add(gateway.batch_file(model=batch.model, file_id=file_id))
    ended = timezone.now()
    took_ms = round((ended - (batch.submitted_at or batch.created_at)).total_seconds() * 1000)
    held = job.model._default_manager.filter(lease_owner=batch.owner).order_by("pk")
    ids = list(held.values_list("pk", flat=True))
    live = job.batch_choice(batch.scope) == BatchRetry.LIVE
    for start in range(0, len(ids), RECORD_CHUNK):
        _record_chunk(job, batch, ids[start : start + RECORD_CHUNK], lines, took_ms, live=live)
    ProviderBatch.objects.filter(pk=batch.pk).update(ended_at=ended)
    _recorded(batch)
    _scope_after(job, batch.scope)


class _Lines:
    """A batch's output and error files, each line found by its custom_id and read when its
    row is recorded: a file of thousands of long answers is held once, as bytes, rather
    than as thousands of parsed objects."""

    def __init__(self):
        self.files: list[bytes] = []
        self.at: dict[str, tuple[int, int, int]] = {}  # custom_id: (file, start, end)

    def add(self, content: bytes) -> None:
        number, start = len(self.files), 0
        self.files.append(content)
        while start < len(content):
            end = content.find(b"\n", start)
            end = len(content) if end < 0 else end
            found = CUSTOM_ID.search(content, start, min(end, start + 200))
            if found:
                self.at[found.group(1).decode()] = (number, start, end)
            elif custom_id := _custom_id(content[start:end]):
                self.at[custom_id] = (number, start, end)
            start = end + 1

    def get(self, custom_id: str) -> dict | None:
        where = self.at.get(custom_id)
        if where is None:
            return None
        number, start, end = where
        try:
            line = json.loads(self.files[number][start:end])
        except ValueError:
            return None  # not a line of ours: its row is asked again
        return line if isinstance(line, dict) and line.get("custom_id") == custom_id else None


# A line's custom_id (ours are row ids), read without parsing the line where a provider
# writes it first (OpenAI: {"id": "batch_req_...", "custom_id": "...", ...}).
CUSTOM_ID = re.compile(rb'"custom_id":\s*"([0-9]+)"')


def _custom_id(raw: bytes) -> str | None:
    try:
        line = json.loads(raw)
    except ValueError:
        return None
    found = line.get("custom_id") if isinstance(line, dict) else None
    return found if isinstance(found, str) else None


def _record_chunk(
    job: engine.Work,
    batch: ProviderBatch,
    ids: list[int],
    lines: "_Lines",
    took_ms: int,
    *,
    live: bool,
) -> None:
    """Record the lines of `ids` (the rows the batch still holds) in one transaction, each
    with its ledger row. A line that failed is asked again: live, if the run says so (its
    row keeps its attempt, and the live engine takes rows tried before), else in the next
    batch without counting an attempt, as long as the row has had fewer failed lines than
    the work's retry policy allows attempts of a live call (its gateway retries)."""
    calls, refused = job.calls(ids)
    by_row = {call.row_id: call for call in calls}
    caller = job.caller or job.name
    callers = {pk: f"{caller}:{pk}"[:200] for pk in ids}
    with transaction.atomic():
        rows = job.model._default_manager.filter(pk__in=ids)
        attempts = dict(
            engine.held(rows, states=job.states, owner=batch.owner)
            .select_for_update()
            .values_list("pk", "attempts")
        )
        lines_before = _lines_before([callers[pk] for pk in attempts])
        results, again, back, ledger = [], [], [], []
        for pk in sorted(attempts):
            call = by_row.get(pk)
            if call is None:
                continue  # refused below
            attempt = lines_before.get(callers[pk], 0) + 1  # this row's batch lines
            answer = gateway.batch_answer(
                model=call.model,
                line=lines.get(str(pk)),
                schema=call.schema,
                check=call.check,
                latency_ms=took_ms,
                attempt=attempt,
            )
            if answer.ledger is not None:
                ledger.append(
                    LLMCall(
                        model=call.model,
                        purpose=call.purpose,
                        caller=callers[pk],
                        attempt=attempt,
                        latency_ms=took_ms,
                        prompt_template=call.prompt,
                        batch=batch,
                        **answer.ledger,
                    )
                )
            spent = (
                attempts[pk] >= leases.MAX_ATTEMPTS if live else attempt >= job.policy.max_attempts
            )
            if answer.not_run:
                back.append(pk)
            elif answer.completion is not None:
                results.append(engine.Result(call=call, completion=answer.completion))
            elif isinstance(answer.error, PermanentLLMError) or spent:
                results.append(engine.Result(call=call, error=answer.error))
            else:
                again.append(pk)
        if ledger:
            llm_calls_record(calls=ledger)
        if results:
            job.record(results, owner=batch.owner)
        engine.batch_unclaim(job, back, owner=batch.owner)
        engine.batch_unclaim(job, again, owner=batch.owner, counted=live)
        if refused:
            job.refuse([r for r in refused if r[0] in attempts], owner=batch.owner)
        ProviderBatch.objects.filter(pk=batch.pk).update(
            recorded=F("recorded") + len(results), retried=F("retried") + len(again) + len(back)
        )


def _lines_before(callers: list[str]) -> dict[str, int]:
    """How many batch lines each caller's row has had recorded (each one failed: an answer
    ends the row)."""
    rows = LLMCall.objects.filter(caller__in=callers, batch__isnull=False)
    return dict(rows.values("caller").order_by().annotate(n=Count("pk")).values_list("caller", "n"))


def _recorded(batch: ProviderBatch) -> None:
    ProviderBatch.objects.filter(pk=batch.pk).update(
        recorded_at=timezone.now(), held_by="", held_until=None
    )


def _scope_after(job: engine.Work, scope: int) -> None:
    """Once a batch is recorded: rows put back are worked again (in the next batch, or
    live), and a scope with nothing left is settled."""
    if engine.scope_next(job, scope) is not None:
        engine.scope_start(job, scope, chains=1)
