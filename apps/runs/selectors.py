import random

from django.db.models import Count, Q, QuerySet

from apps.questions.models import Question

from .models import Response, ResponseStatus, RunKind, SamplingRun


def reference_model_ids() -> list[int]:
    run = SamplingRun.objects.filter(kind=RunKind.REFERENCE).first()
    return list(run.model_configs.filter(active=True).values_list("pk", flat=True)) if run else []


def answers_ready(
    *, question: Question, count: int = 2, rng: random.Random | None = None
) -> list[Response]:
    """Up to `count` finished answers to `question` from reference models, one per model,
    drawn at random; reading only (nothing is generated)."""
    rng = rng or random.Random()
    done = list(
        Response.objects.filter(
            question=question, model_id__in=reference_model_ids(), status=ResponseStatus.DONE
        ).select_related("model", "run")
    )
    by_model: dict[int, list[Response]] = {}
    for response in done:
        by_model.setdefault(response.model_id, []).append(response)
    models = rng.sample(sorted(by_model), min(count, len(by_model)))
    return [rng.choice(by_model[m]) for m in models]


def answers_by_ids(*, question: Question, ids: list[int]) -> list[Response]:
    found = Response.objects.filter(question=question, pk__in=ids).select_related("model", "run")
    order = {pk: i for i, pk in enumerate(ids)}
    return sorted(found, key=lambda r: order[r.pk])


def runs_overview(*, limit: int = 10) -> QuerySet[SamplingRun]:
    """The most recent benchmark runs, each with `responses_total` and `responses_done`
    (the reference run is the rubric editor's, not a researcher's run)."""
    return (
        SamplingRun.objects.filter(kind=RunKind.BENCHMARK)
        .order_by("-created_at")
        .annotate(
            responses_total=Count("responses"),
            responses_done=Count("responses", filter=Q(responses__status=ResponseStatus.DONE)),
        )[:limit]
    )
