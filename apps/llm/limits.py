"""Limits that hold across every worker process and machine, kept in Redis.

One Lua script admits an attempt only if all of the model's limits allow it, atomically:
- concurrency: a sorted set of leases scored by expiry, so a worker that dies mid-call
  frees its slot when the lease runs out instead of holding it forever;
- requests per minute: a sliding log of admissions over a minute plus a margin. Admission
  is exact at Redis, but a request reaches the provider some milliseconds later and that
  delay varies (a cold connection at the start of a run takes longer than a warm one), so a
  provider counting arrivals could see a few more than the limit in some 60 s window; the
  margin keeps its count within the limit too;
- tokens per minute: a sliding-window counter over two fixed minutes (the usual
  approximation; token counts are only known after the call, so the estimate reserved at
  admission is corrected afterwards).
Redis's clock is used throughout, so machines with skewed clocks agree.

A waiter for a concurrency slot blocks on a wake-up list (BLPOP) that every release pushes
to, instead of polling: a freed slot is taken within a round trip, not a polling interval,
which is what keeps a small limit saturated (a 50 ms poll costs a sixth of a 300 ms call).
Within one event loop, a finished call passes its slot straight to the next waiting call
(`Limits`), which saves the release, the wake-up and the admission in between.

A model may instead find its concurrency by itself (`Adaptive`): its limit, kept in Redis
beside the leases and so shared by every process, starts at a floor, doubles each round of
calls while they succeed, then grows by one a round (additive increase; a round is at least
ADAPT_GROWTH_CALLS calls, and growth slows to ADAPT_PROBE near where the provider last
refused) and is cut to ADAPT_DECREASE of the calls then in flight on a 429 (multiplicative
decrease), at most once a cooldown, within the floor and the model's ceiling
(`max_concurrent`). A 429 that says the provider's window is spent
(`x-ratelimit-remaining-requests: 0`) holds every process's new calls until the provider's
reset. Each change of the whole limit is handed back to the caller to record.
"""

import asyncio
import collections
import random
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import redis.asyncio as aioredis

RPM_WINDOW_MS = 60_000 + 2_000  # a minute, plus the margin explained above
WAITED_TOO_LONG = "waited too long for the model's shared rate limits"
HANDOVER_MARGIN_SECONDS = 10.0  # what a passed-on slot's lease keeps beyond a call's timeout
# Adaptive concurrency (see above): on a 429 the limit becomes this share of the calls in
# flight, no sooner than a cooldown after the last cut. The cooldown is a call's mean
# latency (at least ADAPT_COOLDOWN_MIN_MS): the 429s of calls sent before a cut answer for
# the old limit, not the new one.
ADAPT_DECREASE = 0.9
ADAPT_COOLDOWN_MIN_MS = 200
ADAPT_LATENCY_WEIGHT = 0.1  # of each successful call in the mean latency (an EWMA)
# Past the first 429, the limit grows by one a round of calls, or a round of this many
# calls where the limit is smaller: each probe above a provider's limit costs a 429, so a
# small limit probed every round would meet one in every few calls.
ADAPT_GROWTH_CALLS = 32
# Within two of the limit at which the provider last refused, growth goes at this share of
# its pace: the limit stays longer just below that point, and probes it less often.
ADAPT_PROBE = 0.25

