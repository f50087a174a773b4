"""Background work, queued once the caller's transaction commits.

A service that makes work for the workers (a launched run, an uploaded file to import)
starts it itself, through `start`, so that no caller can forget to and leave the work
idle until the sweep finds it. Services never import the worker package (the layering's
tasks-on-top contract, docs/architecture.md): the worker package registers the function
that queues its tasks here when Django starts (workers/apps.py), in every process that
loads Django: web, worker, command and test alike.
"""

from collections.abc import Callable

from django.db import transaction

# Each kind of background work, by the name services start it with, and the function that
# queues it (its task's `delay`); filled by the worker package at start-up.
_queues: dict[str, Callable[..., object]] = {}


def queue_register(kind: str, queue: Callable[..., object]) -> None:
    _queues[kind] = queue


def start(kind: str, *args) -> None:
    """Queue `kind` of work with `args` once the current transaction commits (at once
    outside one); an unknown kind fails here, in the caller."""
    try:
        queue = _queues[kind]
    except KeyError:
        raise LookupError(
            f"Nothing queues {kind!r} in this process: the worker package ('workers' in "
            "INSTALLED_APPS) registers every kind of background work when Django starts."
        ) from None
    transaction.on_commit(lambda: queue(*args))
