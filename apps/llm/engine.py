"""The bulk engine: every model call made in bulk, whatever it is for.

A domain app describes its work as a `Work`: the rows that stand for a call (a response to
sample, a judgment or a checklist to grade, ...) grouped in scopes (a run), how to build
a row's call, and how to record results. The engine knows no domain; it

1. claims a batch of a scope's rows in one statement, `UPDATE ... WHERE id IN (SELECT ...
   FOR UPDATE SKIP LOCKED LIMIT n) RETURNING id` (the sub-select a materialized CTE, run
   once), under a lease (apps/llm/leases.py), after
   reserving each row's estimated cost against the scope's budget in the same short
   transaction, so two workers never take one row and a run never spends more than its
   budget plus the calls in flight;
2. makes the calls concurrently on one asyncio loop through the gateway (which keeps the
   limits every process shares, retries and re-asks), renewing the batch's lease meanwhile;
3. records results as they arrive in short transactions with group commit (results that
   arrive while one is written go in the next), never holding a transaction across a call,
   and only for rows the worker still holds;
4. stops taking calls within about a second of the scope being paused or cancelled, and
   puts the rows it had not started back, without counting an attempt.

A worker that dies loses what was in flight: its rows' lease runs out and `expired_requeue`
(the beat sweep) puts them back, so nothing is lost and nothing recorded is repeated.
Progress is read from the rows, never from counters.

Why batches on asyncio, one per process: benchmarks/run_at_scale.py (figures in
benchmarks/RESULTS.md). litellm costs ~12 ms of CPU per call and ~150 MB per process, so a
process per concurrent call is out; a batch of about 200 calls per process, claiming more
as its calls start for about half a minute, keeps the provider's concurrency limit, not the
loop or the gaps between batches, what binds.
"""

import asyncio
import contextlib
import datetime as dt
import gc
import hashlib
import json
import logging
import os
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet, Sum
from django.utils import timezone

from . import dispatch, gateway, leases
from .errors import LLMError
from .models import CallStatus, ModelConfig, PromptTemplate
from .progress import GAVE_UP_KEY

log = logging.getLogger(__name__)

BATCH_SIZE = 200
# A batch claims BATCH_SIZE rows, and more as its calls start, for this long: ending a batch
# costs a tail of calls with nothing behind them and a new loop, clients and claim, and at
# a provider's concurrency limit two processes ending theirs together left the limit a
# third unused for a second (benchmarks/run_at_scale.py, one model at a limit of 16).
BATCH_SECONDS = 30.0
REFILL_BELOW = 80  # claim more when fewer of the batch's calls than this wait for a place
STOP_POLL_SECONDS = 1.0
FLUSH_MAX = 200
RECORD_LINGER_SECONDS = 0.05
# Calls one batch has in the gateway at once. Each holds at most one Redis connection at a
# time (admission, the BLPOP wait for a free slot, release), and a loop's redis.asyncio
# client opens at most 100 (redis-py's default pool) before it raises MaxConnectionsError:
# a grader with a limit of 256 and a batch of 200 hit it. Below the pool, and above what
# one process's CPU can use (about 80 calls/s at 300 ms latency: 24 in flight).
IN_FLIGHT_MAX = 80
GAVE_UP = "The worker making this call stopped {attempts} times before it finished."


@dataclass(frozen=True)
class Call:
    """One model call a row stands for, as the domain built it."""

    row_id: int
    model: ModelConfig
    messages: list[dict]
    purpose: str
    params: dict = field(default_factory=dict)
    schema: dict | None = None
    check: object = None  # a callable(data) -> problem or None: see gateway.acomplete
    prompt: PromptTemplate | None = None


@dataclass(frozen=True)
class Result:
    """A call's outcome: a completion, or the gateway's typed error (its `status` is the
    kind of error, one of CallStatus)."""

    call: Call
    completion: gateway.Completion | None = None
    error: LLMError | None = None


@dataclass(frozen=True)
class Budget:
    limit: Decimal
    committed: Decimal  # spent, plus what the calls in flight hold


