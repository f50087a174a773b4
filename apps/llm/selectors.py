from django.db.models import Count, Q, Sum

from .models import CallStatus, LLMCall


def usage_totals(*, since=None) -> list[dict]:
    """Calls, retries, tokens and cost by model and purpose, for the researcher's usage page."""
    calls = LLMCall.objects.all()
    if since is not None:
        calls = calls.filter(created_at__gte=since)
    return list(
        calls.values("model__display_name", "model__litellm_model", "purpose")
        .annotate(
            attempts=Count("id"),
            ok=Count("id", filter=Q(status=CallStatus.OK)),
            retries=Count("id", filter=Q(attempt__gt=1)),
            failed=Count("id", filter=~Q(status=CallStatus.OK)),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cost=Sum("cost_usd"),
            unpriced=Count("id", filter=Q(status=CallStatus.OK, cost_usd__isnull=True)),
        )
        .order_by("model__display_name", "purpose")
    )
