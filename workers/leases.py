"""The lease sweep (beat, every quarter of a lease): work whose worker died goes back to
the queue.

A worker killed mid-task leaves its rows running under a lease that nothing renews, and its
message unacknowledged until the broker's visibility timeout (hours) or, for a dead pool
child, acknowledged by a redelivery that found the rows still claimed. The sweep walks every
registered kind of work on the engine: each puts back the rows whose lease ran out (failing
those out of attempts) and names the scopes left with work and nobody working them
(`Work.expired`), and each of those is started again. Starting a scope twice is harmless:
a batch claims rows with a conditional update and the second finds nothing.
"""

import logging

from celery import shared_task

from apps.llm import engine

from .delivery import CappedRedeliveryTask

log = logging.getLogger(__name__)


@shared_task(name="workers.leases.requeue_expired", base=CappedRedeliveryTask)
def requeue_expired() -> dict[str, int]:
    """Start again every scope whose work was left with nobody working it; how many of
    each kind."""
    requeued = {}
    for work in engine.works():
        scopes = work.expired()
        for scope in scopes:
            engine.scope_start(work, scope, chains=1)
        if scopes:
            log.warning(
                "started %s for %s scope(s) nobody was working: %s", work.name, len(scopes), scopes
            )
        requeued[work.name] = len(scopes)
    return requeued


requeue_expired_task = requeue_expired
