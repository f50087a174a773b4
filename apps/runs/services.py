"""Sampling runs and their responses.

For now this holds what the rubric editor needs: answers from a configured set of reference
models, taken from a sampling run when one has them, otherwise generated on demand through
the gateway and kept in the one reference run. The sampling engine builds on the same rows.
"""

import datetime as dt
import random
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.llm import gateway
from apps.llm.errors import LLMError, PromptError
from apps.llm.models import ModelConfig, Purpose
from apps.llm.selectors import prompt_current, prompt_render
from apps.questions.models import Question

from .errors import RunError
from .models import Response, ResponseStatus, RunKind, RunStatus, SamplingRun

REFERENCE_RUN_NAME = "Reference answers (on demand)"
# An expert is waiting for these answers: give up sooner than a batch run would.
INTERACTIVE_POLICY = gateway.RetryPolicy(max_attempts=3, max_total_seconds=60.0)
# A response left RUNNING this long belonged to a worker that died; it may be claimed again.
STALE_AFTER = dt.timedelta(minutes=5)
MAX_ERROR_CHARS = 2000


def reference_run_get() -> SamplingRun:
    """The run that keeps on-demand reference answers, made on first use."""
    run = SamplingRun.objects.filter(kind=RunKind.REFERENCE).first()
    if run is not None:
        return run
    try:
        prompt = prompt_current(purpose=Purpose.SAMPLE)
    except PromptError as exc:
        raise RunError(str(exc)) from exc
    try:
        with transaction.atomic():
            return SamplingRun.objects.create(
                name=REFERENCE_RUN_NAME, kind=RunKind.REFERENCE, status=RunStatus.RUNNING,
                prompt=prompt,
            )  # fmt: skip
    except IntegrityError:
        return SamplingRun.objects.get(kind=RunKind.REFERENCE)  # made by a concurrent request


def reference_models_set(*, models: Iterable[ModelConfig]) -> SamplingRun:
    run = reference_run_get()
    run.model_configs.set(list(models))
    return run


def sample_answers_draw(
    *, question: Question, count: int = 2, exclude_model_ids: Iterable[int] = (),
    rng: random.Random | None = None,
) -> list[Response]:  # fmt: skip
    """`count` answers to `question` from reference models drawn at random, preferring models
    not in `exclude_model_ids` ("show two others"). An answer comes from a sampling run when
    one has it; otherwise a pending response is kept in the reference run, for the caller to
    have generated (`sample_answer_task`)."""
    rng = rng or random.Random()
    run = reference_run_get()
    models = list(run.model_configs.filter(active=True))
    if not models:
        raise RunError(
            "No reference models are configured. A researcher chooses them on the run "
            f"“{REFERENCE_RUN_NAME}” in the console."
        )
    excluded = set(exclude_model_ids)
    fresh = [m for m in models if m.pk not in excluded]
    seen = [m for m in models if m.pk in excluded]
    chosen = rng.sample(fresh, min(count, len(fresh)))
    chosen += rng.sample(seen, min(count - len(chosen), len(seen)))
    return [_answer_for(run, model, question, rng) for model in chosen]


def _answer_for(run: SamplingRun, model: ModelConfig, question: Question, rng) -> Response:
    done = list(
        Response.objects.filter(question=question, model=model, status=ResponseStatus.DONE)
        .select_related("model", "run")
        .order_by("pk")
    )
    from_runs = [r for r in done if r.run.kind == RunKind.BENCHMARK]
    if from_runs or done:
        return rng.choice(from_runs or done)
    response, _created = Response.objects.get_or_create(
        run=run, model=model, question=question, sample_index=0
    )
    if response.status == ResponseStatus.FAILED:
        # Drawn again after a failure: try again rather than show the old error for ever.
        Response.objects.filter(pk=response.pk, status=ResponseStatus.FAILED).update(
            status=ResponseStatus.PENDING, error=""
        )
        response.refresh_from_db()
    return response


def response_generate(*, response_id: int) -> Response | None:
    """Claim a pending response, ask its model through the gateway, and record the answer.

    Returns None when the response was not ours to work on (done, failed, or being worked on
    by a live worker), so running this twice makes one call. No transaction is held while
    the model is called.
    """
    now = timezone.now()
    claimed = (
        Response.objects.filter(pk=response_id)
        .filter(
            Q(status=ResponseStatus.PENDING)
            | Q(status=ResponseStatus.RUNNING, started_at__lt=now - STALE_AFTER)
        )
        .update(status=ResponseStatus.RUNNING, started_at=now, attempts=F("attempts") + 1)
    )
    if not claimed:
        return None
    response = Response.objects.select_related("run__prompt", "model", "question").get(
        pk=response_id
    )
    try:
        messages = prompt_render(
            template=response.run.prompt, variables={"question": response.question.text}
        )
        completion = gateway.complete(
            model=response.model, messages=messages, purpose=Purpose.SAMPLE,
            caller=f"response:{response.pk}", prompt=response.run.prompt,
            policy=INTERACTIVE_POLICY,
        )  # fmt: skip
    except (LLMError, PromptError) as exc:
        Response.objects.filter(pk=response.pk, status=ResponseStatus.RUNNING).update(
            status=ResponseStatus.FAILED, error=str(exc)[:MAX_ERROR_CHARS],
            completed_at=timezone.now(),
        )  # fmt: skip
    else:
        Response.objects.filter(pk=response.pk, status=ResponseStatus.RUNNING).update(
            status=ResponseStatus.DONE, text=completion.text, error="",
            input_tokens=completion.input_tokens, output_tokens=completion.output_tokens,
            cost_usd=completion.cost_usd, latency_ms=completion.latency_ms,
            completed_at=timezone.now(),
        )  # fmt: skip
    response.refresh_from_db()
    return response
