import os
import signal
import time

import httpx
import redis
from django.conf import settings

from apps.llm.models import CallStatus, LLMCall
from tests.conftest import wait_until
from tests.factories import api_base, offline_model
from workers.delivery import MAX_DELIVERIES, deliveries_key
from workers.llm import complete_batch_task


def requests_for(model, tag: str, count: int) -> list[dict]:
    return [
        {
            "model_id": model.pk,
            "purpose": "sample",
            "caller": f"{tag}:{i}",
            "messages": [
                {"role": "user", "content": f"<question>Phishing text number {i}?</question>"}
            ],
        }
        for i in range(count)
    ]


def ok_callers(tag: str) -> list[str]:
    return list(
        LLMCall.objects.filter(caller__startswith=f"{tag}:", status=CallStatus.OK).values_list(
            "caller", flat=True
        )
    )


def test_concurrency_limit_holds_across_two_worker_processes(start_worker, offline_provider):
    url = offline_provider(latency_ms=300)
    model = offline_model(url, max_concurrent=3)
    queue, _ = start_worker()
    start_worker(queue=queue)
    httpx.post(api_base(url) + "/stats/reset")

    for half in range(2):
        complete_batch_task.apply_async(args=[requests_for(model, f"two{half}", 12)], queue=queue)

    assert wait_until(lambda: len(ok_callers("two0")) + len(ok_callers("two1")) == 24, timeout=90)
    seen = httpx.get(api_base(url) + "/stats").json()["max_in_flight"]
    assert seen <= 3, f"the provider saw {seen} requests at once with a limit of 3"
    assert seen == 3, "both workers together should have used the whole limit"


def test_a_batch_run_twice_makes_no_call_twice(db, offline_provider):
    model = offline_model(offline_provider())
    batch = requests_for(model, "twice", 5)

    first = complete_batch_task.run(batch)
    second = complete_batch_task.run(batch)

    assert first == {"ok": 5, "failed": 0, "skipped": 0}
    assert second == {"ok": 0, "failed": 0, "skipped": 5}
    assert LLMCall.objects.count() == 5


def test_a_worker_killed_mid_batch_loses_nothing_and_repeats_nothing(
    start_worker, offline_provider
):
    url = offline_provider(latency_ms=500)
    model = offline_model(url, max_concurrent=2)
    # A short visibility timeout so that the broker hands the unacknowledged batch on soon.
    visibility = 10
    short = {
        "CELERY_VISIBILITY_TIMEOUT": str(visibility),
        "CELERY_TASK_TIME_LIMIT": "5",
        "CELERY_TASK_SOFT_TIME_LIMIT": "4",
        "LLM_LEASE_SECONDS": "3",  # a lease is shorter than the hard time limit
    }
    queue, victim = start_worker(env=short)
    sent = time.monotonic()
    complete_batch_task.apply_async(args=[requests_for(model, "kill", 10)], queue=queue)

    assert wait_until(lambda: len(ok_callers("kill")) >= 2, timeout=60, interval=0.02)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert len(ok_callers("kill")) < 10, "the batch finished before the worker could be killed"

    # A worker starting after the visibility timeout restores the dead worker's message: it
    # looks once as it starts, then only every 100 s (kombu's restore interval x throttle),
    # so it must start once the message is old enough, counted from when the dead worker
    # took it (its score in kombu's unacked index), not from when it was sent.
    broker = redis.Redis.from_url(settings.REDIS_URL)

    def restorable() -> bool:
        newest = broker.zrange("unacked_index", -1, -1, withscores=True)
        return not newest or newest[0][1] < time.time() - visibility - 1

    time.sleep(max(0.0, sent + visibility + 1 - time.monotonic()))
    assert wait_until(restorable, timeout=60)
    start_worker(queue=queue, env=short)
    assert wait_until(lambda: len(ok_callers("kill")) == 10, timeout=60)
    callers = ok_callers("kill")
    assert sorted(callers) == sorted(set(callers)), "a call that had succeeded was made again"


def test_redeliveries_are_capped(start_worker, offline_provider):
    model = offline_model(offline_provider())
    queue, _ = start_worker()
    task_id = "poison-" + os.urandom(4).hex()
    # As if the batch had already been delivered to three workers that all died.
    redis.Redis.from_url(settings.REDIS_URL).set(deliveries_key(task_id), MAX_DELIVERIES)
    complete_batch_task.apply_async(
        args=[requests_for(model, "poison", 2)], queue=queue, task_id=task_id
    )
    complete_batch_task.apply_async(args=[requests_for(model, "after", 1)], queue=queue)

    assert wait_until(lambda: len(ok_callers("after")) == 1, timeout=60)
    assert ok_callers("poison") == []
