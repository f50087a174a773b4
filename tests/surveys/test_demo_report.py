"""The survey report's demo that `make run` loads: the 40 scenarios with responses from the
offline provider, rated by simulated people and by three offline proxy models five times each.
An illustration: what is checked is what the demo is made to be (its counts, that it repeats
itself, that a proxy agrees with itself more than people agree with each other) and that it
says what made it, never how near it lands to a published figure."""

from collections import Counter

import httpx
import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.analysis.survey import survey_report
from apps.analysis.survey_data import PEOPLE, survey_data
from apps.demo import simulated_people
from apps.demo import surveys as demo
from apps.demo.simulated_people import PEOPLE_PARAMETERS, simulated_people_add
from apps.llm.models import ModelConfig, RunStatus
from apps.surveys.models import (
    Answer,
    AssignmentStatus,
    Participant,
    ParticipantKind,
    ProxyCallStatus,
    Study,
    StudySimulation,
    StudyStatus,
    SurveyItem,
)
from tests.factories import api_base

pytestmark = pytest.mark.django_db
OLD_NAME = "Demo: the published user study, reproduced (simulated people, offline proxies)"
SCENARIOS = 40
PER_SCENARIO = 5  # the study's ratings per scenario


@pytest.fixture
def demo_models(settings, offline_provider_url):
    settings.OFFLINE_LLM_URL = api_base(offline_provider_url)
    for display_name in {*demo.PROXY_MODELS, demo.MODEL}:
        served_as = "offline-" + display_name.split()[1].lower()
        ModelConfig.objects.create(
            display_name=display_name,
            family="Offline demo",
            litellm_model=f"openai/{served_as}",
            api_base=settings.OFFLINE_LLM_URL,
            max_concurrent=16,
            input_price_per_mtok=0,
            output_price_per_mtok=0,
        )


def pooled(table, who):
    return next(r for r in table.rows if r["who"] == who and r["items"].startswith("Pooled"))


def answers_of(study) -> dict[tuple, tuple[str, str]]:
    """Every answer of the study: (who, scenario, item) -> (value, explanation)."""
    rows = Answer.objects.filter(assignment__participant__study=study).values_list(
        "assignment__participant__prolific_pid",
        "assignment__participant__model__display_name",
        "assignment__participant__run_index",
        "assignment__study_scenario__scenario__name",
        "item__code",
        "value",
        "explanation",
    )
    return {(pid, model, run, name, code): (v, e) for pid, model, run, name, code, v, e in rows}


def test_the_demo_study_has_its_counts_its_people_repeat_and_proxies_agree_more_than_people(
    demo_models,
):
    summary = demo.demo_survey_report_load()

    study = Study.objects.get(slug=demo.REPORT_SLUG)
    assert study.status == StudyStatus.CLOSED
    per_person = simulated_people.PEOPLE["scenarios_per_person"]
    people = Participant.objects.filter(study=study, kind=ParticipantKind.HUMAN)
    assert people.count() == SCENARIOS * PER_SCENARIO // per_person == 40
    assert summary.startswith(f"{SCENARIOS} scenarios, {people.count()} simulated people")
    assert not people.filter(simulated=False).exists()
    done = {"assignments__status": AssignmentStatus.COMPLETED}
    # Every person rates `scenarios_per_person` scenarios; every scenario gets 5 people.
    assert set(Counter(people.filter(**done).values_list("pk", flat=True)).values()) == {per_person}
    by_scenario = Counter(
        people.filter(**done).values_list("assignments__study_scenario", flat=True)
    )
    assert len(by_scenario) == SCENARIOS and set(by_scenario.values()) == {PER_SCENARIO}
    # Three proxies x five runs, each answering every scenario once.
    run = study.proxy_runs.get()
    assert run.status == RunStatus.FINISHED
    proxies = Participant.objects.filter(study=study, kind=ParticipantKind.PROXY)
    assert sorted(proxies.values_list("model__display_name", "run_index")) == sorted(
        (model, index) for model in demo.PROXY_MODELS for index in range(1, demo.PROXY_RUNS + 1)
    )
    assert run.calls.filter(status=ProxyCallStatus.DONE).count() == 3 * 5 * SCENARIOS
    items = SurveyItem.objects.filter(study=study, attention_check=False).count()
    answers = Answer.objects.filter(assignment__participant__study=study)
    assert answers.filter(assignment__participant__kind=ParticipantKind.HUMAN).count() == (
        people.count() * per_person * items
    )
    assert answers.filter(assignment__participant__kind=ParticipantKind.PROXY).count() == (
        3 * 5 * SCENARIOS * items
    )

    # A proxy agrees with itself across its runs more than people agree with each other.
    data = survey_data(study=study)
    report = survey_report(data)
    alpha = report.tables["alpha"]
    between = pooled(alpha, "Between people")["alpha"]
    for proxy in data.proxies:
        within = pooled(alpha, f"Within {proxy.label}, across its runs")["alpha"]
        assert within > between, (proxy.label, within, between)
    assert report.simulated and data.group(PEOPLE).simulated

    # The simulated people, made again over the same responses, are the same people.
    made = {key: value for key, value in answers_of(study).items() if key[1] is None}
    assert len({key[0] for key in made}) == people.count()
    people.delete()
    assert simulated_people_add(study=study) == 40
    assert {key: value for key, value in answers_of(study).items() if key[1] is None} == made


