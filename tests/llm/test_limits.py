"""The shared limits against the real Redis: a slot passed from call to call in one loop,
and given back to Redis where it must be."""

import asyncio
import uuid

import pytest
import redis.asyncio as aioredis
from django.conf import settings

from apps.llm.limits import Limits


def limits(client, **fields) -> Limits:
    values = {
        "key": f"assay:test:limits:{uuid.uuid4().hex}",
        "max_concurrent": 2,
        "requests_per_minute": None,
        "tokens_per_minute": None,
        "lease_seconds": 40,
        "call_seconds": 10,
    }
    return Limits(client, **{**values, **fields})


def run(scenario):
    async def main():
        client = aioredis.Redis.from_url(settings.REDIS_URL)
        try:
            return await scenario(client)
        finally:
            await client.aclose()

    return asyncio.run(main())


async def held(client, lim: Limits) -> int:
    return await client.zcard(f"{lim.key}:conc")


def deadline(seconds: float = 5.0) -> float:
    return asyncio.get_running_loop().time() + seconds


def test_a_finished_call_hands_its_slot_to_the_next_waiting_call_without_giving_it_back():
    async def scenario(client):
        lim = limits(client)
        first = await lim.acquire(estimate_tokens=0, deadline=deadline())
        second = await lim.acquire(estimate_tokens=0, deadline=deadline())
        waiting = asyncio.create_task(lim.acquire(estimate_tokens=0, deadline=deadline()))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # both slots are taken
        await first.release()
        third = await asyncio.wait_for(waiting, 1)
        tokens = {m.decode() for m in await client.zrange(f"{lim.key}:conc", 0, -1)}
        # The slot went from the first call to the third as it was: still one of two in Redis.
        assert third.token == first.token and tokens == {first.token, second.token}
        assert await client.llen(lim.wake_key) == 0  # nobody was woken through Redis
        await second.release()
        await third.release()
        await third.release()  # a second release of the same slot does nothing
        assert await held(client, lim) == 0
        return True

    assert run(scenario)


def test_a_slot_too_old_to_pass_on_goes_back_to_redis_and_the_waiter_takes_a_new_one():
    async def scenario(client):
        lim = limits(client, max_concurrent=1, lease_seconds=40, call_seconds=29.95)
        assert lim.handover_age == pytest.approx(0.05)
        first = await lim.acquire(estimate_tokens=0, deadline=deadline())
        waiting = asyncio.create_task(lim.acquire(estimate_tokens=0, deadline=deadline()))
        await asyncio.sleep(0.1)  # older than 0.05 s: its lease may not outlast another call
        await first.release()
        second = await asyncio.wait_for(waiting, 2)
        assert second.token != first.token
        assert [m.decode() for m in await client.zrange(f"{lim.key}:conc", 0, -1)] == [second.token]
        await second.release()
        return True

    assert run(scenario)


def test_a_model_with_a_request_limit_never_passes_slots_on():
    async def scenario(client):
        lim = limits(client, max_concurrent=1, requests_per_minute=100)
        assert not lim.hands_over
        first = await lim.acquire(estimate_tokens=0, deadline=deadline())
        waiting = asyncio.create_task(lim.acquire(estimate_tokens=0, deadline=deadline()))
        await asyncio.sleep(0.05)
        await first.release()
        second = await asyncio.wait_for(waiting, 2)
        assert second.token != first.token
        # Each admission was counted against the requests per minute.
        assert await client.zcard(f"{lim.key}:rpm") == 2
        await second.release()
        return True

    assert run(scenario)


def test_many_calls_through_a_small_limit_all_run_and_never_exceed_it():
    async def scenario(client):
        lim = limits(client, max_concurrent=3)
        running = peak = 0

        async def call():
            nonlocal running, peak
            slot = await lim.acquire(estimate_tokens=0, deadline=deadline(10))
            running += 1
            peak = max(peak, running, await held(client, lim))
            await asyncio.sleep(0.01)
            running -= 1
            await slot.release()

        tasks = []
        for _ in range(40):
            tasks.append(asyncio.create_task(call()))
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        assert peak == 3
        assert await held(client, lim) == 0
        return True

    assert run(scenario)


def test_a_waiter_gives_up_at_its_deadline_and_a_slot_handed_to_it_late_is_not_lost():
    async def scenario(client):
        lim = limits(client, max_concurrent=1)
        first = await lim.acquire(estimate_tokens=0, deadline=deadline())
        with pytest.raises(TimeoutError, match="waited too long"):
            await lim.acquire(estimate_tokens=0, deadline=deadline(0.2))
        # A cancelled waiter (its batch stopped) leaves no slot behind either.
        cancelled = asyncio.create_task(lim.acquire(estimate_tokens=0, deadline=deadline()))
        await asyncio.sleep(0.05)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        await first.release()
        assert await held(client, lim) == 0
        # The slot is free for the next call at once.
        again = await asyncio.wait_for(lim.acquire(estimate_tokens=0, deadline=deadline()), 1)
        await again.release()
        assert await held(client, lim) == 0
        return True

    assert run(scenario)


def test_two_loops_share_the_limit_through_redis():
    """Two event loops (as two processes would) each pass slots on among their own calls;
    together they never hold more than the limit, and each gets slots as the other's calls
    end."""
    import threading

    key = f"assay:test:limits:{uuid.uuid4().hex}"
    peaks: list[int] = []
    done: list[int] = []

    def loop_main():
        async def scenario(client):
            lim = limits(client, key=key, max_concurrent=2)

            async def call():
                slot = await lim.acquire(estimate_tokens=0, deadline=deadline(20))
                peaks.append(await held(client, lim))
                await asyncio.sleep(0.02)
                await slot.release()

            await asyncio.gather(*(call() for _ in range(30)))
            done.append(30)
            return True

        run(scenario)

    threads = [threading.Thread(target=loop_main) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert done == [30, 30]
    assert max(peaks) <= 2
