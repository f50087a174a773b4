"""Adaptive concurrency against the real Redis: the shared limit starts at the floor, doubles
a round while calls succeed, then grows by one a round; a 429 cuts it to ADAPT_DECREASE of the
calls in flight, once a cooldown, never below the floor nor above the ceiling; a 429 that
says the provider's window is spent holds every new call; each change is handed back."""

import asyncio
import itertools
import math

import pytest

from apps.llm.limits import (
    ADAPT_COOLDOWN_MIN_MS,
    ADAPT_DECREASE,
    ADAPT_GROWTH_CALLS,
    Adaptive,
)
from tests.llm.test_limits import deadline, held, limits, run


def adaptive(client, changes: list, *, floor=2, ceiling=64, **fields):
    async def record(change):
        changes.append(change)

    return limits(
        client, max_concurrent=ceiling, adaptive=Adaptive(floor=floor, record=record), **fields
    )


async def limit_now(lim) -> int | None:
    """The limit every process now keeps to (None: no call has been made yet)."""
    value = await lim.client.hget(lim.adapt_key, "limit")
    return None if value is None else int(float(value))


async def take(lim, count: int) -> list:
    return [await lim.acquire(estimate_tokens=0, deadline=deadline()) for _ in range(count)]


async def saturated(lim, slots: list, rounds: int) -> list:
    """Keep every slot busy for `rounds` rounds, as a run does: each call that succeeds is
    followed at once by as many new calls as the limit lets in."""
    for _ in range(rounds):
        current, slots = slots, []
        for slot in current:
            await slot.release(outcome="ok", latency_ms=300)
            while not await full(lim, keep=slots):
                pass
    return slots


async def full(lim, keep: list | None = None) -> bool:
    try:
        slot = await lim.acquire(estimate_tokens=0, deadline=deadline(0.05))
    except TimeoutError:
        return True
    if keep is None:
        await slot.release()
    else:
        keep.append(slot)
    return False


def test_the_limit_starts_at_the_floor_and_doubles_a_round_until_the_first_429():
    async def scenario(client):
        changes = []
        lim = adaptive(client, changes, floor=2)
        slots = await take(lim, 2)
        assert await full(lim)  # the floor holds before anything is known
        assert await limit_now(lim) == 2
        slots = await saturated(lim, slots, 1)  # a full round succeeds: one more for each
        assert await limit_now(lim) == 4 == len(slots)
        slots = await saturated(lim, slots, 1)
        assert await limit_now(lim) == 8 == len(slots)
        for slot in slots:
            await slot.release()
        assert [(c.old, c.new, c.why) for c in changes] == [
            (2, 3, "start"),
            (3, 4, "start"),
            (4, 5, "start"),
            (5, 6, "start"),
            (6, 7, "start"),
            (7, 8, "start"),
        ]

    run(scenario)


def test_idle_slots_do_not_grow_the_limit():
    async def scenario(client):
        changes = []
        lim = adaptive(client, changes, floor=8)
        for _ in range(20):  # one call at a time: 7 of the 8 slots never used
            (slot,) = await take(lim, 1)
            await slot.release(outcome="ok", latency_ms=300)
        assert await limit_now(lim) == 8
        assert changes == []

    run(scenario)


def test_a_429_cuts_the_limit_to_a_share_of_the_calls_in_flight_once_a_cooldown():
    async def scenario(client):
        changes = []
        lim = adaptive(client, changes, floor=2, ceiling=80)
        await client.hset(lim.adapt_key, mapping={"limit": 60})
        slots = await take(lim, 40)  # 40 in flight under a limit of 60
        await slots[0].refused()
        await slots[0].release()
        expected = math.floor(40 * ADAPT_DECREASE)
        assert await limit_now(lim) == expected
        assert (changes[-1].old, changes[-1].new, changes[-1].why) == (60, expected, "cut")
        assert changes[-1].in_flight == 40
        # The 429s of calls sent before the cut answer for the old limit: no second cut.
        await slots[1].refused()
        await slots[1].release()
        assert await limit_now(lim) == expected
        assert len(changes) == 1
        await asyncio.sleep(ADAPT_COOLDOWN_MIN_MS / 1000 + 0.05)
        await slots[2].refused()
        await slots[2].release()  # 38 in flight, counting itself
        cut = math.floor(min(expected, 38) * ADAPT_DECREASE)  # below the limit it met
        assert await limit_now(lim) == cut
        # Past the first cut, growth is one a round: a whole round of successes adds one.
        slots = await saturated(lim, slots[3:], 1)
        assert await limit_now(lim) == cut + 1
        assert changes[-1].why == "grow"
        slots = await saturated(lim, slots, 2)
        assert cut + 2 <= await limit_now(lim) <= cut + 3  # a round has one call more
        for slot in slots:
            await slot.release()

    run(scenario)