class Work:
    """What a domain app tells the engine about one kind of row. Subclass, set the class
    attributes, implement `rows`, `calls` and `record`, and `engine.register` an instance
    in the app's `ready()`.

    The row model has the fields of `models.Leased`, a `status` with the `states`, and
    `cost_usd` and `reserved_usd` when the scope has a budget."""

    name: str = ""
    model: type  # the row model
    states: leases.LeaseStates
    policy: gateway.RetryPolicy = gateway.DEFAULT_POLICY
    batch_size: int = BATCH_SIZE
    caller: str = ""  # how the ledger names a row's calls, "<caller>:<pk>"; default the name
    chains: int | None = None  # batch chains a scope starts with; None: LLM_ENGINE_CHAINS

    def rows(self, scope: int) -> QuerySet:
        """Every row of the scope."""
        raise NotImplementedError

    def scope_lock(self, scope: int) -> Budget | bool:
        """Called in the claim's transaction: lock the scope's row and say whether it takes
        calls (False: paused, cancelled, finished), and if it has a budget, what it is
        (`Budget`). True: it takes calls and has no budget."""
        return True

    def budget_reached(self, scope: int) -> None:
        """The scope has rows to call and no budget left for them: record it."""

    def estimate(self, rows: list[dict]) -> list[Decimal]:
        """The cost to reserve for each claimed row (dicts of `estimate_fields`)."""
        return [Decimal(0)] * len(rows)

    estimate_fields: tuple[str, ...] = ("pk",)

    def calls(self, ids: list[int]) -> tuple[list[Call], list[tuple[int, str]]]:
        """The calls for the claimed rows, and the rows whose call cannot be built, each
        with the reason (they fail at once)."""
        raise NotImplementedError

    def record(self, results: list[Result], *, owner: str) -> None:
        """Store results, in one short transaction, for the rows `owner` still holds
        (`held`). A retryable error the gateway gave up on fails the row with its kind:
        the researcher retries failed rows from the run's page."""
        raise NotImplementedError

    def held_ids(self, results: list[Result], *, owner: str) -> set[int]:
        """The ids of the results' rows that `owner` still holds, locked to the end of the
        caller's transaction (call `record`'s inside it). A row not among them was presumed
        dead and taken over: its successor records it."""
        rows = self.model.objects.filter(pk__in=[r.call.row_id for r in results])
        return set(
            held(rows, states=self.states, owner=owner)
            .select_for_update()
            .values_list("pk", flat=True)
        )

    def refuse(self, failures: list[tuple[int, str]], *, owner: str) -> None:
        """Fail rows whose call could not be built."""
        raise NotImplementedError

    def gave_up(self) -> dict:
        """The changes that fail a row out of attempts (its error message among them)."""
        return {"error": GAVE_UP.format(attempts=leases.MAX_ATTEMPTS)}

    def active_scopes(self) -> Iterable[int]:
        """Scopes that take calls, for the sweep."""
        return ()

    def prepare(self, scope: int) -> None:
        """Called before each claim, outside a transaction: make rows that became due."""

    def settle(self, scope: int) -> float | None:
        """Called after a batch: mark the scope finished when it is. Returns None when
        nothing is left to do, else the seconds after which to look again (0: now)."""
        return None

    def expired(self) -> list[int]:
        """The sweep: the scopes to start again (`expired_requeue`)."""
        return expired_requeue(self)

    def batch_choice(self, scope: int) -> str | None:
        """Whether the scope's calls go through the provider's batch API
        (apps/llm/batches.py): None for live calls, else where a failed line is asked again
        (a `BatchRetry`)."""
        return None

    def batches_stop(self, scope: int) -> bool:
        """Whether the scope's pending provider batches are to be cancelled (paused or
        cancelled by the researcher)."""
        return scope_stopped(self, scope)


# The kind of background work (apps/llm/dispatch.py) that runs one batch of a scope.
BATCH = "engine.batch"
_registry: dict[str, Work] = {}


def register(work: Work) -> Work:
    _registry[work.name] = work
    return work


def work_for(name: str) -> Work:
    try:
        return _registry[name]
    except KeyError:
        raise LookupError(f"No bulk work is registered as {name!r}.") from None


def works() -> list[Work]:
    return list(_registry.values())


