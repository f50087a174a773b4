import string
from decimal import Decimal

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from .models import LLMCall, ModelConfig, PromptTemplate


class PromptError(Exception):
    """A prompt cannot be rendered or saved; the message says why."""


def llm_call_record(
    *,
    model: ModelConfig,
    purpose: str,
    caller: str,
    attempt: int,
    status: str,
    error_class: str = "",
    error_message: str = "",
    input_tokens: int = 0,
    output_tokens: int = 0,
    cost_usd: Decimal | None = None,
    latency_ms: int = 0,
    prompt: PromptTemplate | None = None,
) -> LLMCall:
    return LLMCall.objects.create(
        model=model, purpose=purpose, caller=caller[:200], attempt=attempt, status=status,
        error_class=error_class[:200], error_message=error_message, input_tokens=input_tokens,
        output_tokens=output_tokens, cost_usd=cost_usd, latency_ms=latency_ms,
        prompt_template=prompt,
    )  # fmt: skip


def llm_calls_record(calls: list[LLMCall]) -> list[LLMCall]:
    """Store ledger rows built by the gateway, in one INSERT."""
    for call in calls:
        call.error_class = call.error_class[:200]
    return LLMCall.objects.bulk_create(calls)


@transaction.atomic
def prompt_template_save(
    *, purpose: str, system_text: str, user_text: str, notes: str = "",
    template: PromptTemplate | None = None,
) -> PromptTemplate:  # fmt: skip
    """Edit `template` in place while unused; otherwise (or with no template) add a version.

    A version that has been used is what some results were produced with, so it never
    changes: the edit becomes version n+1.
    """
    _check_placeholders(system_text)
    _check_placeholders(user_text)
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
        purpose=purpose, version=latest + 1, system_text=system_text, user_text=user_text,
        notes=notes,
    )  # fmt: skip


def _check_placeholders(text: str) -> None:
    for match in string.Template.pattern.finditer(text):
        if match.group("invalid") is not None:
            line = text[: match.start()].count("\n") + 1
            raise PromptError(
                f"Line {line}: a lone '$' must be written '$$'; placeholders look like $name."
            )


def prompt_current(purpose: str) -> PromptTemplate:
    template = PromptTemplate.objects.filter(purpose=purpose).order_by("-version").first()
    if template is None:
        raise PromptError(f"No prompt template for purpose {purpose!r}; run migrations.")
    return template


def prompt_render(template: PromptTemplate, **variables: object) -> list[dict]:
    """The chat messages for `template` filled with `variables`; marks the version used."""
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
    if template.used_at is None:
        PromptTemplate.objects.filter(pk=template.pk, used_at__isnull=True).update(
            used_at=timezone.now()
        )
        template.used_at = timezone.now()
    return messages