def test_a_small_limit_grows_by_one_every_so_many_calls_not_every_round():
    async def scenario(client):
        changes = []
        lim = adaptive(client, changes, floor=2, ceiling=80)
        await client.hset(lim.adapt_key, mapping={"limit": 4, "cut_at": 1})
        slots = await take(lim, 4)
        slots = await saturated(lim, slots, ADAPT_GROWTH_CALLS // 4 - 1)  # 28 calls
        assert await limit_now(lim) == 4
        slots = await saturated(lim, slots, 1)  # 32
        assert await limit_now(lim) == 5
        for slot in slots:
            await slot.release()

    run(scenario)


def test_the_limit_stays_within_the_floor_and_the_ceiling():
    async def scenario(client):
        changes = []
        lim = adaptive(client, changes, floor=3, ceiling=5)
        slots = await saturated(lim, await take(lim, 3), 4)
        assert await limit_now(lim) == 5 == len(slots)  # the ceiling
        assert await full(lim)
        for slot in slots:
            await asyncio.sleep(ADAPT_COOLDOWN_MIN_MS / 1000 + 0.01)
            await slot.refused()
            await slot.release()
        assert await limit_now(lim) == 3  # the floor, however many 429s
        assert min(c.new for c in changes) == 3 and max(c.new for c in changes) == 5

    run(scenario)


def test_other_failures_leave_the_limit_alone():
    async def scenario(client):
        changes = []
        lim = adaptive(client, changes, floor=2)
        for slot in await take(lim, 2):
            await slot.release()  # a timeout, a 500: says nothing of the provider's limit
        assert await limit_now(lim) == 2
        assert changes == []
        assert await held(client, lim) == 0

    run(scenario)


def test_a_spent_window_holds_every_new_call_until_the_provider_resets_it():
    async def scenario(client):
        changes = []
        lim = adaptive(client, changes, floor=4)
        (slot,) = await take(lim, 1)
        await slot.refused(hold_seconds=0.5)
        assert await held(client, lim) == 1  # kept through its backoff
        await slot.release()
        assert changes[-1].why == "hold" and changes[-1].hold_seconds == 0.5
        loop = asyncio.get_running_loop()
        started = loop.time()
        (slot,) = await take(lim, 1)  # another process's call would wait just the same
        assert 0.4 <= loop.time() - started < 1.5
        await slot.release(outcome="ok", latency_ms=10)

    run(scenario)


def test_every_loop_keeps_to_the_one_shared_limit():
    async def scenario(client):
        changes = []
        lim = adaptive(client, changes, floor=1)
        other = adaptive(client, [], floor=1, key=lim.key)
        await client.hset(lim.adapt_key, mapping={"limit": 3})
        slots = await take(lim, 2) + await take(other, 1)
        assert await full(lim) and await full(other)
        await slots[0].refused()
        await slots[0].release()
        assert await limit_now(lim) == await limit_now(other) == 2
        for slot in slots[1:]:
            await slot.release(outcome="ok", latency_ms=10)

    run(scenario)


def test_a_model_finds_a_providers_hidden_limit_and_records_each_change(db, offline_provider):
    """Through the gateway, against the offline provider's hidden limit over HTTP: the limit
    grows until the provider refuses, is cut below it, and every call is answered in the end;
    each change is kept with its time, old and new limit and why."""
    from asgiref.sync import async_to_sync

    from apps.llm.gateway import RetryPolicy, aclose_loop, acomplete, loop_setup
    from apps.llm.models import CallStatus, LimitChange, LLMCall
    from tests.factories import offline_model

    url = offline_provider(latency_ms=150, limit_concurrent=6, retry_after=0)
    model = offline_model(url, max_concurrent=32, adapts_concurrency=True, min_concurrent=2)
    policy = RetryPolicy(max_attempts=20, max_total_seconds=60, base_delay=0.05, max_delay=0.2)

    async def calls():
        loop_setup()
        try:
            return await asyncio.gather(
                *(
                    acomplete(
                        model=model,
                        messages=[{"role": "user", "content": f"<question>q{i}</question>"}],
                        purpose="sample",
                        policy=policy,
                    )
                    for i in range(240)
                )
            )
        finally:
            await aclose_loop()

    answers = async_to_sync(calls)()
    assert len(answers) == 240 and all(a.text for a in answers)
    changes = list(LimitChange.objects.filter(model=model))
    assert [c.why for c in changes[:4]] == ["start"] * 4  # 2 → 6, doubling
    cuts = [c for c in changes if c.why == "cut"]
    assert cuts, "the limit was never cut, so the provider never refused"
    assert all(c.new < c.old for c in cuts) and all(c.new >= 2 for c in changes)
    assert all(a.at <= b.at for a, b in itertools.pairwise(changes))
    assert changes[-1].new <= 7  # settled about the hidden 6
    refused = LLMCall.objects.filter(model=model, status=CallStatus.RATE_LIMITED).count()
    # Probing costs a few 429s, not a storm: most come as the limit first doubles past 6.
    assert 0 < refused <= 24


@pytest.mark.parametrize(
    "headers, spent",
    [
        # A window of requests spent: every process waits for its reset.
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 360),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5s"}, 1.5),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms"}, 0.02),
        ({"x-ratelimit-remaining-requests": "0", "retry-after": "7"}, 7),  # no reset: Retry-After
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "soon"}, 0),
        # Requests left, or nothing said of a window (a limit on requests at once): no hold.
        ({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1s"}, 0),
        ({"retry-after": "2"}, 0),
    ],
)
def test_a_429_holds_every_process_only_when_it_says_the_window_is_spent(headers, spent):
    import httpx
    import litellm

    from apps.llm.gateway import _Failure

    response = httpx.Response(
        429, headers=headers, request=httpx.Request("POST", "https://api.openai.com/v1")
    )
    exc = litellm.RateLimitError(
        "Rate limit reached", llm_provider="openai", model="gpt-4.1", response=response
    )
    failure = _Failure.of(exc, None)
    assert failure.status == "rate_limited"
    assert failure.window_spent == pytest.approx(spent)
