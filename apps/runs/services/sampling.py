"""Sampling runs: questions x models x samples, answered through the bulk engine.

A run is made whole at creation: one `Response` per (run, model, question, sample index),
unique, each with the seed its call carries (`call_seed`), so that what a run will do is
in the database before it does any of it, progress is counted from those rows, and a rerun
with the same seed asks each provider exactly the same things. Its lifecycle
(launch, pause, resume, cancel, retry) is every run's (apps/llm/runs.py); the engine
(apps/llm/engine.py, `SampleWork` below) takes calls only while the run is running.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction
from django.db.models.functions import Length

from apps.llm import costs, engine, runs
from apps.llm.batches import batch_mode_refusal
from apps.llm.errors import PromptError
from apps.llm.models import BatchRetry, ModelConfig, PromptTemplate, Purpose
from apps.llm.params import ParamsError
from apps.llm.params import params_check as llm_params_check
from apps.llm.selectors import prompt_current, prompt_render
from apps.questions.models import Question

from ..errors import RunError
from ..models import LEASE_STATES, Response, ResponseStatus, RunKind, SamplingRun

MAX_SAMPLES = 20
CREATE_BATCH = 5000


# Every call's seed: a hash of its run's seed and the row (apps/llm/engine.py).
call_seed = engine.call_seed


def params_check(params: object) -> dict:
    """Generation parameters a researcher set for every call of a run: only those in
    apps/llm/params.py, each in its range (anything else could redirect or fake a call)."""
    try:
        return llm_params_check(params)
    except ParamsError as exc:
        raise RunError(str(exc)) from None


@dataclass(frozen=True)
class ModelEstimate:
    model: ModelConfig
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: Decimal | None  # None: nobody knows this model's price
    batch_cost_usd: Decimal | None = None  # in batch mode; None: unpriced, or no batch API


@dataclass(frozen=True)
class Estimate:
    calls: int
    cost_usd: Decimal  # of the priced models
    models: list[ModelEstimate] = field(default_factory=list)

    @property
    def unpriced(self) -> list[ModelConfig]:
        return [m.model for m in self.models if m.cost_usd is None]

    @property
    def no_batch_api(self) -> list[ModelConfig]:
        return [m.model for m in self.models if not m.model.batch_api]

    @property
    def batch_cost_usd(self) -> Decimal | None:
        """Of the priced models, in batch mode; None when a model has no batch API (the run
        cannot be sent in batches)."""
        if self.no_batch_api:
            return None
        return sum((m.batch_cost_usd for m in self.models if m.cost_usd is not None), Decimal(0))


def sampling_estimate(
    *,
    questions: Iterable[Question],
    models: Iterable[ModelConfig],
    samples_per_item: int,
    prompt: PromptTemplate,
) -> Estimate:
    """The number of calls and what they should cost, live and in batch mode: tokens in from
    the prompts' length, tokens out from each model's recent average (apps/llm/costs.py)."""
    question_ids = [q.pk for q in questions]
    chars = (
        Question.objects.filter(pk__in=question_ids)
        .annotate(n=Length("text"))
        .values_list("n", flat=True)
    )
    prompt_chars = len(prompt.system_text) + len(prompt.user_text)
    total_in = sum(costs.tokens_in(n + prompt_chars) for n in chars) * samples_per_item
    calls = len(question_ids) * samples_per_item
    per_model = []
    for model in models:
        out = costs.typical_output_tokens(model, Purpose.SAMPLE) * calls
        cost = costs.call_cost(costs.price_per_mtok(model), tokens_in=total_in, tokens_out=out)
        per_model.append(
            ModelEstimate(
                model=model,
                calls=calls,
                tokens_in=total_in,
                tokens_out=out,
                cost_usd=cost,
                batch_cost_usd=costs.batch_cost(model, cost),
            )
        )
    return Estimate(
        calls=calls * len(per_model),
        cost_usd=sum((m.cost_usd for m in per_model if m.cost_usd is not None), Decimal(0)),
        models=per_model,
    )


def sampling_run_create(
    *,
    name: str,
    questions: Iterable[Question],
    models: Iterable[ModelConfig],
    samples_per_item: int = 5,
    prompt: PromptTemplate | None = None,
    params: dict | None = None,
    budget_usd: Decimal | None = None,
    seed: int | None = None,
    selection: dict | None = None,
    user=None,
    batch_mode: bool = False,
    batch_retry: str = BatchRetry.BATCH,
) -> SamplingRun:
    """A draft run with all its responses, pending; `sampling_run_launch` starts it. In
    `batch_mode` its calls go through the providers' batch APIs (apps/llm/batches.py), which
    every model must have."""
    questions, models = list(questions), list(models)
    if not name.strip():
        raise RunError("Give the run a name.")
    if not questions:
        raise RunError("Choose at least one question.")
    if not models:
        raise RunError("Choose at least one model.")
    inactive = [m.display_name for m in models if not m.active]
    if inactive:
        raise RunError(f"These models are switched off: {', '.join(inactive)}.")
    if not 1 <= samples_per_item <= MAX_SAMPLES:
        raise RunError(f"Answers per question must be between 1 and {MAX_SAMPLES}.")
    if budget_usd is not None and budget_usd <= 0:
        raise RunError("A budget must be more than $0, or left empty for none.")
    refusal = batch_mode_refusal(batch_mode=batch_mode, batch_retry=batch_retry, models=models)
    if refusal:
        raise RunError(refusal)
    try:
        prompt = prompt or prompt_current(purpose=Purpose.SAMPLE)
    except PromptError as exc:
        raise RunError(str(exc)) from exc
    if prompt.purpose != Purpose.SAMPLE:
        raise RunError(f"{prompt} is not a prompt for sampling answers.")
    extra = {"seed": seed} if seed is not None else {}
    with transaction.atomic():
        run = SamplingRun.objects.create(
            name=name.strip(),
            prompt=prompt,
            samples_per_item=samples_per_item,
            params=params_check(params),
            budget_usd=budget_usd,
            selection=selection or {},
            created_by=user,
            batch_mode=batch_mode,
            batch_retry=batch_retry,
            **extra,
        )
        run.model_configs.set(models)
        run.questions.set(questions)
        rows = (
            Response(
                run=run,
                model=model,
                question=question,
                sample_index=index,
                seed=call_seed(run.seed, model.pk, question.pk, index),
            )
            for question in questions
            for model in models
            for index in range(samples_per_item)
        )
        Response.objects.bulk_create(rows, batch_size=CREATE_BATCH)
    return run


def sampling_run_launch(*, run: SamplingRun) -> SamplingRun:
    """Draft -> running; the engine starts on it when the caller's transaction commits."""
    return runs.run_launch(SAMPLE_WORK, run=run)


