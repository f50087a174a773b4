"""The answer-study demo: the model-run demo's answers in front of simulated people, three
offline proxies and a persona sweep, so that the answer-study report has data on first start.
The study records what generated its data (`StudySimulation`), and its report says so. Made
once; safe to run again.

The people are written at once; the proxy runs are launched and left to the worker that
`make run` starts (some thousands of calls at the offline provider's latency would hold up the
start by minutes): the report fills in as they finish, and the study's proxy runs page shows
how far they are."""

from decimal import Decimal

from apps.answer_studies.services import answer_study_create
from apps.grading.models import GradingRun
from apps.llm.models import ModelConfig
from apps.surveys.models import Study, StudyKind, StudySimulation, StudyStatus
from apps.surveys.services import (
    proxy_run_create,
    proxy_run_launch,
    proxy_sweep_create,
    study_set_status,
)

from .runs import provider_up
from .simulated_answer_people import simulated_answer_people_add
from .simulation import answer_study_simulation, provider_parameters, served_as

NAME = "Demo: people rate the benchmark's answers (simulated people, offline proxies)"
SEED = 30
ANSWERS_PER_STRATUM = 1
PAIRS_PER_MODEL_PAIR = 5
RATINGS_PER_UNIT = 5
UNITS_PER_PARTICIPANT = 6
PROXY_MODELS = ["Offline Terse (demo)", "Offline Thorough (demo)", "Offline Friendly (demo)"]
PROXY_RUNS = 5
PROXY_SEED = 11
# The sweep: variants of one proxy, to see whether any comes closer to people's spread.
SWEEP_MODEL = "Offline Thorough (demo)"
SWEEP_TEMPERATURES = [Decimal("0"), Decimal("0.7"), Decimal("1.4")]
SWEEP_RUNS = 3


def demo_answer_study_load(*, grading: GradingRun | None) -> str:
    """What happened, in words."""
    if grading is None:
        return "skipped (the model-run demo is not loaded)"
    models = list(ModelConfig.objects.filter(display_name__in=PROXY_MODELS))
    swept = ModelConfig.objects.filter(display_name=SWEEP_MODEL).first()
    if len(models) < len(PROXY_MODELS) or swept is None:
        return "skipped (the offline demo models are missing)"
    study = Study.objects.filter(kind=StudyKind.ANSWERS, name=NAME).first()
    if study is None:
        study = answer_study_create(
            name=NAME,
            sampling_run=grading.sampling_run,
            grading_run=grading,
            seed=SEED,
            answers_per_stratum=ANSWERS_PER_STRATUM,
            pairs_per_model_pair=PAIRS_PER_MODEL_PAIR,
            ratings_per_unit=RATINGS_PER_UNIT,
            units_per_participant=UNITS_PER_PARTICIPANT,
            code_completed="ANSWERSDONE",
            code_no_consent="ANSWERSNOCONSENT",
            code_failed_attention="ANSWERSATTENTION",
            code_full="ANSWERSFULL",
        )
    if study.status == StudyStatus.DRAFT:
        study = study_set_status(study=study, status=StudyStatus.LIVE)
    people = simulated_answer_people_add(study=study)
    if study.status == StudyStatus.LIVE:  # nobody real takes part in it
        study = study_set_status(study=study, status=StudyStatus.CLOSED)
    runs = list(study.proxy_runs.order_by("pk"))
    needs_proxies = not any(not run.is_sweep for run in runs)
    needs_sweep = not any(run.is_sweep for run in runs)
    unrecorded = not StudySimulation.objects.filter(study=study).exists()
    if (needs_proxies or needs_sweep or unrecorded) and not provider_up():
        return "skipped (the offline provider does not answer; run `make run`)"
    if needs_proxies:
        run = proxy_run_create(
            study=study, models=models, runs_per_model=PROXY_RUNS, seed=PROXY_SEED
        )
        proxy_run_launch(run=run)
    if needs_sweep:
        sweep = proxy_sweep_create(
            study=study,
            model=swept,
            temperatures=SWEEP_TEMPERATURES,
            personas=True,
            runs_per_variant=SWEEP_RUNS,
            seed=PROXY_SEED,
        )
        proxy_run_launch(run=sweep)
    if unrecorded and not _simulation_record(study, models, grading):
        return "incomplete (the offline provider did not report its parameters; run it again)"
    units = study.study_scenarios.count()
    started = " (launched: the worker answers them)" if needs_proxies or needs_sweep else ""
    return (
        f"{units} answers and pairs, {people or 'its'} simulated people, proxies: "
        f"{', '.join(PROXY_MODELS)} x {PROXY_RUNS}, and a sweep of {SWEEP_MODEL}{started}"
    )


def _simulation_record(study: Study, models: list[ModelConfig], grading: GradingRun) -> bool:
    proxies = {served_as(m.litellm_model): m.display_name for m in models}
    reported = provider_parameters(list(proxies))
    if reported is None:
        return False
    temperatures = ", ".join(str(t) for t in SWEEP_TEMPERATURES)
    record = answer_study_simulation(
        people=study.participants.filter(simulated=True).count(),
        proxies=proxies,
        runs=PROXY_RUNS,
        sweep=f"a sweep of {SWEEP_MODEL} (temperatures {temperatures}, {SWEEP_RUNS} runs "
        "each, and a persona for each simulated person)",
        answers_by=f"the grading run {grading.name}",
        reported=reported,
    )
    StudySimulation.objects.update_or_create(study=study, defaults={"record": record})
    return True
