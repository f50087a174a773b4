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
"""

import asyncio
import random
import uuid

import redis.asyncio as aioredis

RPM_WINDOW_MS = 60_000 + 2_000  # a minute, plus the margin explained above

ACQUIRE = """
local conc_key, rpm_key, tpm_prefix = KEYS[1], KEYS[2], KEYS[3]
local token = ARGV[1]
local max_conc, lease_ms = tonumber(ARGV[2]), tonumber(ARGV[3])
local rpm, tpm, estimate = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local rpm_window = tonumber(ARGV[7])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

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

SETTLE = """
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
return 1
"""


class Limits:
    """A model's shared limits. None or 0 means no limit of that kind."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        key: str,
        max_concurrent: int | None,
        requests_per_minute: int | None,
        tokens_per_minute: int | None,
        lease_seconds: float,
    ):
        self.client = client
        self.key = key
        self.max_concurrent = max_concurrent or 0
        self.rpm = requests_per_minute or 0
        self.tpm = tokens_per_minute or 0
        self.lease_ms = int(lease_seconds * 1000)
        self._acquire = client.register_script(ACQUIRE)
        self._settle = client.register_script(SETTLE)

    @property
    def wake_key(self) -> str:
        return f"{self.key}:wake"

    @property
    def keys(self) -> list[str]:
        return [f"{self.key}:conc", f"{self.key}:rpm", f"{self.key}:tpm:"]

    async def acquire(self, *, estimate_tokens: int, deadline: float) -> "Slot":
        token = uuid.uuid4().hex
        loop = asyncio.get_running_loop()
        while True:
            admitted, detail = await self._acquire(
                keys=self.keys,
                args=[token, self.max_concurrent, self.lease_ms, self.rpm, self.tpm,
                      estimate_tokens if self.tpm else 0, RPM_WINDOW_MS],
            )  # fmt: skip
            if admitted:
                return Slot(self, token, minute=int(detail), reserved=estimate_tokens)
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError("waited too long for the model's shared rate limits")
            if int(detail) < 0:
                # Concurrency is full: sleep until a release wakes us. The timeout bounds
                # the wait when a slot frees by lease expiry (a dead worker) instead.
                await self.client.blpop([self.wake_key], timeout=min(1.0, remaining))
                continue
            wait = max(int(detail), 5) / 1000
            if wait > remaining:
                raise TimeoutError("waited too long for the model's shared rate limits")
            # Jitter spreads waiters so they do not all retry in the same millisecond.
            await asyncio.sleep(wait * random.uniform(0.8, 1.2))


class Slot:
    def __init__(self, limits: Limits, token: str, *, minute: int, reserved: int):
        self.limits = limits
        self.token = token
        self.minute = minute
        self.reserved = reserved

    async def release(self, *, actual_tokens: int | None = None) -> None:
        delta = 0
        if self.limits.tpm and actual_tokens is not None:
            delta = actual_tokens - self.reserved
        limits = self.limits
        await limits._settle(
            keys=[f"{limits.key}:conc", f"{limits.key}:tpm:{self.minute}", limits.wake_key],
            args=[self.token, delta, max(limits.max_concurrent, 1)],
        )
