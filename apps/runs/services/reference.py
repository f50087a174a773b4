"""Sampling runs and their responses.

For now this holds what the rubric editor needs: answers from a configured set of reference
models, taken from a sampling run when one has them, otherwise generated on demand through
the gateway and kept in the one reference run. The sampling engine builds on the same rows.
"""

import random
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.llm import gateway, leases
from apps.llm.errors import LLMError, PromptError
from apps.llm.models import ModelConfig, Purpose
from apps.llm.selectors import prompt_current, prompt_render
from apps.questions.models import Question

from ..errors import RunError
from ..models import Response, ResponseStatus, RunKind, RunStatus, SamplingRun

REFERENCE_RUN_NAME = "Reference answers (on demand)"
# An expert is waiting for these answers: give up sooner than a batch run would.
INTERACTIVE_POLICY = gateway.RetryPolicy(max_attempts=3, max_total_seconds=60.0)
MAX_ERROR_CHARS = 2000
LEASE_STATES = leases.LeaseStates(
    waiting=ResponseStatus.PENDING, running=ResponseStatus.RUNNING, failed=ResponseStatus.FAILED
)
GAVE_UP = "The worker generating this answer stopped {attempts} times before it finished."


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
        run=run, model=model, question=question, sample_index=0,
        defaults=leases.lease_waiting_fields(),
    )  # fmt: skip
    if response.status == ResponseStatus.FAILED:
        # Drawn again after a failure: try again rather than show the old error for ever,
        # with a fresh budget of attempts.
        Response.objects.filter(pk=response.pk, status=ResponseStatus.FAILED).update(
            status=ResponseStatus.PENDING, error="", attempts=0, **leases.lease_waiting_fields()
        )
        response.refresh_from_db()
    return response


def response_generate(*, response_id: int) -> Response | None:
    """Claim a pending response, ask its model through the gateway, and record the answer.

    Returns None when the response was not ours to work on (done, failed, held by a live
    worker, or out of attempts), so running this twice makes one call. The worker holds it
    under a lease (apps/llm/leases.py), taken over when the worker dies. No transaction is
    held while the model is called.
    """
    owner = leases.lease_owner_name()
    rows = Response.objects.filter(pk=response_id)
    if not leases.lease_claim(rows, states=LEASE_STATES, owner=owner, started_at=timezone.now()):
        return None
    response = Response.objects.select_related("run__prompt", "model", "question").get(
        pk=response_id
    )
    with leases.lease_kept(rows, states=LEASE_STATES, owner=owner):
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
            leases.lease_end(
                rows, states=LEASE_STATES, owner=owner, status=ResponseStatus.FAILED,
                error=str(exc)[:MAX_ERROR_CHARS], completed_at=timezone.now(),
            )  # fmt: skip
        else:
            leases.lease_end(
                rows, states=LEASE_STATES, owner=owner, status=ResponseStatus.DONE,
                text=completion.text, error="", input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens, cost_usd=completion.cost_usd,
                latency_ms=completion.latency_ms, completed_at=timezone.now(),
            )  # fmt: skip
    response.refresh_from_db()
    return response


def responses_expired_requeue() -> list[int]:
    """The reference answers whose worker died or never came (their lease ran out), back to
    pending: the caller queues their task (`sample_answer_task`). One out of attempts fails
    instead, saying so. Benchmark runs' responses are the sampling engine's to requeue."""
    return leases.leases_expire(
        Response.objects.filter(run__kind=RunKind.REFERENCE), states=LEASE_STATES,
        gave_up={"error": GAVE_UP.format(attempts=leases.MAX_ATTEMPTS),
                 "completed_at": timezone.now()},
    )  # fmt: skip
