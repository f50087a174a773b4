import string
from dataclasses import dataclass

from django.db.models import Count, F, Q, Sum, Window
from django.db.models.functions import RowNumber

from .errors import PromptError
from .models import CallStatus, Embedding, LLMCall, ModelConfig, PromptTemplate, ProviderBatch

BATCHES_SHOWN = 50


@dataclass(frozen=True)
class RunBatches:
    """A run's provider batches as its page shows them: the newest, and the totals of all."""

    batches: list[ProviderBatch]
    count: int  # all of them
    open: int  # not yet recorded
    requests: int
    recorded: int
    retried: int


def run_batches(*, work: str, scope: int) -> RunBatches:
    """The provider batches of a run (`work`: the kind's engine name, `scope`: the run)."""
    return runs_batches(work=work, scopes=[scope])[scope]


def runs_batches(*, work: str, scopes: list[int]) -> dict[int, RunBatches]:
    """The provider batches of several runs of one kind, in two queries whatever their
    number (a page that lists runs polls this)."""
    batches = ProviderBatch.objects.filter(work=work, scope__in=scopes)
    totals = {
        row.pop("scope"): row
        for row in batches.values("scope")
        .order_by()
        .annotate(
            count=Count("pk"),
            open=Count("pk", filter=Q(recorded_at__isnull=True)),
            requests=Sum("requests"),
            recorded=Sum("recorded"),
            retried=Sum("retried"),
        )
    }
    newest = (
        batches.select_related("model")
        .annotate(rank=Window(RowNumber(), partition_by="scope", order_by=F("pk").desc()))
        .filter(rank__lte=BATCHES_SHOWN)
        .order_by("scope", "-pk")
    )
    shown: dict[int, list[ProviderBatch]] = {scope: [] for scope in scopes}
    for batch in newest:
        shown[batch.scope].append(batch)
    empty = dict.fromkeys(("count", "open", "requests", "recorded", "retried"), 0)
    return {
        scope: RunBatches(
            batches=shown[scope],
            **{k: v or 0 for k, v in totals.get(scope, empty).items()},
        )
        for scope in scopes
    }


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


def prompt_current(*, purpose: str) -> PromptTemplate:
    """The newest version of the prompt for `purpose`."""
    template = PromptTemplate.objects.filter(purpose=purpose).order_by("-version").first()
    if template is None:
        raise PromptError(f"No prompt template for purpose {purpose!r}; run migrations.")
    return template


def prompt_render(*, template: PromptTemplate, variables: dict[str, object]) -> list[dict]:
    """The chat messages for `template` filled with `variables`. Writes nothing: the version
    is marked used when a call made with it is recorded (`services.llm_calls_record`)."""
    missing = [name for name in template.variables if name not in variables]
    if missing:
        raise PromptError(f"{template} needs {', '.join(missing)}")
    values = {k: str(v) for k, v in variables.items()}
    messages = []
    if template.system_text.strip():
        messages.append(
            {"role": "system", "content": string.Template(template.system_text).substitute(values)}
        )
    messages.append(
        {"role": "user", "content": string.Template(template.user_text).substitute(values)}
    )
    return messages


def embeddings_stored(*, model: ModelConfig, digests) -> dict[str, Embedding]:
    """The stored embeddings by `model` (as its litellm model string now names it) of the
    texts whose SHA-256 digests are given, by digest."""
    rows = Embedding.objects.filter(
        model=model, litellm_model=model.litellm_model, text_sha256__in=set(digests)
    )
    return {row.text_sha256: row for row in rows}


# --- where a run's calls depart from a published design ----------------------------------------


def prompt_additions(*, prompt: PromptTemplate, published: frozenset[str], what: str) -> list[str]:
    """What `prompt` adds to a published design that sends `what` alone as the only user
    message (its user text one of `published`), in plain words: nothing when it is that."""
    found = []
    if prompt.system_text.strip():
        found.append(f"{prompt} adds a system message")
    if prompt.user_text.strip() not in published:
        found.append(f"{prompt} puts other words around {what}")
    return found


def params_text(params: dict) -> str:
    """Parameters as a reader sees them: temperature=0.7, top_p=0.5."""
    return ", ".join(f"{key}={value!r}" for key, value in sorted(params.items()))


def model_params_notes(*, models) -> list[str]:
    """A note for each model whose console settings send parameters with every call, beyond
    the provider's defaults (a published design that used the defaults departs by them)."""
    return [
        f"{model.display_name}'s settings in the console send {params_text(model.params)} "
        "with every call, beyond the model's defaults."
        for model in models
        if model.params
    ]