ACQUIRE = """
local conc_key, rpm_key, tpm_prefix, adapt_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token = ARGV[1]
local max_conc, lease_ms = tonumber(ARGV[2]), tonumber(ARGV[3])
local rpm, tpm, estimate = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local rpm_window, floor_conc = tonumber(ARGV[7]), tonumber(ARGV[8])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

if floor_conc > 0 then
  -- Adaptive: the shared limit, within the floor and the ceiling (max_conc).
  local state = redis.call('HMGET', adapt_key, 'limit', 'hold')
  local hold = tonumber(state[2] or '0')
  if hold > now then
    return {0, hold - now}
  end
  local limit = tonumber(state[1] or '0')
  if limit == 0 then
    limit = floor_conc
    redis.call('HSET', adapt_key, 'limit', limit)
  end
  max_conc = math.max(floor_conc, math.min(max_conc, math.floor(limit)))
end
if max_conc > 0 then
  redis.call('ZREMRANGEBYSCORE', conc_key, '-inf', now)
  if redis.call('ZCARD', conc_key) >= max_conc then
    return {0, -1}
  end
end
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', rpm_key, '-inf', now - rpm_window)
  if redis.call('ZCARD', rpm_key) >= rpm then
    local oldest = redis.call('ZRANGE', rpm_key, 0, 0, 'WITHSCORES')
    return {0, tonumber(oldest[2]) + rpm_window - now + 1}
  end
end
local minute = math.floor(now / 60000)
if tpm > 0 then
  local current = tonumber(redis.call('GET', tpm_prefix .. minute) or '0')
  local previous = tonumber(redis.call('GET', tpm_prefix .. (minute - 1)) or '0')
  local elapsed = (now % 60000) / 60000
  local used = previous * (1 - elapsed) + current
  -- A request larger than the whole budget is still let through when nothing else runs.
  if used > 0 and used + estimate > tpm then
    return {0, math.max(100, math.floor((1 - elapsed) * 60000 / 4))}
  end
  redis.call('INCRBY', tpm_prefix .. minute, estimate)
  redis.call('PEXPIRE', tpm_prefix .. minute, 180000)
end
if max_conc > 0 then
  redis.call('ZADD', conc_key, now + lease_ms, token)
  redis.call('PEXPIRE', conc_key, lease_ms + 60000)
end
if rpm > 0 then
  redis.call('ZADD', rpm_key, now, token)
  redis.call('PEXPIRE', rpm_key, rpm_window + 60000)
end
return {1, minute}
"""

SETTLE_BODY = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  -- Wake one waiter; keep the list short so stale wake-ups cost at most a retry each.
  redis.call('LPUSH', KEYS[3], 1)
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[3]) - 1)
  redis.call('PEXPIRE', KEYS[3], 60000)
end
local delta = tonumber(ARGV[2])
if delta ~= 0 then
  redis.call('INCRBY', KEYS[2], delta)
  redis.call('PEXPIRE', KEYS[2], 180000)
end
"""

SETTLE = SETTLE_BODY + "return 1"

# A finished call of an adaptive model: how it changes the shared limit (before its slot is
# freed, so that the calls in flight count it), then the settling above. Returns
# {old, new, why, in flight, now} when the whole limit changed or new calls are held, else {}.
ADAPT_SETTLE = (
    """
local adapt_key = KEYS[4]
local outcome, floor_conc, ceiling = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local latency, hold_ms = tonumber(ARGV[7]), tonumber(ARGV[8])
local decrease, cooldown_min, weight = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local growth_calls, probe = tonumber(ARGV[12]), tonumber(ARGV[14])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', adapt_key, 'limit', 'cut_at', 'latency', 'met')
local limit = tonumber(state[1] or '0')
if limit == 0 then limit = floor_conc end
local old = math.floor(limit)
local in_flight = redis.call('ZCARD', KEYS[1])
local why = ''
if outcome == 'ok' then
  local mean = tonumber(state[3] or '0')
  if mean == 0 then mean = latency else mean = mean + weight * (latency - mean) end
  redis.call('HSET', adapt_key, 'latency', mean)
  -- Grow only a limit that is being used: idle slots prove nothing.
  if in_flight * 2 >= old and limit < ceiling then
    if state[2] == false then
      limit = limit + 1  -- never cut yet: one more a success, double a round
      why = 'start'
    else
      -- One more a round; a quarter of that within two of where the provider last refused.
      local step = 1 / math.max(limit, growth_calls)
      local met = tonumber(state[4] or '0')
      if math.abs(limit - met) < 2 then step = step * probe end
      limit = limit + step
      why = 'grow'
    end
    limit = math.min(limit, ceiling)
    redis.call('HSET', adapt_key, 'limit', limit)
  end
