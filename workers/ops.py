import socket
import uuid

from celery import shared_task

from apps.ops.services import heartbeat_record


@shared_task(name="workers.ops.heartbeat")
def heartbeat(token: str | None = None) -> None:
    heartbeat_record(token=token or uuid.uuid4().hex, worker=socket.gethostname())


heartbeat_task = heartbeat
