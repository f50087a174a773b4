import uuid

from apps.ops.models import Heartbeat
from tests.conftest import wait_until
from workers.ops import heartbeat_task


def test_task_goes_through_the_broker_to_a_worker_and_lands_in_the_database(celery_worker_queue):
    token = uuid.uuid4().hex
    heartbeat_task.apply_async(args=[token], queue=celery_worker_queue)

    beat = wait_until(lambda: Heartbeat.objects.filter(token=token).first(), timeout=60)

    assert beat is not None, "the worker never wrote the heartbeat row"
    assert beat.worker


def test_heartbeat_task_run_twice_records_one_row(db):
    heartbeat_task.run("same-token")
    heartbeat_task.run("same-token")
    assert Heartbeat.objects.filter(token="same-token").count() == 1