elseif outcome == 'limited' then
  local cooldown = math.max(cooldown_min, tonumber(state[3] or '0'))
  if state[2] == false or now - tonumber(state[2]) >= cooldown then
    local met = math.min(limit, in_flight)
    limit = math.max(floor_conc, math.floor(met * decrease))
    redis.call('HSET', adapt_key, 'limit', limit, 'cut_at', now, 'met', met)
    why = 'cut'
  end
  if hold_ms > 0 then
    redis.call('HSET', adapt_key, 'hold', now + hold_ms)
    why = 'hold'
  end
end
redis.call('PEXPIRE', adapt_key, 86400000)
if ARGV[13] ~= 'keep' then
"""
    + SETTLE_BODY
    + """
end
local new = math.floor(limit)
if new ~= old or why == 'hold' then
  return {old, new, why, in_flight, now}
end
return {}
"""
)


@dataclass(frozen=True)
class Adaptive:
    """A model whose concurrency is found rather than fixed: from `floor` up to the
    model's `max_concurrent`, by the rule in this module's docstring. `record(change)` is
    given each change of the limit."""

    floor: int
    record: "Callable[[LimitChange], Awaitable[None]] | None" = None
    # Names the model's state among its keys: a database made again numbers its models from
    # 1 again, and must not take up an earlier model's limit.
    identity: str = ""


@dataclass(frozen=True)
class LimitChange:
    """A model's shared limit changed from `old` to `new` at `at_ms` (Redis's clock, in ms)
    with `in_flight` calls under way: `why` is "start" (doubling until the first 429),
    "grow", "cut" (a 429) or "hold" (a 429 that said the provider's window is spent: new calls
    wait `hold_seconds`)."""

    old: int
    new: int
    why: str
    in_flight: int
    at_ms: int
    hold_seconds: float = 0.0


class _Local:
    """What one event loop's calls know of a model's concurrency slots: the calls waiting
    for one, in order, and whether one of them is waiting on Redis for all of them."""

    def __init__(self):
        # (future, estimated tokens, deadline by the loop's clock), first come first served
        self.waiters: collections.deque[tuple[asyncio.Future, int, float]] = collections.deque()
        self.pump: asyncio.Task | None = None


_locals: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Local]]" = (
    weakref.WeakKeyDictionary()
)


def _local(key: str) -> _Local:
    per_loop = _locals.setdefault(asyncio.get_running_loop(), {})
    local = per_loop.get(key)
    if local is None:
        local = per_loop[key] = _Local()
    return local


class Limits:
    """A model's shared limits. None or 0 means no limit of that kind.

    A call that finds the concurrency full waits in its loop's queue for the model; one
    task per loop waits on Redis for the queue. A call that ends while others of its loop
    wait hands its slot straight to the first of them, without a round trip: the slot
    stays taken in Redis, so the limit holds across processes as before. That is done only
    where concurrency is the model's one limit (a request per minute must be counted at
    admission) and while the slot's lease outlasts one more call's timeout by
    HANDOVER_MARGIN_SECONDS; otherwise the slot goes back to Redis and the next call takes
    it there. A loop with calls waiting keeps the slots it has, so another process gets one
    as this one's batch ends, or when a slot's lease is too old to pass on."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        key: str,
        max_concurrent: int | None,
        requests_per_minute: int | None,
        tokens_per_minute: int | None,
        lease_seconds: float,
        call_seconds: float | None = None,
        adaptive: Adaptive | None = None,
    ):
        self.client = client
        self.adaptive = adaptive if max_concurrent else None
        self.key = key
        self.max_concurrent = max_concurrent or 0
        self.rpm = requests_per_minute or 0
        self.tpm = tokens_per_minute or 0
        self.lease_ms = int(lease_seconds * 1000)
        # A slot can be passed on while its lease outlasts one more call by the margin.
        call_seconds = lease_seconds if call_seconds is None else call_seconds
        self.handover_age = lease_seconds - call_seconds - HANDOVER_MARGIN_SECONDS
        self._acquire = client.register_script(ACQUIRE)
        self._settle = client.register_script(ADAPT_SETTLE if self.adaptive else SETTLE)

    @property
    def wake_key(self) -> str:
        return f"{self.key}:wake"

    @property
    def keys(self) -> list[str]:
        return [f"{self.key}:conc", f"{self.key}:rpm", f"{self.key}:tpm:", self.adapt_key]

    @property
    def adapt_key(self) -> str:
        identity = self.adaptive.identity if self.adaptive else ""
        return f"{self.key}:adapt:{identity}" if identity else f"{self.key}:adapt"

    @property
    def hands_over(self) -> bool:
        # An adaptive limit is read at each admission: a slot passed on could outlive a cut.
        return self.max_concurrent > 0 and not self.rpm and not self.tpm and not self.adaptive

    async def _try(self, token: str, estimate_tokens: int) -> tuple[int, int]:
        admitted, detail = await self._acquire(
            keys=self.keys,
            args=[
                token,
                self.max_concurrent,
                self.lease_ms,
                self.rpm,
                self.tpm,
                estimate_tokens if self.tpm else 0,
                RPM_WINDOW_MS,
                self.adaptive.floor if self.adaptive else 0,
            ],
        )
        return int(admitted), int(detail)

    async def acquire(self, *, estimate_tokens: int, deadline: float) -> "Slot":
        loop = asyncio.get_running_loop()
        local = _local(self.key)
        if not local.waiters:
            token = uuid.uuid4().hex
            admitted, detail = await self._try(token, estimate_tokens)
            if admitted:
                return Slot(self, token, minute=detail, reserved=estimate_tokens)
        if loop.time() >= deadline:
            raise TimeoutError(WAITED_TOO_LONG)
        waiter = loop.create_future()
        local.waiters.append((waiter, estimate_tokens, deadline))
        if local.pump is None:
            local.pump = loop.create_task(self._pump(local))
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(waiter)
        except TimeoutError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                return waiter.result()  # it came as the wait ran out: use it
            waiter.cancel()
            raise TimeoutError(WAITED_TOO_LONG) from None
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                await waiter.result().release()  # given to a call that is going away
            else:
                waiter.cancel()
            raise

    async def _pump(self, local: _Local) -> None:
        """Take slots from Redis for the loop's waiting calls, first come first served."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                while local.waiters and local.waiters[0][0].done():
                    local.waiters.popleft()  # gave up waiting
                if not local.waiters:
                    return
                entry = local.waiters[0]
                waiter, estimate, deadline = entry
                remaining = deadline - loop.time()
                if remaining <= 0:
                    local.waiters.remove(entry)
                    waiter.set_exception(TimeoutError(WAITED_TOO_LONG))
                    continue
                token = uuid.uuid4().hex
                admitted, detail = await self._try(token, estimate)
                if admitted:
                    slot = Slot(self, token, minute=detail, reserved=estimate)
                    if waiter.done():  # a finished call handed it one meanwhile
                        await slot.release()
                    else:
                        local.waiters.remove(entry)
                        waiter.set_result(slot)
                    continue
                if detail < 0:
                    # Concurrency is full: sleep until a release wakes us. The timeout bounds
                    # the wait when a slot frees by lease expiry (a dead worker) instead.
                    await self.client.blpop([self.wake_key], timeout=min(1.0, remaining))
                    continue
                wait = max(detail, 5) / 1000
                # Jitter spreads processes so they do not all retry in the same millisecond.
                await asyncio.sleep(min(wait, remaining) * random.uniform(0.8, 1.2))
        except Exception as exc:
            # Redis failed us: every waiting call fails with the reason, none waits it out.
            while local.waiters:
                waiter = local.waiters.popleft()[0]
                if not waiter.done():
                    waiter.set_exception(exc)
        finally:
            local.pump = None

    def _hand_over(self, slot: "Slot") -> bool:
        """Give `slot` to the loop's first waiting call, if it may be passed on."""
        if not self.hands_over:
            return False
        loop = asyncio.get_running_loop()
        if loop.time() - slot.taken_at > self.handover_age:
            return False
        local = _local(self.key)
        while local.waiters:
            waiter, _estimate, _deadline = local.waiters.popleft()
            if not waiter.done():
                waiter.set_result(
                    Slot(self, slot.token, minute=slot.minute, reserved=0, taken_at=slot.taken_at)
                )
                return True
        return False


