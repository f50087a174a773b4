"""The rubric editor's reference answers: answers from a configured set of reference
models, taken from a sampling run when one has them, otherwise generated on demand through
the bulk engine, one at a time, and kept in the one reference run.
"""

import random
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.llm import engine, gateway, leases, runs
from apps.llm.errors import PromptError
from apps.llm.models import ModelConfig, Purpose, RunStatus
from apps.llm.selectors import prompt_current
from apps.questions.models import Question

from ..errors import RunError
from ..models import Response, ResponseStatus, RunKind, SamplingRun
from .sampling import SampleWork, call_seed

REFERENCE_RUN_NAME = "Reference answers (on demand)"
# An expert is waiting for these answers: give up sooner than a batch run would.
INTERACTIVE_POLICY = gateway.RetryPolicy(max_attempts=3, max_total_seconds=60.0)
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
                name=REFERENCE_RUN_NAME,
                kind=RunKind.REFERENCE,
                status=RunStatus.RUNNING,
                prompt=prompt,
            )
    except IntegrityError:
        return SamplingRun.objects.get(kind=RunKind.REFERENCE)  # made by a concurrent request


def reference_models_set(*, models: Iterable[ModelConfig]) -> SamplingRun:
    run = reference_run_get()
    run.model_configs.set(list(models))
    return run


def sample_answers_draw(
    *,
    question: Question,
    count: int = 2,
    exclude_model_ids: Iterable[int] = (),
    rng: random.Random | None = None,
) -> list[Response]:
    """`count` answers to `question` from reference models drawn at random, preferring models
    not in `exclude_model_ids` ("show two others"). An answer comes from a sampling run when
    one has it; otherwise a pending response is kept in the reference run, and generated once
    the caller's transaction commits."""
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
        run=run,
        model=model,
        question=question,
        sample_index=0,
        defaults={
            **leases.lease_waiting_fields(),
            "seed": call_seed(run.seed, model.pk, question.pk, 0),
        },
    )
    if response.status == ResponseStatus.FAILED:
        # Drawn again after a failure: try again rather than show the old error for ever,
        # with a fresh budget of attempts.
        Response.objects.filter(pk=response.pk, status=ResponseStatus.FAILED).update(
            status=ResponseStatus.PENDING, error="", attempts=0, **leases.lease_waiting_fields()
        )
        response.refresh_from_db()
    if response.status == ResponseStatus.PENDING:
        engine.scope_start(REFERENCE_WORK, response.pk)
    return response


class ReferenceWork(runs.RowWork, SampleWork):
    """The engine's view of one on-demand reference answer, a run of one row: an expert
    waits for that one answer. The same calls and records as a benchmark run's, with the
    interactive retry policy."""

    name = "runs.reference"
    caller = "response"
    policy = INTERACTIVE_POLICY

    def jobs(self):
        return Response.objects.filter(run__kind=RunKind.REFERENCE)

    def scope_lock(self, scope):
        return True

    def settle(self, scope):
        return None

    def gave_up(self):
        return {
            "error": GAVE_UP.format(attempts=leases.MAX_ATTEMPTS),
            "error_kind": "",
            "reserved_usd": None,
            "completed_at": timezone.now(),
        }


REFERENCE_WORK = engine.register(ReferenceWork())
