"""Reservations: handing a participant a bundle of scenarios, completing the bundle when they
finish, and expiring reservations that ran out.

Counting rule (docs/surveys.md, "Assignment"): a scenario is full when its completed
assignments plus its reserved assignments whose `reserved_until` is still ahead reach the
study's k. Anything that can *add* to that count (reserving, completing an expired
reservation) first locks the scenario's `StudyScenario` row and then counts in a new
statement, so the count it acts on includes every committed change by others. Whatever only
*lowers* the count (expiry, return, rejection) needs no lock.
"""

import datetime as dt
import random
import time

from django.db import connection, transaction
from django.db.models import Count, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..models import (
    Assignment,
    AssignmentStatus,
    Page,
    PageTime,
    Participant,
    StudyScenario,
    UnitKind,
)

RESERVE_ATTEMPTS = 40


def _counted(now) -> Q:
    return Q(status=AssignmentStatus.COMPLETED) | Q(
        status=AssignmentStatus.RESERVED, reserved_until__gt=now
    )


def _filled_subquery(now):
    counted = (
        Assignment.objects.filter(_counted(now), study_scenario=OuterRef("pk"))
        .order_by()
        .values("study_scenario")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted), Value(0))


def _fill(ids, now) -> dict[int, int]:
    rows = (
        Assignment.objects.filter(_counted(now), study_scenario_id__in=ids)
        .values("study_scenario_id")
        .annotate(n=Count("pk"))
    )
    counts = dict.fromkeys(ids, 0)
    counts.update({r["study_scenario_id"]: r["n"] for r in rows})
    return counts


def _ready(study):
    """The study's units that can be handed out: every answer and pair (their texts are part
    of them), and the scenarios that have their response."""
    return StudyScenario.objects.filter(study=study).exclude(
        kind=UnitKind.SCENARIO, response__isnull=True
    )


def _lock_least_filled(candidates, examined: set[int], now, k: int, count: int) -> list[int]:
    """Lock up to `count` of `candidates` not yet `examined` that have room, least-filled
    first, random among equals so that concurrent arrivals spread out. SKIP LOCKED: rows
    another arrival is handing out are passed over, not waited for."""
    return list(
        candidates.exclude(pk__in=examined)
        .annotate(filled=_filled_subquery(now))
        .filter(filled__lt=k)
        .order_by("filled", "?")
        .select_for_update(skip_locked=True, of=("self",))
        .values_list("pk", flat=True)[:count]
    )


def _room_elsewhere(candidates, examined: set[int], now, k: int) -> bool:
    """Whether scenarios not `examined` (locked by other arrivals) may still have room."""
    room = candidates.exclude(pk__in=examined).annotate(filled=_filled_subquery(now))
    return room.filter(filled__lt=k).exists()


def _try_reserve(participant: Participant, now, settle: bool = False) -> list[Assignment] | None:
    """One attempt in one transaction; None when rows locked by others may have room
    (unless `settle`: then whatever is free now)."""
    study = participant.study
    wanted, k = study.scenarios_per_participant, study.ratings_per_scenario
    with transaction.atomic():
        # The participant's row lock makes two tabs or a double click reserve once.
        Participant.objects.select_for_update().get(pk=participant.pk)
        mine = list(participant.assignments.order_by("position"))
        if mine:
            return mine
        candidates = _ready(study)
        chosen: list[int] = []
        examined: set[int] = set()
        while len(chosen) < wanted:
            batch = _lock_least_filled(candidates, examined, now, k, wanted - len(chosen))
            if not batch:
                break
            examined.update(batch)
            # Counted again in a new statement, now that the rows are ours: the first
            # statement's snapshot may predate a commit by whoever held a row before us.
            fresh = _fill(batch, now)
            chosen += [pk for pk in batch if fresh[pk] < k]
        if len(chosen) < wanted and not settle and _room_elsewhere(candidates, examined, now, k):
            transaction.set_rollback(True)
            return None  # others hold rows that may still have room: try again shortly
        until = now + dt.timedelta(minutes=study.reservation_minutes)
        random.shuffle(chosen)  # the order scenarios are shown in carries no information
        return Assignment.objects.bulk_create(
            Assignment(
                participant=participant,
                study_scenario_id=pk,
                position=i,
                reserved_at=now,
                reserved_until=until,
            )
            for i, pk in enumerate(chosen, start=1)
        )


class Contended(Exception):
    """Scenarios with room are locked by other arrivals: wait and try again (the retry loop of
    assignment_reserve_bundle)."""