def test_the_demo_study_records_what_made_it_its_report_says_so_and_a_reload_keeps_it(
    demo_models, role_client, offline_provider_url
):
    demo.demo_survey_report_load()

    study = Study.objects.get(slug=demo.REPORT_SLUG)
    parts = {part["what"]: part for part in study.simulation.record["parts"]}
    assert list(parts) == ["People", "Proxies", "Responses"]
    assert parts["People"]["parameters"] == [p._asdict() for p in PEOPLE_PARAMETERS]
    assert parts["People"]["how"].startswith("40 simulated people")
    # The proxies' parameters as the offline provider itself reports them.
    served = httpx.get(f"{offline_provider_url}/offline/parameters").json()
    proxy_parameters = parts["Proxies"]["parameters"]
    assert proxy_parameters[: len(served["survey_proxy"])] == served["survey_proxy"]
    leniency = {p["name"]: p["value"] for p in proxy_parameters[len(served["survey_proxy"]) :]}
    asked = httpx.get(
        f"{offline_provider_url}/offline/parameters",
        params=[("model", "offline-" + m.split()[1].lower()) for m in demo.PROXY_MODELS],
    ).json()["models"]
    assert leniency == {
        f"{shown}: proxy_leniency": model["proxy_leniency"]
        for shown, model in zip(demo.PROXY_MODELS, asked, strict=True)
    }
    assert demo.MODEL in parts["Responses"]["how"]

    html = role_client(Role.RESEARCHER).get(reverse("analysis:survey_report", args=[study.pk])).text
    start = html.index('data-testid="demo-notice"')
    notice = html[start : html.index("</section>", start)]
    assert "by construction of these parameters: it is not a finding" in notice
    for parameter in [*parts["People"]["parameters"], *proxy_parameters]:
        value = f'<td class="num">{parameter["value"]}</td>'
        assert f"<code>{parameter['name']}</code></th>{value}" in notice, parameter

    # Loaded again over what an older demo left (its old name, no record): nothing else changes.
    before = answers_of(study)
    record = study.simulation.record
    Study.objects.filter(pk=study.pk).update(name=OLD_NAME)
    StudySimulation.objects.filter(study=study).delete()
    summary = demo.demo_survey_report_load()
    study = Study.objects.get(pk=study.pk)
    assert study.name == demo.REPORT_NAME and "reproduc" not in study.name.lower()
    assert study.simulation.record == record
    assert summary.startswith(f"{SCENARIOS} scenarios, its simulated people")
    assert answers_of(study) == before
    assert study.proxy_runs.count() == 1


def test_without_the_offline_provider_the_report_demo_says_so(demo_models, settings):
    settings.OFFLINE_LLM_URL = "http://127.0.0.1:9/v1"
    assert demo.demo_survey_report_load().startswith("skipped (the offline provider")
