"""Reads of the samples drawn from the pool."""

from django.db.models import Count, Q, QuerySet

from ..models import Sample, ScreeningOutcome


def samples_list() -> QuerySet[Sample]:
    """Samples, newest first, each with its screening progress counted from its posts."""
    posts = "posts"
    return (
        Sample.objects.select_related("topic", "drawn_by")
        .annotate(
            decided_none=Count(posts, filter=Q(posts__decisions_count=0)),
            decided_one=Count(posts, filter=Q(posts__decisions_count=1)),
            decided_both=Count(posts, filter=Q(posts__decisions_count__gte=2)),
            included=Count(posts, filter=Q(posts__outcome=ScreeningOutcome.INCLUDED)),
            excluded=Count(posts, filter=Q(posts__outcome=ScreeningOutcome.EXCLUDED)),
        )
        .order_by("-drawn_at", "-pk")
    )