# A first reservation's write, checked in the same statement: each chosen scenario (locked by
# the statement before) is counted afresh, and taken only if it still has room; positions
# follow `ids`' (shuffled) order among those taken. With the consent page's time, when there
# is one (a data-modifying CTE runs whatever the main statement returns).
RESERVE_FRESH = """
WITH shown AS (
    INSERT INTO surveys_pagetime (participant_id, page, assignment_id, shown_at, submitted_at)
    SELECT %(participant)s, %(page)s, NULL, %(shown)s, %(now)s WHERE %(shown)s IS NOT NULL
)
INSERT INTO surveys_assignment
       (participant_id, study_scenario_id, position, status, reserved_at, reserved_until)
SELECT %(participant)s, room.id, %(after)s + row_number() OVER (ORDER BY room.ord),
       %(reserved)s, %(now)s, %(until)s
  FROM unnest(%(ids)s::bigint[]) WITH ORDINALITY AS room (id, ord)
 WHERE (SELECT count(*) FROM surveys_assignment a
         WHERE a.study_scenario_id = room.id
           AND (a.status = %(completed)s
                OR (a.status = %(reserved)s AND a.reserved_until > %(now)s))) < %(k)s
RETURNING id, study_scenario_id, position
"""


def assignment_reserve_fresh(
    *, participant: Participant, now, consent_shown=None
) -> list[Assignment]:
    """The first bundle of a participant created in the caller's (still open) transaction,
    which is what keeps a second tab out: nobody else can see the row yet. Records the
    consent page's time too. Three statements when nobody else holds the scenarios: the
    choice, the write, the commit. Contended: rows that may have room are locked by others
    (the caller rolls back and takes assignment_reserve_bundle's path)."""
    study = participant.study
    wanted, k = study.scenarios_per_participant, study.ratings_per_scenario
    candidates = _ready(study)
    until = now + dt.timedelta(minutes=study.reservation_minutes)
    taken: list[Assignment] = []
    examined: set[int] = set()
    shown = consent_shown
    while len(taken) < wanted:
        batch = _lock_least_filled(candidates, examined, now, k, wanted - len(taken))
        if not batch:
            break
        examined.update(batch)
        random.shuffle(batch)  # the order scenarios are shown in carries no information
        params = {
            "participant": participant.pk,
            "page": Page.CONSENT,
            "shown": shown,
            "now": now,
            "after": len(taken),
            "reserved": AssignmentStatus.RESERVED,
            "until": until,
            "completed": AssignmentStatus.COMPLETED,
            "ids": batch,
            "k": k,
        }
        with connection.cursor() as cursor:
            cursor.execute(RESERVE_FRESH, params)
            rows = cursor.fetchall()
        shown = None
        taken += [
            Assignment(
                pk=pk,
                participant=participant,
                study_scenario_id=ss,
                position=position,
                status=AssignmentStatus.RESERVED,
                reserved_at=now,
                reserved_until=until,
            )
            for pk, ss, position in rows
        ]
    if shown is not None:  # no scenario had room: nothing was written with it
        PageTime.objects.create(
            participant=participant, page=Page.CONSENT, shown_at=shown, submitted_at=now
        )
    if len(taken) < wanted and _room_elsewhere(candidates, examined, now, k):
        raise Contended
    return sorted(taken, key=lambda a: a.position)


def assignment_reserve_bundle(*, participant: Participant) -> list[Assignment]:
    """Hand `participant` up to N distinct scenarios that still have room, least-rated first.

    Fewer than N only when fewer than N scenarios have room left; none when the study is full.
    """
    for attempt in range(RESERVE_ATTEMPTS):
        reserved = _try_reserve(participant, timezone.now())
        if reserved is not None:
            return reserved
        time.sleep(min(0.2, 0.005 * 2**attempt) * random.uniform(0.5, 1.5))
    # Still contended after many tries: take what is free now rather than turn the person away.
    return _try_reserve(participant, timezone.now(), settle=True)


def assignments_complete(*, assignments: list[Assignment], ratings_per_scenario: int, now) -> None:
    """Complete a finishing participant's assignments, each as far as the counting rule lets
    it. Runs inside services.participant_finish's transaction, which holds the participant's
    row lock."""
    # Lock in id order (reservations take rows with SKIP LOCKED and never wait, so
    # waiting here cannot deadlock with them).
    ids = sorted(a.study_scenario_id for a in assignments)
    list(StudyScenario.objects.select_for_update().filter(pk__in=ids).order_by("pk").values("pk"))
    fill = _fill(ids, now)
    k = ratings_per_scenario
    for a in assignments:
        live = a.status == AssignmentStatus.RESERVED and a.reserved_until > now
        # A reservation that ran out still counts if its scenario has room left now;
        # otherwise its answers are kept but not counted towards k.
        if live or (
            a.status in (AssignmentStatus.RESERVED, AssignmentStatus.EXPIRED)
            and fill[a.study_scenario_id] < k
        ):
            if not live:
                fill[a.study_scenario_id] += 1
            a.status, a.completed_at = AssignmentStatus.COMPLETED, now
            a.save(update_fields=["status", "completed_at"])
        elif a.status == AssignmentStatus.RESERVED:
            a.status = AssignmentStatus.EXPIRED
            a.save(update_fields=["status"])


def assignment_expire_overdue(*, now=None) -> int:
    """Free every reservation past its deadline (the scenario may be offered again)."""
    now = now or timezone.now()
    return Assignment.objects.filter(
        status=AssignmentStatus.RESERVED, reserved_until__lte=now
    ).update(status=AssignmentStatus.EXPIRED)