def sampling_run_pause(*, run: SamplingRun) -> SamplingRun:
    return runs.run_pause(SAMPLE_WORK, run=run)


def sampling_run_resume(*, run: SamplingRun) -> SamplingRun:
    return runs.run_resume(SAMPLE_WORK, run=run)


def sampling_run_cancel(*, run: SamplingRun) -> SamplingRun:
    return runs.run_cancel(SAMPLE_WORK, run=run)


def sampling_run_budget_set(*, run: SamplingRun, budget_usd: Decimal | None) -> SamplingRun:
    return runs.run_budget_set(SAMPLE_WORK, run=run, budget_usd=budget_usd)


def responses_retry(*, run: SamplingRun, error_kind: str = "") -> int:
    """Failed responses (all, or those that failed with `error_kind`) called again."""
    return runs.run_failed_retry(SAMPLE_WORK, run=run, error_kind=error_kind)


class SampleWork(runs.RunWork):
    """The engine's view of a benchmark run's responses."""

    name = "runs.sample"
    error = RunError
    model = Response
    states = LEASE_STATES
    estimate_fields = ("pk", "model_id", "question_id", "run__prompt_id")

    def rows(self, scope):
        return Response.objects.filter(run_id=scope)

    def runs(self):
        return SamplingRun.objects.filter(kind=RunKind.BENCHMARK)

    def estimate(self, rows):
        models = ModelConfig.objects.in_bulk({r["model_id"] for r in rows})
        prompts = PromptTemplate.objects.in_bulk({r["run__prompt_id"] for r in rows})
        chars = dict(
            Question.objects.filter(pk__in={r["question_id"] for r in rows})
            .annotate(n=Length("text"))
            .values_list("pk", "n")
        )
        prices = {pk: costs.price_per_mtok(m) for pk, m in models.items()}
        out = {
            pk: costs.typical_output_tokens(m, Purpose.SAMPLE, ceiling=True)
            for pk, m in models.items()
        }
        estimates = []
        for row in rows:
            prompt = prompts[row["run__prompt_id"]]
            tokens = costs.tokens_in(
                chars[row["question_id"]] + len(prompt.system_text) + len(prompt.user_text)
            )
            cost = costs.call_cost(
                prices[row["model_id"]], tokens_in=tokens, tokens_out=out[row["model_id"]]
            )
            estimates.append(cost or Decimal(0))
        return estimates

    def calls(self, ids):
        calls, refused = [], []
        responses = Response.objects.filter(pk__in=ids).select_related(
            "model", "question", "run__prompt"
        )
        for response in responses:
            try:
                messages = prompt_render(
                    template=response.run.prompt, variables={"question": response.question.text}
                )
            except PromptError as exc:
                refused.append((response.pk, str(exc)))
                continue
            calls.append(
                engine.Call(
                    row_id=response.pk,
                    model=response.model,
                    messages=messages,
                    purpose=Purpose.SAMPLE,
                    params={**response.run.params, "seed": response.seed},
                    prompt=response.run.prompt,
                )
            )
        return calls, refused

    def record(self, results, *, owner):
        with transaction.atomic():
            rows = []
            for result, row in self.recorded(results, mine=self.held_ids(results, owner=owner)):
                if (c := result.completion) is not None:
                    row.status, row.text = ResponseStatus.DONE, c.text
                    row.input_tokens, row.output_tokens = c.input_tokens, c.output_tokens
                    row.cost_usd, row.latency_ms = c.cost_usd, c.latency_ms
                rows.append(row)
            engine.rows_write(rows, RECORDED_FIELDS)


RECORDED_FIELDS = [
    "status",
    "text",
    "error",
    "error_kind",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_ms",
    "lease_owner",
    "lease_expires_at",
    "reserved_usd",
    "completed_at",
]

SAMPLE_WORK = engine.register(SampleWork())


# Every move a sampling run's page and the API make, by name (apps/llm/views.py run_control).
SAMPLING_RUN_CONTROLS = {
    "launch": sampling_run_launch,
    "pause": sampling_run_pause,
    "resume": sampling_run_resume,
    "cancel": sampling_run_cancel,
    "budget": sampling_run_budget_set,
    "retry": responses_retry,
}
