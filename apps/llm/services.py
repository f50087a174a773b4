import datetime as dt
import string

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from .errors import PromptError
from .models import (
    PROMPT_VARIABLES,
    Embedding,
    LimitChange,
    LLMCall,
    ModelConfig,
    PromptTemplate,
)
from .selectors import embeddings_stored


def llm_calls_record(*, calls: list[LLMCall]) -> list[LLMCall]:
    """Store ledger rows built by the gateway, in one INSERT, and mark the prompt versions
    they were made with as used: from then on those versions never change (see
    `prompt_template_save`). Marked here, where a call is recorded, and not when a prompt is
    rendered, so that reading a prompt never writes."""
    for call in calls:
        call.error_class = call.error_class[:200]
    prompt_ids = {call.prompt_template_id for call in calls if call.prompt_template_id}
    prompt_ids -= _prompts_used  # a used version stays used: no need to write it again
    with transaction.atomic():
        stored = LLMCall.objects.bulk_create(calls)
        if prompt_ids:
            PromptTemplate.objects.filter(pk__in=prompt_ids, used_at__isnull=True).update(
                used_at=timezone.now()
            )
            # Remembered once it is committed: a rolled-back mark must be written again.
            transaction.on_commit(lambda: _prompts_used.update(prompt_ids))
    return stored


_prompts_used: set[int] = set()  # prompt versions this process has marked as used


def limit_change_record(*, model_id: int, change) -> LimitChange:
    """Keep a change of a model's adaptive limit (an `apps.llm.limits.LimitChange`), timed
    by Redis's clock, which every worker shares."""
    return LimitChange.objects.create(
        model_id=model_id,
        at=dt.datetime.fromtimestamp(change.at_ms / 1000, tz=dt.UTC),
        old=change.old,
        new=change.new,
        why=change.why,
        in_flight=change.in_flight,
        hold_seconds=change.hold_seconds,
    )


def embeddings_store(
    *, model: ModelConfig, vectors: dict[str, list[float]]
) -> dict[str, Embedding]:
    """Keep the vectors `model` made, by the SHA-256 of their texts; the stored rows, by
    digest. A text stored meanwhile (by a concurrent job) keeps its first vector: the
    unique constraint makes the second insert a no-op."""
    rows = [
        Embedding(
            model=model,
            litellm_model=model.litellm_model,
            text_sha256=digest,
            dimensions=len(vector),
            vector=vector,
        )
        for digest, vector in vectors.items()
    ]
    Embedding.objects.bulk_create(rows, ignore_conflicts=True)
    return embeddings_stored(model=model, digests=vectors)


@transaction.atomic
def prompt_template_save(
    *,
    purpose: str,
    system_text: str,
    user_text: str,
    notes: str = "",
    template: PromptTemplate | None = None,
) -> PromptTemplate:
    """Edit `template` in place while unused; otherwise (or with no template) add a version.

    A version that has been used is what some results were produced with, so it never
    changes: the edit becomes version n+1.
    """
    _check_placeholders(system_text)
    _check_placeholders(user_text)
    _check_variables(template.purpose if template is not None else purpose, system_text, user_text)
    if template is not None:
        current = PromptTemplate.objects.select_for_update().get(pk=template.pk)
        if current.used_at is None:
            current.system_text, current.user_text, current.notes = system_text, user_text, notes
            current.save(update_fields=["system_text", "user_text", "notes"])
            return current
        purpose = current.purpose
    # Lock the purpose's versions so two editors cannot both take the same number.
    list(PromptTemplate.objects.select_for_update().filter(purpose=purpose).values("pk"))
    latest = PromptTemplate.objects.filter(purpose=purpose).aggregate(v=Max("version"))["v"] or 0
    return PromptTemplate.objects.create(
        purpose=purpose,
        version=latest + 1,
        system_text=system_text,
        user_text=user_text,
        notes=notes,
    )


def _check_variables(purpose: str, *texts: str) -> None:
    """Every $name must be one the purpose's prompts are given (models.PROMPT_VARIABLES):
    an unknown one would fail every call made with the version, after it was launched."""
    known = PROMPT_VARIABLES.get(purpose)
    if known is None:
        return
    probe = PromptTemplate(purpose=purpose, system_text=texts[0], user_text=texts[1])
    unknown = [name for name in probe.variables if name not in known]
    if unknown:
        raise PromptError(
            f"{', '.join('$' + n for n in unknown)}: not a variable of {purpose} prompts. "
            f"They can use {', '.join('$' + n for n in known)}."
        )


def _check_placeholders(text: str) -> None:
    for match in string.Template.pattern.finditer(text):
        if match.group("invalid") is not None:
            line = text[: match.start()].count("\n") + 1
            raise PromptError(
                f"Line {line}: a lone '$' must be written '$$'; placeholders look like $name."
            )
