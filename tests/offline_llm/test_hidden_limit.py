"""The offline provider's hidden limit: above it a request gets a 429 with Retry-After (and,
past a limit per minute, OpenAI's x-ratelimit headers), as a real provider answers a key past
its limit; the limit can change mid-run."""

import asyncio
import time

import httpx

PROMPT = {"model": "offline-terse", "messages": [{"role": "user", "content": "hi"}]}


def at_once(url: str, count: int) -> list[httpx.Response]:
    async def gather() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=10) as client:
            return await asyncio.gather(
                *(client.post(f"{url}/chat/completions", json=PROMPT) for _ in range(count))
            )

    return asyncio.run(gather())


def test_requests_above_the_concurrent_limit_get_a_429_until_it_changes(offline_provider):
    url = offline_provider(latency_ms=300, limit_concurrent=4, retry_after=2)
    statuses = sorted(r.status_code for r in at_once(url, 10))
    assert statuses == [200] * 4 + [429] * 6
    refused = next(r for r in at_once(url, 6) if r.status_code == 429)
    assert refused.headers["Retry-After"] == "2"
    # No window of requests is spent: a slot freed ends the refusal.
    assert "x-ratelimit-remaining-requests" not in refused.headers
    assert "hidden limit" in refused.json()["error"]["message"]
    assert httpx.get(f"{url}/stats").json()["faults"]["limit"] == 8

    changed = httpx.post(f"{url}/offline/limit", json={"concurrent": 8})
    assert changed.json() == {"concurrent": 8, "per_minute": 0}
    assert sorted(r.status_code for r in at_once(url, 10)) == [200] * 8 + [429] * 2
    httpx.post(f"{url}/offline/limit", json={"concurrent": 0})
    assert {r.status_code for r in at_once(url, 10)} == {200}
    refused = httpx.post(f"{url}/offline/limit", json={"concurrent": -1})
    assert refused.status_code == 400
    assert httpx.get(f"{url}/offline/limit").json() == {"concurrent": 0, "per_minute": 0}


def test_requests_above_the_per_minute_limit_wait_for_the_window(offline_provider):
    url = offline_provider(limit_per_minute=5)
    started = time.monotonic()
    answered = [httpx.post(f"{url}/chat/completions", json=PROMPT) for _ in range(7)]
    assert [r.status_code for r in answered] == [200] * 5 + [429] * 2
    wait = int(answered[-1].headers["Retry-After"])
    # The first accepted request leaves the window a minute after it came.
    assert 60 - (time.monotonic() - started) - 1 <= wait <= 60
    assert answered[-1].headers["x-ratelimit-limit-requests"] == "5"
    assert answered[-1].headers["x-ratelimit-remaining-requests"] == "0"
    assert answered[-1].headers["x-ratelimit-reset-requests"] == f"{wait}s"
