"""The model-run demo: a finished sampling run over the demo questions that have an approved
rubric, answered five times each by the three offline answerers, and a checklist grading
run over it by the offline grader, so that a newcomer sees every run page with data.

The calls are real: the offline provider that `make run` starts before `load_demo`, over
HTTP through the gateway, worked by the bulk engine in this process (about 300 calls, a few
seconds). Without the provider the demo says so and leaves the runs out. Safe to run again:
a run already loaded is left as it is.
"""

import httpx
from django.conf import settings

from apps.accounts.models import User
from apps.grading.models import GradingMode, GradingRun
from apps.grading.services import grading_run_create, grading_run_launch, work_for_run
from apps.llm import engine
from apps.llm.models import ModelConfig
from apps.runs.models import RunKind, RunStatus, SamplingRun
from apps.runs.selection import questions_select
from apps.runs.services import SAMPLE_WORK, sampling_run_create, sampling_run_launch

SAMPLING_RUN = "Demo: offline answerers on the approved questions"
GRADING_RUN = "Demo: offline grader, checklist"
ANSWERERS = ["Offline Terse (demo)", "Offline Thorough (demo)", "Offline Friendly (demo)"]
GRADER = "Offline Grader (demo)"
SEED = 20261201
MAX_BATCHES = 200


def _work_until_settled(work: str, scope: int) -> None:
    """Batch after batch in this process, as the workers' chains would, until nothing is
    left to call (a grading run waits for nothing here: its answers are all in)."""
    for _ in range(MAX_BATCHES):
        outcome = engine.batch_run(work=work, scope=scope)
        if outcome.again_in is None or (not outcome.claimed and outcome.again_in > 0):
            return


def _provider_up() -> bool:
    try:
        return httpx.get(settings.OFFLINE_LLM_URL.rstrip("/") + "/models", timeout=3).is_success
    except httpx.HTTPError:
        return False


def demo_runs_load() -> tuple[str, SamplingRun | None, GradingRun | None]:
    """(summary, the sampling run, the grading run), made if missing."""
    researcher = User.objects.filter(username="researcher").first()
    models = list(ModelConfig.objects.filter(display_name__in=ANSWERERS))
    grader = ModelConfig.objects.filter(display_name=GRADER).first()
    if researcher is None or len(models) < len(ANSWERERS) or grader is None:
        return "skipped (the demo users or models are missing)", None, None
    run = SamplingRun.objects.filter(kind=RunKind.BENCHMARK, name=SAMPLING_RUN).first()
    grading = GradingRun.objects.filter(name=GRADING_RUN).first()
    if run is not None and grading is not None:
        return "already loaded", run, grading
    if not _provider_up():
        return f"skipped (no offline provider answers at {settings.OFFLINE_LLM_URL})", None, None
    if run is None:
        questions = questions_select(conditions=["approved_rubric"])
        run = sampling_run_create(
            name=SAMPLING_RUN, questions=questions, models=models, samples_per_item=5,
            seed=SEED, selection={"conditions": ["approved_rubric"]}, user=researcher,
        )  # fmt: skip
        sampling_run_launch(run=run)
    _work_until_settled(SAMPLE_WORK.name, run.pk)
    run.refresh_from_db()
    if grading is None:
        grading = grading_run_create(
            sampling_run=run, grader=grader, mode=GradingMode.CHECKLIST, name=GRADING_RUN,
            user=researcher,
        )  # fmt: skip
        grading_run_launch(run=grading)
    _work_until_settled(work_for_run(grading).name, grading.pk)
    grading.refresh_from_db()
    done = run.responses.filter(status="done").count()
    state = "finished" if grading.status == RunStatus.FINISHED else grading.get_status_display()
    return (
        f"{done} answers sampled, graded by the offline grader ({state})",
        run,
        grading,
    )
