"""Reads of screening: a researcher's queue, and the progress and agreement of the pairs.

Nothing here shows an open post's decisions: what a screener sees of a post before
deciding is the post alone, and the dashboard counts only completed pairs' decisions. The
console follows the same rule (`decisions_shown_to`)."""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from ..models import (
    LENGTH_LIMIT,
    ExclusionReason,
    SampledPost,
    ScreeningDecision,
    ScreeningOutcome,
    Topic,
)

PAIR = 2


def _open_for(*, researcher, topic: Topic | None) -> QuerySet[SampledPost]:
    found = SampledPost.objects.filter(
        outcome=ScreeningOutcome.OPEN, decisions_count__lt=PAIR
    ).exclude(decisions__researcher=researcher)
    return found.filter(topic=topic) if topic is not None else found


def screening_next(*, researcher, topic: Topic | None = None, after: int | None = None):
    """The next sampled post `researcher` has still to screen (in the order drawn), after
    the one with pk `after` when skipping, and from the start again past the last."""
    found = _open_for(researcher=researcher, topic=topic).select_related("post", "topic")
    found = found.order_by("pk")
    if after is not None:
        following = found.filter(pk__gt=after).first()
        if following is not None:
            return following
    return found.first()


def screening_left(*, researcher, topic: Topic | None = None) -> int:
    return _open_for(researcher=researcher, topic=topic).count()


def pair_complete(prefix: str = "") -> Q:
    """Of sampled posts (through `prefix`, e.g. "sampled__"): those whose two decisions are
    in, so that both may be read."""
    return Q(**{f"{prefix}decisions_count__gte": PAIR}) | ~Q(
        **{f"{prefix}outcome": ScreeningOutcome.OPEN}
    )


def decisions_shown_to(*, viewer) -> Q:
    """Of screening decisions: those `viewer` may read. Each screener decides without seeing
    the other's decision, so a decision on a post still being screened is shown to the one
    who made it alone, and every decision once the post's pair is complete."""
    return Q(researcher_id=viewer.pk) | pair_complete("sampled__")


def screening_state(*, sampled: SampledPost, researcher) -> str:
    """ "open" (theirs to decide), "decided" (they have), or "complete" (two others have)."""
    if sampled.decisions.filter(researcher=researcher).exists():
        return "decided"
    if sampled.decisions_count >= PAIR or sampled.outcome != ScreeningOutcome.OPEN:
        return "complete"
    return "open"


def screening_last_decision(*, researcher) -> ScreeningDecision | None:
    """`researcher`'s last decision, the one an undo withdraws, with `undoable` set: whether
    its post still waits for the other screener's decision."""
    last = (
        ScreeningDecision.objects.filter(researcher=researcher)
        .select_related("sampled__post", "reason")
        .order_by("-decided_at", "-pk")
        .first()
    )
    if last is not None:
        sampled = last.sampled
        last.undoable = sampled.decisions_count < PAIR and sampled.outcome == ScreeningOutcome.OPEN
    return last


def exclusion_reasons_active() -> QuerySet[ExclusionReason]:
    return ExclusionReason.objects.filter(active=True).order_by("order", "text")


@dataclass
class Agreement:
    """Agreement of the first and the second screening (by time) of completed pairs."""

    pairs: int
    agreed: int
    percent: float | None
    kappa: float | None
    kappa_note: str


def agreement(first: list[bool], second: list[bool]) -> Agreement:
    """Percent agreement and Cohen's kappa (scikit-learn) of two lists of include (True) /
    exclude (False) decisions, pair by pair. Kappa is undefined when chance agreement is
    certain: both screenings put every post in one and the same class."""
    # Imported here: the statistics bring numpy and scikit-learn, and only this page needs them.
    from stats.agreement import agreed, cohen_kappa, percent_agreement

    counts = (len(first), agreed(first, second), percent_agreement(first, second))
    if not first:
        return Agreement(*counts, None, "no pair of decisions is complete yet")
    classes = set(first) | set(second)
    if len(classes) < 2:
        only = "include" if classes == {True} else "exclude"
        return Agreement(*counts, None, f"every decision is “{only}”")
    kappa = cohen_kappa(first, second)
    if kappa is None:
        return Agreement(*counts, None, "chance agreement is certain")
    return Agreement(*counts, kappa, "")


def _pairs() -> dict[int, list]:
    """{topic id: [(first include, second include, outcome), ...]} of completed pairs, the
    first and second decision ordered by when they were made."""
    rows = (
        ScreeningDecision.objects.filter(pair_complete("sampled__"))
        .order_by("sampled_id", "decided_at", "pk")
        .values_list("sampled_id", "sampled__topic_id", "sampled__outcome", "include")
    )
    by_post: dict[int, list] = {}
    for sampled_id, topic_id, outcome, include in rows:
        by_post.setdefault(sampled_id, [topic_id, outcome]).append(include)
    by_topic = defaultdict(list)
    for topic_id, outcome, first, second, *_ in by_post.values():
        by_topic[topic_id].append((first, second, outcome))
    return by_topic


def _row(name: str, counts: dict, pairs: list) -> dict:
    length_rule = sum(
        1 for a, b, outcome in pairs if a and b and outcome == ScreeningOutcome.EXCLUDED
    )
    return {
        "name": name,
        **counts,
        "length_rule": length_rule,
        "agreement": agreement([p[0] for p in pairs], [p[1] for p in pairs]),
    }


def screening_dashboard() -> dict:
    """Per topic (and over all): posts sampled, decided by none, one or both screeners,
    included, excluded (and of those, by the length rule), agreement and kappa; and how
    often each exclusion reason was given in completed pairs."""
    n = "pk"
    counts = {
        row.pop("topic_id"): row
        for row in SampledPost.objects.values("topic_id").annotate(
            sampled=Count(n),
            none=Count(n, filter=Q(decisions_count=0)),
            one=Count(n, filter=Q(decisions_count=1)),
            both=Count(n, filter=Q(decisions_count__gte=PAIR)),
            included=Count(n, filter=Q(outcome=ScreeningOutcome.INCLUDED)),
            excluded=Count(n, filter=Q(outcome=ScreeningOutcome.EXCLUDED)),
        )
    }
    pairs = _pairs()
    keys = ("sampled", "none", "one", "both", "included", "excluded")
    empty = dict.fromkeys(keys, 0)
    rows = [
        _row(topic.name, counts.get(topic.pk, empty), pairs.get(topic.pk, []))
        for topic in Topic.objects.order_by("order", "name")
    ]
    totals = {key: sum(c[key] for c in counts.values()) for key in keys}
    every_pair = [p for topic_pairs in pairs.values() for p in topic_pairs]
    reasons = (
        ScreeningDecision.objects.filter(pair_complete("sampled__"), include=False)
        .values("reason__text", "reason__order", "reason__active")
        .annotate(count=Count("pk"))
        .order_by("reason__order", "reason__text")
    )
    return {
        "rows": rows,
        "total": _row("All topics", totals, every_pair),
        "reasons": list(reasons),
        "length_limit": LENGTH_LIMIT,
    }
