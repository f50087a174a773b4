"""Reservations: handing a participant a bundle of scenarios, completing the bundle when they
finish, and expiring reservations that ran out.

Counting rule (DESIGN.md, "Surveys under load"): a scenario is full when its completed
assignments plus its reserved assignments whose `reserved_until` is still ahead reach the
study's k. Anything that can *add* to that count (reserving, completing an expired
reservation) first locks the scenario's `StudyScenario` row and then counts in a new
statement, so the count it acts on includes every committed change by others. Whatever only
*lowers* the count (expiry, return, rejection) needs no lock.
"""

import datetime as dt
import random
import time

from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..models import Assignment, AssignmentStatus, Participant, StudyScenario

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
        candidates = StudyScenario.objects.filter(study=study, response__isnull=False)
        chosen: list[int] = []
        examined: set[int] = set()
        while len(chosen) < wanted:
            # Least-filled first; random among equals so that concurrent arrivals spread out.
            # SKIP LOCKED: rows another arrival is handing out are passed over, not waited for.
            batch = list(
                candidates.exclude(pk__in=examined)
                .annotate(filled=_filled_subquery(now))
                .filter(filled__lt=k)
                .order_by("filled", "?")
                .select_for_update(skip_locked=True, of=("self",))
                .values_list("pk", flat=True)[: wanted - len(chosen)]
            )
            if not batch:
                break
            examined.update(batch)
            # Counted again in a new statement, now that the rows are ours: the first
            # statement's snapshot may predate a commit by whoever held a row before us.
            fresh = _fill(batch, now)
            chosen += [pk for pk in batch if fresh[pk] < k]
        if len(chosen) < wanted and not settle:
            room = candidates.exclude(pk__in=examined).annotate(filled=_filled_subquery(now))
            if room.filter(filled__lt=k).exists():
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
