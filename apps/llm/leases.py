"""Claim leases: how a row that stands for work outlives the worker holding it.

A worker claims a row (waiting -> running) with a conditional update that stamps it with
the worker's name and an expiry, renews the expiry every third of a lease while it
works (`lease_renew`), and records the outcome only while it still holds the row
(`lease_end`). When the worker dies, with SIGKILL, the OOM killer or a lost machine,
nothing renews the lease. Once it has run out, a task that finds the row takes it over
(apps/llm/engine.py claims an expired running row as it claims a waiting one), and the periodic
sweep (`leases_expire`, run by workers/leases.py) puts the row back to waiting and
returns it to be requeued, because the dead worker's message may be unacknowledged until
the broker's visibility timeout (hours). So a death costs about one lease.

The same sweep requeues a row that waited longer than a lease for a worker (its message
was lost, say, by a broker restart). A waiting row's `lease_expires_at` is that deadline.

Every claim is an attempt, whatever ended the previous one (a crash, a retryable model
error, a hard time limit): a row gets MAX_ATTEMPTS claims and is then failed with a
message the user sees. That is the one retry budget of every leased job.

Nothing here knows a domain: callers pass a queryset of their model (which has the fields
of `models.Leased` and a `status`) and the names of its states.
"""

import datetime as dt
import os
import socket
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

MAX_ATTEMPTS = 3
SWEEP_BATCH = 1000


@dataclass(frozen=True)
class LeaseStates:
    """The values of a leased model's `status` that the lease moves it between."""

    waiting: str
    running: str
    failed: str


def lease_duration() -> dt.timedelta:
    return dt.timedelta(seconds=settings.LLM_LEASE_SECONDS)


def lease_owner_name() -> str:
    """This process, as a lease holder: a pool child's pid is its own, not its parent's."""
    return f"{socket.gethostname()}:{os.getpid()}"


def lease_waiting_fields(*, delay_seconds: float = 0) -> dict:
    """The lease fields of a row that waits for a worker: no holder, and by when one should
    have taken it (after `delay_seconds`, when the row waits for a retry)."""
    deadline = timezone.now() + dt.timedelta(seconds=delay_seconds) + lease_duration()
    return {"lease_owner": "", "lease_expires_at": deadline}


def lease_held(rows: QuerySet, *, states: LeaseStates, owner: str) -> QuerySet:
    """`rows` as long as `owner` still holds them: write a result through this, so that a
    holder that was presumed dead and replaced cannot overwrite its successor's work."""
    return rows.filter(status=states.running, lease_owner=owner)


def lease_renew(rows: QuerySet, *, states: LeaseStates, owner: str) -> bool:
    held = lease_held(rows, states=states, owner=owner)
    return bool(held.update(lease_expires_at=timezone.now() + lease_duration()))


def lease_end(rows: QuerySet, *, states: LeaseStates, owner: str, **changes) -> int:
    """Record the outcome (`changes`, the final status among them) and drop the lease, if
    `owner` still holds the rows; how many it did."""
    held = lease_held(rows, states=states, owner=owner)
    return held.update(lease_owner="", lease_expires_at=None, **changes)


def leases_expire(rows: QuerySet, *, states: LeaseStates, gave_up: dict) -> list[int]:
    """The sweep, for one kind of row. A row of `rows` whose lease ran out (running: its
    worker died; waiting: no worker took it in time) goes back to waiting with a new
    deadline, and its pk is returned for the caller to requeue its task. A row that has
    had MAX_ATTEMPTS claims is failed instead, with the `gave_up` changes (its error)."""
    now = timezone.now()
    with transaction.atomic():
        expired = list(
            rows.filter(status__in=[states.waiting, states.running], lease_expires_at__lt=now)
            .order_by("lease_expires_at")
            .select_for_update(skip_locked=True, of=("self",))
            .values_list("pk", "attempts")[:SWEEP_BATCH]
        )
        spent = [pk for pk, attempts in expired if attempts >= MAX_ATTEMPTS]
        again = [pk for pk, attempts in expired if attempts < MAX_ATTEMPTS]
        if spent:
            rows.filter(pk__in=spent).update(
                status=states.failed, lease_owner="", lease_expires_at=None, **gave_up
            )
        if again:
            rows.filter(pk__in=again).update(status=states.waiting, **lease_waiting_fields())
    return again