class Slot:
    def __init__(
        self,
        limits: Limits,
        token: str,
        *,
        minute: int,
        reserved: int,
        taken_at: float | None = None,
    ):
        self.limits = limits
        self.token = token
        self.minute = minute
        self.reserved = reserved
        # When Redis admitted the token, by this loop's clock: its lease runs from then.
        self.taken_at = asyncio.get_running_loop().time() if taken_at is None else taken_at
        self.released = False

    async def release(
        self,
        *,
        actual_tokens: int | None = None,
        outcome: str = "",
        latency_ms: int = 0,
    ) -> None:
        """Free the slot. For an adaptive model, `outcome` is what the call met: "ok" (an
        answer, in `latency_ms`) grows the limit; "" (anything else, or a 429 already told
        through `refused`) changes nothing."""
        if self.released:
            return
        self.released = True
        limits = self.limits
        if limits._hand_over(self):
            return
        delta = 0
        if limits.tpm and actual_tokens is not None:
            delta = actual_tokens - self.reserved
        if limits.adaptive is None:
            await limits._settle(keys=self._settle_keys(), args=[*self._settle_args(delta)])
            return
        await self._adapt(delta=delta, outcome=outcome, latency_ms=latency_ms)

    async def refused(self, *, hold_seconds: float = 0.0) -> None:
        """The provider answered this call 429: cut an adaptive limit now, but keep the slot
        until `release`. A caller that keeps it through its backoff parks each slot above the
        provider's limit for that long, so that it meets one 429 a backoff rather than one
        every few milliseconds (a 429 comes back at once, and the slot's next call would meet
        the same limit). `hold_seconds`: the provider said its window is spent; every
        process's new calls wait that long."""
        if self.limits.adaptive is not None and not self.released:
            await self._adapt(outcome="limited", hold_seconds=hold_seconds, keep=True)

    def _settle_keys(self) -> list[str]:
        limits = self.limits
        return [f"{limits.key}:conc", f"{limits.key}:tpm:{self.minute}", limits.wake_key]

    def _settle_args(self, delta: int) -> tuple:
        return (self.token, delta, max(self.limits.max_concurrent, 1))

    async def _adapt(
        self,
        *,
        delta: int = 0,
        outcome: str,
        latency_ms: int = 0,
        hold_seconds: float = 0.0,
        keep: bool = False,
    ) -> None:
        limits = self.limits
        adaptive = limits.adaptive
        change = await limits._settle(
            keys=[*self._settle_keys(), limits.adapt_key],
            args=[
                *self._settle_args(delta),
                outcome,
                adaptive.floor,
                limits.max_concurrent,
                latency_ms,
                round(hold_seconds * 1000),
                ADAPT_DECREASE,
                ADAPT_COOLDOWN_MIN_MS,
                ADAPT_LATENCY_WEIGHT,
                ADAPT_GROWTH_CALLS,
                "keep" if keep else "",
                ADAPT_PROBE,
            ],
        )
        if change and adaptive.record is not None:
            old, new, why, in_flight, at_ms = change
            why = why.decode() if isinstance(why, bytes) else str(why)
            await adaptive.record(
                LimitChange(
                    old=int(old),
                    new=int(new),
                    why=why,
                    in_flight=int(in_flight),
                    at_ms=int(at_ms),
                    hold_seconds=hold_seconds if why == "hold" else 0.0,
                )
            )
