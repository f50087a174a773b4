"""The user-perception demo: the 40 PrivacyLens fixture scenarios in a live study.

Responses come from the offline demo model "Offline Thorough (demo)" through the gateway,
on the `llm` queue (the worker and the offline provider start right after `load_demo` in
`make run`; the study goes live as soon as every scenario has its response). Without that
model, the responses it once produced are imported from the bundled CSV instead, labelled
as offline demo output. Safe to run again: nothing is duplicated.
"""

import json
from pathlib import Path

from django.conf import settings

from apps.llm.models import ModelConfig
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import Scenario, Study, StudySimulation, StudyStatus
from apps.surveys.services import (
    PROXY_WORK,
    SCENARIO_RESPONSE_WORK,
    proxy_run_create,
    proxy_run_launch,
    response_import_csv,
    scenario_import_json,
    scenario_responses_request,
    study_create,
    study_set_status,
    study_update,
)

from .simulation import provider_parameters, served_as, study_simulation

FIXTURES = Path(settings.BASE_DIR) / "apps" / "surveys" / "fixtures"
SCENARIOS = FIXTURES / "privacylens-scenarios-40.json"
RESPONSES = FIXTURES / "demo-responses-40.csv"
SLUG = "demo"
MODEL = "Offline Thorough (demo)"
# Fixed so that the link printed by `make run` keeps working across restarts.
PARTICIPANT_QUERY = (
    "PROLIFIC_PID=5f0c0ffee0ddba11c0ffee01&STUDY_ID=5f0c0ffee0ddba11c0ffee02"
    "&SESSION_ID=5f0c0ffee0ddba11c0ffee03"
)


def demo_surveys_load() -> tuple[Study, str]:
    """(the demo study, what happened), creating whatever is missing."""
    data = SCENARIOS.read_bytes()
    scenario_import_json(text=data)
    study = Study.objects.filter(slug=SLUG).first()
    if study is None:
        study = study_create(
            slug=SLUG,
            name="Demo: privacy norms in assistant responses (PrivacyLens, 40)",
            scenarios=Scenario.objects.filter(name__in=[r["name"] for r in json.loads(data)]),
            code_completed="DEMODONE",
            code_no_consent="DEMONOCONSENT",
            code_failed_attention="DEMOATTENTION",
            code_full="DEMOFULL",
            **DEFAULT_TEXTS,
        )
    if study.status != StudyStatus.DRAFT:
        return study, f"study {study.status}"
    if study.study_scenarios.filter(response__isnull=True).exists():
        model = ModelConfig.objects.filter(display_name=MODEL).first()
        if model is not None:
            scenario_responses_request(study=study, model=model, go_live=True)
            return study, f"responses queued for {MODEL}; the study goes live when they are in"
        response_import_csv(text=RESPONSES.read_text(encoding="utf-8"), study=study)
    study_set_status(study=study, status=StudyStatus.LIVE)
    return study, "study live"


# --- the survey report's demo: simulated people and offline proxies -------------------------

REPORT_SLUG = "demo-report"
REPORT_NAME = "Demo: an illustration of the survey report (simulated people, offline proxies)"
PROXY_MODELS = ["Offline Terse (demo)", "Offline Thorough (demo)", "Offline Friendly (demo)"]
PROXY_RUNS = 5
PROXY_SEED = 7


def demo_survey_report_load() -> str:
    """A closed study over the 40 scenarios, each rated by five simulated people and by three
    offline proxy models five times each, so that the survey report has data on first start;
    the study records what generated them (`StudySimulation`), and its report says so.
    Made once; safe to run again, and an older demo's study gets the current name and its
    record."""
    from .runs import provider_up, work_until_settled
    from .simulated_people import simulated_people_add

    study = Study.objects.filter(slug=REPORT_SLUG).first()
    if study is None:
        data = SCENARIOS.read_bytes()
        scenario_import_json(text=data)
        names = [r["name"] for r in json.loads(data)]
        study = study_create(
            slug=REPORT_SLUG,
            name=REPORT_NAME,
            scenarios=Scenario.objects.filter(name__in=names),
            code_completed="REPORTDONE",
            code_no_consent="REPORTNOCONSENT",
            code_failed_attention="REPORTATTENTION",
            code_full="REPORTFULL",
            **DEFAULT_TEXTS,
        )
    elif study.name != REPORT_NAME:  # loaded by an older demo, under an older name
        study = study_update(study=study, name=REPORT_NAME)
    models = list(ModelConfig.objects.filter(display_name__in=PROXY_MODELS))
    writer = ModelConfig.objects.filter(display_name=MODEL).first()
    if len(models) < len(PROXY_MODELS) or writer is None:
        return "skipped (the offline demo models are missing)"
    waiting = study.study_scenarios.filter(response__isnull=True).exists()
    needs_proxies = not study.proxy_runs.exists()
    unrecorded = not StudySimulation.objects.filter(study=study).exists()
    if (waiting or needs_proxies or unrecorded) and not provider_up():
        return "skipped (the offline provider does not answer; run `make run`)"
    if waiting:
        generation, _to_enqueue = scenario_responses_request(study=study, model=writer)
        work_until_settled(SCENARIO_RESPONSE_WORK.name, generation.pk)
        if study.study_scenarios.filter(response__isnull=True).exists():
            return "incomplete (some scenarios got no response; run load_demo again)"
    if study.status == StudyStatus.DRAFT:
        study = study_set_status(study=study, status=StudyStatus.LIVE)
    people = simulated_people_add(study=study)
    if study.status == StudyStatus.LIVE:  # nobody real takes part in it
        study = study_set_status(study=study, status=StudyStatus.CLOSED)
    if needs_proxies:
        run = proxy_run_create(
            study=study, models=models, runs_per_model=PROXY_RUNS, seed=PROXY_SEED
        )
        proxy_run_launch(run=run)
        work_until_settled(PROXY_WORK.name, run.pk)
    if unrecorded and not _simulation_record(study, models, writer):
        return "incomplete (the offline provider did not report its parameters; run it again)"
    return (
        f"{study.study_scenarios.count()} scenarios, {people or 'its'} simulated people, "
        f"proxies: {', '.join(PROXY_MODELS)} x {PROXY_RUNS}"
    )


def _simulation_record(study: Study, models: list[ModelConfig], writer: ModelConfig) -> bool:
    """Record on the study what made its data; False when the provider does not say."""
    proxies = {served_as(m.litellm_model): m.display_name for m in models}
    reported = provider_parameters(list(proxies))
    if reported is None:
        return False
    record = study_simulation(
        people=study.participants.filter(simulated=True).count(),
        proxies=proxies,
        runs=PROXY_RUNS,
        writer=writer.display_name,
        reported=reported,
    )
    StudySimulation.objects.update_or_create(study=study, defaults={"record": record})
    return True
