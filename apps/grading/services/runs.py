"""Grading runs: an auto-rater grades a sampling run's answers, criterion by criterion.

A grading run may start before its sampling run ends: each batch first makes the rows for
answers finished since (`grading_rows_make`), against the question's approved rubric at
that moment, which its judgments then pin. A grader call already made with the same
grader, prompt version, parameters, answer and rubric version is copied, not paid for
again (`reused_from`), so regrading with a new prompt or grader never resamples and never
repeats a call it has made.
"""

from decimal import Decimal

from apps.llm import runs
from apps.llm.batches import batch_mode_refusal
from apps.llm.errors import PromptError
from apps.llm.models import BatchRetry, ModelConfig, PromptTemplate
from apps.llm.params import ParamsError, params_check
from apps.llm.selectors import prompt_current
from apps.runs.models import SamplingRun

from ..errors import GradingError
from ..models import GradingMode, GradingRun
from .rows import PURPOSE
from .work import work_for_run


def grading_run_create(
    *,
    sampling_run: SamplingRun,
    grader: ModelConfig,
    mode: str,
    name: str = "",
    prompt: PromptTemplate | None = None,
    params: dict | None = None,
    budget_usd: Decimal | None = None,
    user=None,
    batch_mode: bool = False,
    batch_retry: str = BatchRetry.BATCH,
) -> GradingRun:
    """A draft grading run. Temperature 0 unless `params` sets another (the published
    rater's setting); the prompt is the mode's newest version unless one is chosen. In
    `batch_mode` the grader's calls go through its provider's batch API
    (apps/llm/batches.py), which it must have."""
    if mode not in GradingMode.values:
        raise GradingError(f"Unknown grading mode {mode!r}: per_criterion or checklist.")
    if not grader.active:
        raise GradingError(f"The model {grader.display_name} is switched off.")
    if budget_usd is not None and budget_usd <= 0:
        raise GradingError("A budget must be more than $0, or left empty for none.")
    refusal = batch_mode_refusal(batch_mode=batch_mode, batch_retry=batch_retry, models=[grader])
    if refusal:
        raise GradingError(refusal)
    try:
        prompt = prompt or prompt_current(purpose=PURPOSE[mode])
    except PromptError as exc:
        raise GradingError(str(exc)) from exc
    if prompt.purpose != PURPOSE[mode]:
        raise GradingError(f"{prompt} is not a prompt for {GradingMode(mode).label.lower()}.")
    try:
        params = {"temperature": 0, **params_check(params)}
    except ParamsError as exc:
        raise GradingError(str(exc)) from None
    name = name.strip() or f"{sampling_run.name}: {grader.display_name}, {prompt}"
    return GradingRun.objects.create(
        name=name[:200],
        sampling_run=sampling_run,
        grader=grader,
        prompt=prompt,
        mode=mode,
        params=params,
        budget_usd=budget_usd,
        created_by=user,
        batch_mode=batch_mode,
        batch_retry=batch_retry,
    )


def grading_run_launch(*, run: GradingRun) -> GradingRun:
    """Draft -> running; the engine starts on it when the caller's transaction commits."""
    return runs.run_launch(work_for_run(run), run=run)


def grading_run_pause(*, run: GradingRun) -> GradingRun:
    return runs.run_pause(work_for_run(run), run=run)


def grading_run_resume(*, run: GradingRun) -> GradingRun:
    return runs.run_resume(work_for_run(run), run=run)


def grading_run_cancel(*, run: GradingRun) -> GradingRun:
    return runs.run_cancel(work_for_run(run), run=run)


def grading_run_budget_set(*, run: GradingRun, budget_usd: Decimal | None) -> GradingRun:
    return runs.run_budget_set(work_for_run(run), run=run, budget_usd=budget_usd)


def grading_errors_retry(*, run: GradingRun, error_kind: str = "") -> int:
    """Errored grader calls (all, or of one kind) called again; their error judgments go.
    How many calls."""
    return runs.run_failed_retry(work_for_run(run), run=run, error_kind=error_kind)


# Every move a grading run's page and the API make, by name (apps/llm/views.py run_control).
GRADING_RUN_CONTROLS = {
    "launch": grading_run_launch,
    "pause": grading_run_pause,
    "resume": grading_run_resume,
    "cancel": grading_run_cancel,
    "budget": grading_run_budget_set,
    "retry": grading_errors_retry,
}
