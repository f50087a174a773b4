"""Every queue that a task is routed to has a worker, in `make run`'s stack and in production
(docker/compose.yml): a queue without one holds its tasks for ever, silently."""

import shlex
from pathlib import Path

import yaml

from config import stack
from config.celery import app

ROOT = Path(__file__).resolve().parent.parent


def routed_queues() -> set[str]:
    queues = {app.conf.task_default_queue}
    for route in app.conf.task_routes.values():
        queues.add(route["queue"])
    # Every registered task, routed as Celery would route it, so a route written as a glob
    # or a router function is counted too.
    app.loader.import_default_modules()
    for name in app.tasks:
        if not name.startswith("celery."):
            queues.add(app.amqp.router.route({}, name, (), {}, None)["queue"].name)
    return queues


def queues_of(command: list[str]) -> set[str]:
    for flag in ("--queues", "-Q"):
        if flag in command:
            return set(command[command.index(flag) + 1].split(","))
    return {app.conf.task_default_queue}


def compose_worker_queues(compose: dict) -> set[str]:
    served = set()
    for service in compose["services"].values():
        command = service.get("command") or []
        command = shlex.split(command) if isinstance(command, str) else command
        if command[:1] == ["celery"] and "worker" in command:
            served |= queues_of(command)
    return served


def test_every_routed_queue_has_a_worker_in_make_run():
    served = set(stack.WORKERS.values())
    assert routed_queues() <= served, f"no worker in config/stack.py for {routed_queues() - served}"


def test_every_routed_queue_has_a_worker_in_compose():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())
    served = compose_worker_queues(compose)
    assert routed_queues() <= served, f"no worker in compose.yml for {routed_queues() - served}"


def test_a_compose_file_without_an_llm_worker_is_caught():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())
    del compose["services"]["worker-llm"]
    assert "llm" in routed_queues() - compose_worker_queues(compose)
