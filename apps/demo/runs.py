"""The model-run demo: a finished sampling run over the demo questions that have an approved
rubric, answered five times each by the three offline answerers, a checklist grading run
over it by the offline grader, and a calibration of that grading run against expert grades,
so that a newcomer sees every run, grading and calibration page with data.

The demo has no real experts: its expert grades are simulated, by two more offline graders
("Offline Expert A/B (demo)", switched off so that nobody picks them for a run) that judge a
little more strictly or leniently than the auto-rater, as two people would; the calibration
set's name says so. Disagreements are settled for the author's reading.

The calls are real: the offline provider that `make run` starts before `load_demo`, over
HTTP through the gateway, worked by the bulk engine in this process (about 300 calls, a few
seconds). Without the provider the demo says so and leaves the runs out. The grading run
records what made its answers, grades and expert grades (`GradingRun.simulation`: the
provider's parameters, as it reports them), and its benchmark report says so. Safe to run
again: a run already loaded is left as it is, but for a record an older demo did not make.
"""

import json

import httpx
from django.conf import settings

from apps.accounts.models import User
from apps.grading.models import CalibrationSet, GradingMode, GradingRun
from apps.grading.services import (
    CHECKLIST_SCHEMA,
    criteria_of,
    grading_run_create,
    grading_run_launch,
    work_for_run,
)
from apps.grading.services.calibration import (
    calibration_create,
    calibration_set_create,
    disagreement_resolve,
    expert_grade_save,
)
from apps.llm import engine, gateway
from apps.llm.models import ModelConfig, Purpose, RunStatus
from apps.llm.selectors import prompt_current, prompt_render
from apps.rubrics.models import Rubric
from apps.runs.models import RunKind, SamplingRun
from apps.runs.selection import questions_select
from apps.runs.services import SAMPLE_WORK, sampling_run_create, sampling_run_launch

from .simulation import (
    grading_simulation,
    provider_parameters,
    provider_rubrics_register,
    served_as,
)

SAMPLING_RUN = "Demo: offline answerers on the approved questions"
GRADING_RUN = "Demo: offline grader, checklist"
ANSWERERS = ["Offline Terse (demo)", "Offline Thorough (demo)", "Offline Friendly (demo)"]
GRADER = "Offline Grader (demo)"
CALIBRATION_SET = "Demo: calibration (expert grades simulated by offline models)"
SIMULATED_EXPERTS = {"first": "Offline Expert A (demo)", "second": "Offline Expert B (demo)"}
SEED = 20261201
MAX_BATCHES = 200


def work_until_settled(work: str, scope: int) -> None:
    """Batch after batch in this process, as the workers' chains would, until nothing is
    left to call (a grading run waits for nothing here: its answers are all in)."""
    for _ in range(MAX_BATCHES):
        outcome = engine.batch_run(work=work, scope=scope)
        if outcome.again_in is None or (not outcome.claimed and outcome.again_in > 0):
            return


def provider_up() -> bool:
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
    # Every time, so that a provider started anew knows them for the runs people launch.
    rubrics_register()
    if run is not None and grading is not None:
        if grading.simulation:
            return "already loaded", run, grading
        recorded = _simulation_record(grading, models)
        return f"already loaded; {recorded}", run, grading
    if not provider_up():
        return f"skipped (no offline provider answers at {settings.OFFLINE_LLM_URL})", None, None
    if run is None:
        questions = questions_select(conditions=["approved_rubric"])
        run = sampling_run_create(
            name=SAMPLING_RUN,
            questions=questions,
            models=models,
            samples_per_item=5,
            seed=SEED,
            selection={"conditions": ["approved_rubric"]},
            user=researcher,
        )
        sampling_run_launch(run=run)
    work_until_settled(SAMPLE_WORK.name, run.pk)
    run.refresh_from_db()
    if grading is None:
        grading = grading_run_create(
            sampling_run=run,
            grader=grader,
            mode=GradingMode.CHECKLIST,
            name=GRADING_RUN,
            user=researcher,
        )
        grading_run_launch(run=grading)
    work_until_settled(work_for_run(grading).name, grading.pk)
    grading.refresh_from_db()
    done = run.responses.filter(status="done").count()
    state = "finished" if grading.status == RunStatus.FINISHED else grading.get_status_display()
    calibrated = demo_calibration_load(run=run, grading=grading, researcher=researcher)
    recorded = _simulation_record(grading, models)
    return (
        f"{done} answers sampled, graded by the offline grader ({state}); {calibrated}; {recorded}",
        run,
        grading,
    )