def scope_start(work: Work | str, scope: int, *, chains: int | None = None) -> None:
    """The one way work starts: queue the batches that work a scope (`chains` of them, each
    queueing its successor while rows are left) once the caller's transaction commits.
    The worker package queues them (apps/llm/dispatch.py); an unknown work fails here."""
    work = work_for(work) if isinstance(work, str) else work
    for _ in range(chains or work.chains or settings.LLM_ENGINE_CHAINS):
        dispatch.start(BATCH, work.name, scope)


def call_seed(run_seed: int, *parts: int) -> int:
    """The seed a row's call carries: a hash of the run's seed and the row's identity, so
    that every sample is a distinct call and a rerun repeats each one (as far as the
    provider honours seeds; litellm drops it for providers without one). 31 bits: the
    widest that every provider that takes a seed accepts."""
    digest = hashlib.blake2b(":".join(map(str, (run_seed, *parts))).encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") % 2**31


def claimable(states: leases.LeaseStates, now: dt.datetime) -> Q:
    return (Q(status=states.waiting) | Q(status=states.running, lease_expires_at__lt=now)) & Q(
        attempts__lt=leases.MAX_ATTEMPTS
    )


def held(rows: QuerySet, *, states: leases.LeaseStates, owner: str) -> QuerySet:
    """`rows` that `owner` still holds: write results through this."""
    return leases.lease_held(rows, states=states, owner=owner)


def failed_rows(rows: QuerySet, *, states: leases.LeaseStates, error_kind: str = "") -> QuerySet:
    """`rows` that failed: all, or those that failed with `error_kind` (a CallStatus, or
    GAVE_UP_KEY for those a worker gave up on, stored without a kind). ValueError for any
    other kind."""
    failed = rows.filter(status=states.failed)
    if not error_kind:
        return failed
    if error_kind not in CallStatus.values and error_kind != GAVE_UP_KEY:
        shown = error_kind if len(error_kind) <= 40 else error_kind[:40] + "…"
        raise ValueError(f"Unknown kind of error: {shown!r}.")
    return failed.filter(error_kind="" if error_kind == GAVE_UP_KEY else error_kind)


def rows_requeue(rows: QuerySet, *, states: leases.LeaseStates, **reset) -> int:
    """Put `rows` back to waiting with a fresh budget of attempts, no lease, no error and
    no reservation (and `reset`, fields of their own); how many."""
    return rows.update(
        status=states.waiting,
        attempts=0,
        error="",
        error_kind="",
        lease_owner="",
        lease_expires_at=None,
        reserved_usd=None,
        completed_at=None,
        **reset,
    )


def committed(rows: QuerySet, *, states: leases.LeaseStates) -> Decimal:
    """What a scope has spent, plus what its calls in flight hold."""
    totals = rows.aggregate(
        spent=Sum("cost_usd"), held=Sum("reserved_usd", filter=Q(status=states.running))
    )
    return (totals["spent"] or Decimal(0)) + (totals["held"] or Decimal(0))


def budget_short(work: Work, scope: int, *, limit: Decimal) -> Decimal | None:
    """What the scope has committed, when `limit` would not cover its next call (so
    resuming would stop again at once); None when it would."""
    spent = committed(work.rows(scope), states=work.states)
    waiting = work.rows(scope).filter(status=work.states.waiting).order_by("pk")
    nxt = list(waiting.values(*work.estimate_fields)[:1])
    cost = work.estimate(nxt)[0] if nxt else Decimal(0)
    return spent if spent + cost > limit else None


def batch_claim(
    work: Work,
    scope: int,
    *,
    owner: str,
    limit: int,
    budget_final: bool = True,
    where: Q | None = None,
) -> list[int]:
    """Claim up to `limit` of the scope's rows for `owner`; the ids claimed (none when the
    scope takes no calls, or its budget is spent). A batch refilling itself passes
    `budget_final=False`: its own calls in flight still hold reservations that may come back
    (a reservation is the longest answer; most cost less), so a budget short now is not
    recorded as reached; its next batch claims after they have settled. `where` narrows the
    rows to claim (batch mode: rows not yet tried, or tried before)."""
    now = timezone.now()
    rows = work.rows(scope)
    table = rows.model._meta.db_table
    with transaction.atomic():
        budget = work.scope_lock(scope)
        if budget is False:
            return []
        candidates = rows.filter(claimable(work.states, now)).order_by("pk")
        if where is not None:
            candidates = candidates.filter(where)
        if isinstance(budget, Budget):
            picked = list(
                candidates.select_for_update(skip_locked=True, of=("self",)).values(
                    *work.estimate_fields
                )[:limit]
            )
            if not picked:
                return []
            left = budget.limit - budget.committed
            taken: dict[Decimal, list[int]] = {}
            for row, cost in zip(picked, work.estimate(picked), strict=True):
                if cost > left:
                    break
                left -= cost
                taken.setdefault(cost, []).append(row["pk"])
            if not taken:
                if budget_final:
                    work.budget_reached(scope)
                return []
            ids = []
            for cost, group in taken.items():
                rows.filter(pk__in=group).update(
                    status=work.states.running,
                    lease_owner=owner,
                    lease_expires_at=now + leases.lease_duration(),
                    attempts=F("attempts") + 1,
                    reserved_usd=cost,
                    started_at=now,
                )
                ids += group
            return sorted(ids)
        # One statement: the sub-select locks the rows it picks, skipping those another
        # worker is claiming, and the update claims them. The sub-select is a materialized
        # CTE, so that it runs once: as `WHERE id IN (SELECT ... LIMIT n)` the planner may
        # run it again for every row it joins (a semi-join it rescans), and each run picks
        # n rows more (PostgreSQL 18 claimed 12 rows for a limit of 5 once its statistics
        # had changed).
        inner, params = (
            candidates.select_for_update(skip_locked=True, of=("self",))
            .values("pk")[:limit]
            .query.sql_with_params()
        )
        with connection.cursor() as cursor:
            # The table is our model's and the sub-select Django's, with bound parameters.
            sql = (
                f"WITH picked AS MATERIALIZED ({inner}) "  # noqa: S608
                f'UPDATE "{table}" SET status = %s, lease_owner = %s, lease_expires_at = %s, '
                f'attempts = attempts + 1, started_at = %s WHERE "id" IN (SELECT * FROM picked) '
                f'RETURNING "id"'
            )
            cursor.execute(
                sql,
                [*params, work.states.running, owner, now + leases.lease_duration(), now],
            )
            return sorted(pk for (pk,) in cursor.fetchall())


def rows_write(rows: list, fields: list[str]) -> int:
    """Save `fields` of model instances `rows` (of one model, saved before) in one
    `UPDATE ... FROM (VALUES ...)`, as `bulk_update` does but without its CASE per field and
    row: that cost about 17 ms of CPU per row recorded, more than the call itself
    (benchmarks/run_at_scale.py). Call it in the transaction that checked the rows are held."""
    if not rows:
        return 0
    meta = rows[0]._meta
    pk = meta.pk
    columns = [meta.get_field(name) for name in fields]
    casts = [pk.db_type(connection), *(f.db_type(connection) for f in columns)]
    one = "(" + ", ".join(f"%s::{cast}" for cast in casts) + ")"
    params: list = []
    for row in rows:
        params.append(pk.get_db_prep_save(row.pk, connection))
        params += [f.get_db_prep_save(getattr(row, f.attname), connection) for f in columns]
    names = ", ".join(f'"{f.column}"' for f in [pk, *columns])
    sets = ", ".join(f'"{f.column}" = v."{f.column}"' for f in columns)
    # Table, columns and casts are the model's own; every value is a bound parameter.
    sql = (
        f'UPDATE "{meta.db_table}" AS t SET {sets} FROM (VALUES '  # noqa: S608
        f"{', '.join([one] * len(rows))}) AS v({names}) "
        f'WHERE t."{pk.column}" = v."{pk.column}"'
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def rows_insert(model, rows: list[dict], *, constants: dict | None = None) -> int:
    """Insert new rows of `model`, skipping any that a unique constraint already holds (as
    `bulk_create(ignore_conflicts=True)`), in one `INSERT ... SELECT` from
    `json_populate_recordset`. Each row is a dict from column names (a foreign key's
    `..._id`) to values that JSON holds (ids, text, numbers, booleans, None), all with the
    same keys; `constants` (field name to value) are the same for every row, and every other
    field takes its default (now, for `auto_now`). PostgreSQL parses and converts the values,
    where `bulk_create` prepares each through its field in Python: that cost about 2 ms of CPU
    for a checklist call's 12 judgments, a sixth of the call (benchmarks/run_at_scale.py).
    How many rows were inserted."""
    if not rows:
        return 0
    meta = model._meta
    given = set(rows[0])
    if unknown := given - {f.column for f in meta.concrete_fields}:
        raise ValueError(f"{meta.label} has no columns {sorted(unknown)}")
    constants = constants or {}
    columns, values, params = [], [], []
    for f in meta.concrete_fields:
        if f.primary_key:
            continue
        columns.append(f'"{f.column}"')
        if f.column in given:
            values.append(f'r."{f.column}"')
            continue
        if f.name in constants:
            value = constants[f.name]
        elif getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
            value = timezone.now()
        else:
            value = f.get_default()
        values.append("%s")
        params.append(f.get_db_prep_save(value, connection))
    # Table and columns are the model's own; every value is a bound parameter.
    sql = (
        f'INSERT INTO "{meta.db_table}" ({", ".join(columns)}) '  # noqa: S608
        f"SELECT {', '.join(values)} "
        f'FROM json_populate_recordset(NULL::"{meta.db_table}", %s::json) AS r '
        f"ON CONFLICT DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, json.dumps(rows, ensure_ascii=False)])
        return cursor.rowcount


def batch_unclaim(work: Work, ids: list[int], *, owner: str, counted: bool = False) -> int:
    """Put held rows back to waiting: rows that were never called, their attempt not
    counted, or (`counted`) rows whose call failed and is to be made again."""
    if not ids:
        return 0
    rows = work.model._default_manager.filter(pk__in=ids)
    budgeted = {"reserved_usd": None} if _has_field(work.model, "reserved_usd") else {}
    return held(rows, states=work.states, owner=owner).update(
        status=work.states.waiting,
        lease_owner="",
        lease_expires_at=None,
        attempts=F("attempts") - (0 if counted else 1),
        **budgeted,
    )


def _has_field(model, name: str) -> bool:
    return any(f.name == name for f in model._meta.concrete_fields)


@dataclass
class BatchOutcome:
    claimed: int = 0
    done: int = 0
    failed: int = 0
    unstarted: int = 0
    again_in: float | None = None  # seconds until the scope should be looked at again


class _Recorder:
    """Group commit of results: one transaction per burst, in the connection's thread."""

    def __init__(self, work: Work, owner: str):
        self.pending: list[Result] = []
        self.writing = False
        self.write = sync_to_async(work.record)
        self.owner = owner

    async def add(self, result: Result) -> None:
        self.pending.append(result)
        if self.writing:
            return
        self.writing = True
        try:
            # Let the results of the next few milliseconds join this write: a write's fixed
            # cost (its transaction, the held check, the queries a domain's record makes)
            # then falls on several results, not on one (grading: 12 judgments and a score
            # per answer, benchmarks/run_at_scale.py).
            await asyncio.sleep(RECORD_LINGER_SECONDS)
            while self.pending:
                batch, self.pending = self.pending[:FLUSH_MAX], self.pending[FLUSH_MAX:]
                await self.write(batch, owner=self.owner)
        finally:
            self.writing = False


async def _execute(
    work: Work, scope: int, calls: list[Call], owner: str, more=None
) -> BatchOutcome:
    """Make the batch's calls. `more()` (sync, in the connection's thread) claims more rows
    and returns their calls: it is called whenever fewer than REFILL_BELOW calls wait for a
    place, until the batch has run about BATCH_SECONDS, so that a process never idles at the
    end of a batch while the scope has rows to claim."""
    gateway.loop_setup()  # this loop is the batch's own, closed by aclose_loop below
    loop = asyncio.get_running_loop()
    # Spread, so that processes which started together do not all end their batches at once.
    ends = loop.time() + BATCH_SECONDS * random.uniform(0.75, 1.25)
    outcome = BatchOutcome()
    local: dict[int, asyncio.Semaphore] = {}  # per model
    # Taken after the model's own, so a call waiting for a busy model holds no place here.
    in_flight = asyncio.Semaphore(IN_FLIGHT_MAX)
    recorder = _Recorder(work, owner)
    stopping = asyncio.Event()
    unstarted: list[int] = []
    ids: list[int] = []
    waiting = 0  # calls of the batch not yet in the gateway
    low = asyncio.Event()  # set when `waiting` falls below REFILL_BELOW
    stopped = sync_to_async(scope_stopped)
    renew = sync_to_async(_renew)
    claim = sync_to_async(more) if more is not None else None

    async def watch() -> None:
        # Pause or cancel takes effect within a poll; the lease is renewed every third of it,
        # by the clock: a poll waits behind the batch's writes in the connection's thread and
        # can take seconds on a loaded machine, so counting polls let leases lapse (15 s
        # leases, benchmarks/run_at_scale.py: a batch's last calls were made twice).
        renew_every = leases.lease_duration().total_seconds() / 3
        renewed = loop.time()
        while True:
            await asyncio.sleep(STOP_POLL_SECONDS)
            if await stopped(work, scope):
                stopping.set()
                low.set()
                return
            if loop.time() - renewed >= renew_every:
                renewed = loop.time()
                await renew(work, list(ids), owner)

    async def one(call: Call) -> None:
        nonlocal waiting
        async with local[call.model.pk], in_flight:
            waiting -= 1
            if waiting < REFILL_BELOW:
                low.set()
            if stopping.is_set():
                unstarted.append(call.row_id)
                return
            try:
                completion = await gateway.acomplete(
                    model=call.model,
                    messages=call.messages,
                    purpose=call.purpose,
                    params=call.params,
                    schema=call.schema,
                    check=call.check,
                    caller=f"{work.caller or work.name}:{call.row_id}",
                    prompt=call.prompt,
                    policy=work.policy,
                )
            except LLMError as exc:
                result = Result(call=call, error=exc)
                outcome.failed += 1
            except Exception as exc:
                # Not the provider's doing (our Redis, a bug): this row fails with the
                # reason, to be retried from its page, and the rest of the batch goes on.
                log.exception("call for %s:%s failed outside the gateway", work.name, call.row_id)
                error = LLMError(f"{type(exc).__name__}: {exc}"[:2000], status=CallStatus.OTHER)
                result = Result(call=call, error=error)
                outcome.failed += 1
            else:
                result = Result(call=call, completion=completion)
                outcome.done += 1
        await recorder.add(result)

    def start(group: asyncio.TaskGroup, batch: list[Call]) -> None:
        nonlocal waiting
        for call in batch:
            if call.model.pk not in local:
                local[call.model.pk] = asyncio.Semaphore(call.model.max_concurrent)
            ids.append(call.row_id)
        waiting += len(batch)
        if waiting >= REFILL_BELOW:
            low.clear()
        for call in batch:
            group.create_task(one(call))

    async def refill(group: asyncio.TaskGroup) -> None:
        while True:
            await low.wait()
            if stopping.is_set() or loop.time() >= ends:
                return
            part, batch = await claim()
            outcome.claimed += part.claimed
            outcome.failed += part.failed
            if not part.claimed:
                return  # nothing left to claim (or the scope stopped taking calls)
            start(group, batch)
            if waiting < REFILL_BELOW:
                low.clear()  # all refused, or a small claim: look again when a call starts

    watcher = asyncio.create_task(watch())
    try:
        try:
            async with asyncio.TaskGroup() as group:
                start(group, calls)
                if claim is not None:
                    group.create_task(refill(group))
        except BaseExceptionGroup as failed:
            # A write failed (the calls' own errors are results): the batch ends with it, as
            # the task's error; its rows' leases run out and the sweep puts them back.
            raise failed.exceptions[0] from None
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        await gateway.aclose_loop()
    if unstarted:
        outcome.unstarted = await sync_to_async(batch_unclaim)(work, unstarted, owner=owner)
    return outcome


def scope_stopped(work: Work, scope: int) -> bool:
    """Whether the scope takes no calls now (paused, cancelled, finished, out of budget)."""
    with transaction.atomic():
        return work.scope_lock(scope) is False


def _renew(work: Work, ids: list[int], owner: str) -> None:
    leases.lease_renew(
        work.model._default_manager.filter(pk__in=ids), states=work.states, owner=owner
    )


# The collector's thresholds in a process that runs batches (Python's are 700, 10, 10).
GC_THRESHOLDS = (10_000, 20, 50)
_tuned_in: int | None = None  # the process (pid) whose collector is set for batches


def _process_tune() -> None:
    """Once per process, before its first batch: import litellm, freeze what the process
    holds by then (Django, Celery, litellm's tables: half a million objects) out of the
    cyclic garbage collector's reach, and let it collect less often. A batch allocates a
    great deal, and as Python sets it the collector ran every few calls, each full pass
    walking every object: about 1 ms of CPU per call, an eighth of a checklist call
    (benchmarks/run_at_scale.py). Reference counting still frees almost everything at once;
    the collector only finds cycles."""
    global _tuned_in
    if _tuned_in == os.getpid():
        return
    gateway.litellm_module()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    _tuned_in = os.getpid()


def batch_run(
    *, work: str, scope: int, limit: int | None = None, where: Q | None = None
) -> BatchOutcome:
    """Claim a batch of the scope's rows (those matching `where`, if given), make their
    calls and record the results. Without a `limit`, the batch claims more as its calls
    start, for up to BATCH_SECONDS."""
    _process_tune()
    job = work_for(work)
    owner = leases.lease_owner_name()
    outcome = BatchOutcome()
    calls = _claim_calls(job, scope, owner, limit or job.batch_size, outcome, where=where)
    if calls:

        def more() -> tuple[BatchOutcome, list[Call]]:
            part = BatchOutcome()
            return part, _claim_calls(
                job, scope, owner, job.batch_size, part, refill=True, where=where
            )

        # async_to_sync, not asyncio.run: the writes come back to this thread and its
        # database connection, which Celery's Django integration manages between tasks.
        ran = async_to_sync(_execute)(job, scope, calls, owner, None if limit else more)
        outcome.claimed += ran.claimed
        outcome.done, outcome.unstarted = ran.done, ran.unstarted
        outcome.failed += ran.failed
    outcome.again_in = scope_next(job, scope)
    return outcome


def scope_next(job: Work, scope: int) -> float | None:
    """After a batch: settle the scope, and say when its next batch should run (None: no
    next one)."""
    again = job.settle(scope)
    # A scope that takes no calls (paused, cancelled, out of budget) ends its chains here:
    # resuming starts new ones (scope_start), and the sweep queues one for any running scope
    # with rows to claim and nobody holding them.
    return None if again is not None and scope_stopped(job, scope) else again


def _claim_calls(
    job: Work,
    scope: int,
    owner: str,
    limit: int,
    outcome: BatchOutcome,
    *,
    refill=False,
    where: Q | None = None,
) -> list:
    """Claim up to `limit` rows and build their calls; rows that cannot be built fail."""
    job.prepare(scope)
    ids = batch_claim(job, scope, owner=owner, limit=limit, budget_final=not refill, where=where)
    outcome.claimed += len(ids)
    if not ids:
        return []
    calls, refused = job.calls(ids)
    if refused:
        job.refuse(refused, owner=owner)
        outcome.failed += len(refused)
    return calls


def expired_requeue(work: Work) -> list[int]:
    """The sweep for one kind of work: rows whose lease ran out go back to waiting (their
    worker died), rows out of attempts fail; the scopes that now have work to do, for the
    caller to queue a batch for each. A scope that takes calls and has claimable rows but
    no live holder is returned too (its batch message was lost); one with neither is
    settled (its last rows may have failed here, with no batch left to finish it)."""
    now = timezone.now()
    scopes = []
    for scope in work.active_scopes():
        rows = work.rows(scope)
        expired = rows.filter(status=work.states.running, lease_expires_at__lt=now)
        if expired.exists():
            leases.leases_expire(expired, states=work.states, gave_up=work.gave_up())
        live = rows.filter(status=work.states.running, lease_expires_at__gte=now).exists()
        if live:
            continue
        if rows.filter(claimable(work.states, now)).exists():
            scopes.append(scope)
        else:
            # Nothing to claim and nobody working: if its last rows failed here (out of
            # attempts), no batch will come to settle the scope, so settle it here; queue
            # one if that finds work due now (grading: answers with no rows yet).
            if work.settle(scope) == 0:
                scopes.append(scope)
    return scopes
