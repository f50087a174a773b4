"""The survey report's demo that `make run` loads: the 40 scenarios with responses from the
offline provider (PrivacyLens's prompt), rated by simulated people and by three offline proxy
models five times each. Its report must look like a real study's: people as diverse as the
published study's, each proxy consistent with itself, proxies moderately alike."""

import pytest

from apps.analysis.survey import survey_report
from apps.analysis.survey_data import PEOPLE, survey_data
from apps.demo import surveys as demo
from apps.llm.models import ModelConfig
from apps.surveys.models import (
    AssignmentStatus,
    Participant,
    ProxyCallStatus,
    ProxyRunStatus,
    Study,
    StudyStatus,
)
from tests.factories import api_base

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_models(settings, offline_provider_url):
    settings.OFFLINE_LLM_URL = api_base(offline_provider_url)
    for display_name in {*demo.PROXY_MODELS, demo.MODEL}:
        served_as = "offline-" + display_name.split()[1].lower()
        ModelConfig.objects.create(
            display_name=display_name, family="Offline demo", litellm_model=f"openai/{served_as}",
            api_base=settings.OFFLINE_LLM_URL, max_concurrent=16, input_price_per_mtok=0,
            output_price_per_mtok=0,
        )  # fmt: skip


def pooled(table, who):
    return next(r for r in table.rows if r["who"] == who and r["items"].startswith("Pooled"))


def test_the_demo_study_has_simulated_people_and_proxies_that_behave_like_the_papers(
    demo_models,
):
    summary = demo.demo_survey_report_load()

    study = Study.objects.get(slug=demo.REPORT_SLUG)
    assert study.status == StudyStatus.CLOSED
    assert summary.startswith("40 scenarios, 40 simulated people")
    people = Participant.objects.filter(study=study, kind="human")
    assert people.count() == 40 and not people.filter(simulated=False).exists()
    completed = study.study_scenarios.filter(assignments__status=AssignmentStatus.COMPLETED)
    assert completed.count() == 40 * 5
    run = study.proxy_runs.get()
    assert run.status == ProxyRunStatus.FINISHED
    assert run.calls.filter(status=ProxyCallStatus.DONE).count() == 3 * 5 * 40

    data = survey_data(study=study)
    report = survey_report(data)
    alpha = report.tables["alpha"]
    between = pooled(alpha, "Between people")["alpha"]
    assert 0.25 <= between <= 0.45, between  # the paper: 0.3573
    for proxy in data.proxies:
        within = pooled(alpha, f"Within {proxy.label}, across its runs")["alpha"]
        assert within >= 0.85, (proxy.label, within)  # the paper: 0.88 to 0.98
    across = pooled(alpha, "Across proxies")["alpha"]
    assert 0.55 <= across <= 0.85, across  # the paper: 0.777
    rhos = [r["rho"] for r in report.tables["rho"].rows if r["items"].startswith("privacy")]
    assert all(0.1 <= rho <= 0.9 for rho in rhos), rhos  # related, not copies
    assert report.simulated and data.group(PEOPLE).simulated

    assert demo.demo_survey_report_load().startswith("40 scenarios, its simulated people")
    assert people.count() == 40 and study.proxy_runs.count() == 1


def test_without_the_offline_provider_the_report_demo_says_so(demo_models, settings):
    settings.OFFLINE_LLM_URL = "http://127.0.0.1:9/v1"
    assert demo.demo_survey_report_load().startswith("skipped (the offline provider")
