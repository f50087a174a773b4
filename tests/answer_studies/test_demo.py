"""The answer-study demo that `make run` loads: a graded run's answers in front of simulated
people, three offline proxies and a persona sweep of one. An illustration: what is checked is
what the demo is made to be (exactly k ratings a unit, the proxies and the sweep's variants,
that it repeats itself and says what made it), never how near it lands to a published figure."""

from collections import Counter

import pytest

from apps.analysis.answer_study import answer_study_report
from apps.analysis.answer_study_data import answer_study_data
from apps.demo import answer_studies as demo
from apps.demo.runs import work_until_settled
from apps.demo.simulated_answer_people import (
    ANSWER_PEOPLE_PARAMETERS,
    simulated_answer_people_add,
)
from apps.llm.models import ModelConfig, RunStatus
from apps.surveys.models import (
    Answer,
    AssignmentStatus,
    Participant,
    ParticipantKind,
    ProxyCallStatus,
    Study,
    StudyKind,
    StudyStatus,
    UnitKind,
)
from apps.surveys.services import PROXY_WORK
from tests.answer_studies.factories import bench_for_draw
from tests.factories import api_base

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_demo(settings, offline_provider_url, monkeypatch):
    """The demo's models at the offline provider, and its sizes cut to the small bench."""
    settings.OFFLINE_LLM_URL = api_base(offline_provider_url)
    for display_name in demo.PROXY_MODELS:
        ModelConfig.objects.create(
            display_name=display_name,
            family="Offline demo",
            litellm_model=f"openai/offline-{display_name.split()[1].lower()}",
            api_base=settings.OFFLINE_LLM_URL,
            max_concurrent=16,
            input_price_per_mtok=0,
            output_price_per_mtok=0,
        )
    monkeypatch.setattr(demo, "PAIRS_PER_MODEL_PAIR", 2)
    monkeypatch.setattr(demo, "RATINGS_PER_UNIT", 3)
    monkeypatch.setattr(demo, "PROXY_RUNS", 2)
    monkeypatch.setattr(demo, "SWEEP_RUNS", 1)
    return bench_for_draw(left_out=False)


def answers_of(study) -> dict:
    rows = Answer.objects.filter(
        assignment__participant__study=study, assignment__participant__simulated=True
    ).values_list(
        "assignment__participant__prolific_pid",
        "assignment__study_scenario_id",
        "item__code",
        "value",
        "explanation",
    )
    return {(pid, unit, code): (value, text) for pid, unit, code, value, text in rows}


def test_the_demo_answer_study_has_exactly_k_people_a_unit_its_proxies_and_a_persona_sweep(
    small_demo,
):
    summary = demo.demo_answer_study_load(grading=small_demo.grading)
    study = Study.objects.get(kind=StudyKind.ANSWERS, name=demo.NAME)
    # Launched by the loader, answered by the worker in `make run`; here, in this process.
    for run in study.proxy_runs.all():
        assert run.status == RunStatus.RUNNING
        work_until_settled(PROXY_WORK.name, run.pk)

    assert study.status == StudyStatus.CLOSED
    units = study.study_scenarios.all()
    assert {unit.kind for unit in units} == {UnitKind.ANSWER, UnitKind.PAIR}
    people = Participant.objects.filter(study=study, kind=ParticipantKind.HUMAN)
    assert people.exists() and not people.filter(simulated=False).exists()
    rated = Counter(
        people.filter(assignments__status=AssignmentStatus.COMPLETED).values_list(
            "assignments__study_scenario", flat=True
        )
    )
    assert set(rated) == {unit.pk for unit in units} and set(rated.values()) == {3}
    assert summary.startswith(f"{units.count()} answers and pairs, {people.count()} simulated")
    assert summary.endswith("(launched: the worker answers them)")

    plain, sweep = study.proxy_runs.order_by("pk")
    assert not plain.is_sweep and sweep.is_sweep
    for run in (plain, sweep):
        assert run.status == RunStatus.FINISHED
        assert not run.calls.exclude(status=ProxyCallStatus.DONE).exists()
    variants = Counter(sweep.participants.values_list("variant", flat=True))
    assert variants == {
        **{f"temperature {t.normalize()}": 1 for t in demo.SWEEP_TEMPERATURES},
        "persona": people.count(),
    }
    personas = sweep.participants.filter(variant="persona")
    assert set(personas.values_list("persona_of", flat=True)) == set(
        people.values_list("pk", flat=True)
    )

    # The report shows people, rubric and rater side by side, and each variant as a proxy.
    report = answer_study_report(answer_study_data(study=study))
    assert report.simulated and report.offline
    assert report.pairs == units.filter(kind=UnitKind.PAIR).count()
    sweep_rows = report.tables["sweep"].rows
    assert len(sweep_rows) >= len(demo.SWEEP_TEMPERATURES) + 1

    # What made the data is recorded on the study.
    parts = {part["what"]: part for part in study.simulation.record["parts"]}
    assert list(parts) == ["People", "Proxies", "Answers"]
    assert parts["People"]["parameters"] == [p._asdict() for p in ANSWER_PEOPLE_PARAMETERS]

    # Loaded again: nothing is added; made again over the same draw: the same people.
    calls = sum(run.calls.count() for run in (plain, sweep))
    made = answers_of(study)
    demo.demo_answer_study_load(grading=small_demo.grading)
    assert Study.objects.filter(kind=StudyKind.ANSWERS).count() == 1
    assert sum(run.calls.count() for run in study.proxy_runs.all()) == calls
    Participant.objects.filter(pk__in=personas.values("pk")).delete()
    people.delete()
    assert simulated_answer_people_add(study=study) == len({key[0] for key in made})
    assert answers_of(study) == made