def rubrics_register() -> int | None:
    """Tell the offline provider each demo question's rubric (its latest version's criteria),
    so that the offline models' answers to it address, miss or violate them; how many it
    took, None when it did not answer."""
    rubrics = []
    latest = Rubric.objects.order_by("question_id", "-version").distinct("question_id")
    for rubric in latest.select_related("question").prefetch_related("criteria"):
        criteria = [
            {"text": c.text, "polarity": c.polarity, "kind": c.kind, "points": c.points}
            for c in rubric.criteria.all()
        ]
        rubrics.append({"question": rubric.question.text, "criteria": criteria})
    return provider_rubrics_register(rubrics) if rubrics else 0


def _simulation_record(grading: GradingRun, answerers: list[ModelConfig]) -> str:
    """Record on the grading run what made its answers, grades and simulated expert grades,
    as the offline provider reports it; what happened, in words."""
    experts = ModelConfig.objects.filter(display_name__in=SIMULATED_EXPERTS.values())
    names = {
        "answerers": {served_as(m.litellm_model): m.display_name for m in answerers},
        "experts": {served_as(m.litellm_model): m.display_name for m in experts},
    }
    grader = (served_as(grading.grader.litellm_model), grading.grader.display_name)
    reported = provider_parameters([*names["answerers"], grader[0], *names["experts"]])
    if reported is None:
        return "its provenance is not recorded (the offline provider did not report it)"
    grading.simulation = grading_simulation(
        answerers=names["answerers"], grader=grader, experts=names["experts"], reported=reported
    )
    grading.save(update_fields=["simulation"])
    return "its provenance recorded"


def _simulated_expert(name: str, like: ModelConfig) -> ModelConfig:
    served_as = "offline-" + name.split("(")[0].strip().lower().replace(" ", "-")
    model, _created = ModelConfig.objects.update_or_create(
        display_name=name,
        defaults={
            "family": "Offline demo",
            "version": "1",
            "active": False,
            "litellm_model": f"openai/{served_as}",
            "api_base": like.api_base,
            "max_concurrent": 4,
            "timeout_seconds": 30,
        },
    )
    return model


def _simulated_labels(model: ModelConfig, sample, criteria) -> dict[int, bool]:
    """A simulated expert's label for each criterion: a checklist graded by an offline
    model, as the auto-rater grades, but by a grader of its own."""
    items = [
        {"id": n, "text": c.text, "polarity": c.polarity, "kind": c.kind}
        for n, c in enumerate(criteria, 1)
    ]
    messages = prompt_render(
        template=prompt_current(purpose=Purpose.GRADE_CHECKLIST),
        variables={
            "question": sample.question.text,
            "response": sample.response.text,
            "criteria": json.dumps(items, ensure_ascii=False),
        },
    )
    completion = gateway.complete(
        model=model,
        messages=messages,
        purpose=Purpose.GRADE_CHECKLIST,
        schema=CHECKLIST_SCHEMA,
        params={"temperature": 0},
        caller=f"demo-expert:{sample.pk}",
    )
    verdicts = {v["id"]: v["met"] for v in completion.data["verdicts"]}
    return {c.pk: verdicts[n] for n, c in enumerate(criteria, 1) if n in verdicts}


def demo_calibration_load(*, run: SamplingRun, grading: GradingRun, researcher) -> str:
    if CalibrationSet.objects.filter(name=CALIBRATION_SET).exists():
        return "calibration already loaded"
    grader = grading.grader
    experts = {turn: _simulated_expert(name, grader) for turn, name in SIMULATED_EXPERTS.items()}
    calibration_set = calibration_set_create(
        sampling_run=run,
        models=run.model_configs.filter(display_name__in=ANSWERERS),
        second_grader=researcher,
        user=researcher,
        name=CALIBRATION_SET,
        seed=SEED,
    )
    samples = calibration_set.samples.select_related("question", "response", "author")
    criteria = criteria_of(s.rubric_id for s in samples)
    for sample in samples:
        listed = criteria[sample.rubric_id]
        for turn, grader_user in (("first", sample.author), ("second", researcher)):
            labels = _simulated_labels(experts[turn], sample, listed)
            expert_grade_save(sample=sample, user=grader_user, labels=labels)
        for judgment in sample.judgments.filter(final_met__isnull=True):
            disagreement_resolve(
                sample=sample,
                user=sample.author,
                criterion_id=judgment.criterion_id,
                final_met=judgment.first_met,
                note="Demo: settled for the author's reading.",
            )
    calibration_create(calibration_set=calibration_set, grading_run=grading, user=researcher)
    return f"{samples.count()} answers calibrated against simulated expert grades"
