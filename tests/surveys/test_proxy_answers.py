"""Proxies on answer studies and proxy sweeps, against the offline provider over real HTTP:
what each call sends is read where it leaves, at the HTTP boundary (`recording_provider`)."""

from decimal import Decimal
from importlib import import_module

import pytest
from django.utils import timezone

from apps.llm import engine
from apps.llm.models import PromptTemplate, Purpose, RunStatus
from apps.surveys import selectors, services
from apps.surveys.errors import SurveyError
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import (
    PAIR_CHOICES,
    Answer,
    Assignment,
    AssignmentStatus,
    ItemKind,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    ProxyCall,
    Study,
    StudyKind,
    StudyScenario,
    SurveyItem,
    UnitKind,
)
from apps.surveys.services.proxies import answers_check, persona_text, proxy_items
from tests.factories import CODES, offline_model

pytestmark = pytest.mark.django_db

QUESTION = "Someone keeps trying to log in to my email from abroad. What should I do first?"
ANSWER = "Change your password at once, then turn on two-step verification in the settings."
ANSWER_B = "Check the sign-in history, sign out every other session and report the attempts."
HELPFUL = ["Not helpful at all", "A little", "Moderately", "Very", "Extremely helpful"]


def work_all(run):
    services.proxy_run_launch(run=run)
    while True:
        outcome = engine.batch_run(work=services.PROXY_WORK.name, scope=run.pk)
        if outcome.again_in is None or not outcome.claimed:
            return


def answer_study(*, answers: int = 2, pairs: int = 1) -> Study:
    """An answer study with `answers` answer units and `pairs` pair units, a scale and a
    yes/no item asked of answers and a pair item asked of pairs."""
    study = Study.objects.create(name="Answers", kind=StudyKind.ANSWERS, **DEFAULT_TEXTS, **CODES)
    for n in range(1, answers + 1):
        StudyScenario.objects.create(
            study=study,
            kind=UnitKind.ANSWER,
            label=f"Answer {n:03}",
            question_text=f"{QUESTION} ({n})",
            answer_text=ANSWER,
        )
    for n in range(1, pairs + 1):
        StudyScenario.objects.create(
            study=study,
            kind=UnitKind.PAIR,
            label=f"Pair {n:03}",
            question_text=f"{QUESTION} (pair {n})",
            answer_text=ANSWER,
            answer_b_text=ANSWER_B,
        )
    SurveyItem.objects.bulk_create(
        [
            SurveyItem(
                study=study,
                code="A1",
                wording="How helpful is this answer for the person who asked?",
                kind=ItemKind.SCALE,
                scale_labels=HELPFUL,
                unit_kind=UnitKind.ANSWER,
                order=1,
            ),
            SurveyItem(
                study=study,
                code="A2",
                wording="Would you use this answer yourself?",
                kind=ItemKind.YES_NO,
                explanation_required=False,
                unit_kind=UnitKind.ANSWER,
                order=2,
            ),
            SurveyItem(
                study=study,
                code="PR",
                wording="Which answer helps the person who asked more?",
                kind=ItemKind.PAIR,
                unit_kind=UnitKind.PAIR,
                order=3,
            ),
        ]
    )
    return study


def prompt_of(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"])


def by_seed(requests) -> dict[int, dict]:
    return {body["seed"]: body for body in requests}


def test_proxies_answer_an_answer_studys_answers_and_pairs_as_people_see_them(
    recording_provider,
):
    base_url, requests = recording_provider
    model = offline_model(base_url, name="offline-terse")
    study = answer_study()

    run = services.proxy_run_create(study=study, models=[model], runs_per_model=2, seed=5)
    work_all(run)

    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and run.prompt.version == 3
    assert len(requests) == 2 * 3
    sent = by_seed(requests)
    pair_keys = {key for key, _label in PAIR_CHOICES}
    for call in ProxyCall.objects.filter(run=run).select_related("study_scenario"):
        unit, text = call.study_scenario, prompt_of(sent[call.seed])
        assert unit.question_text in text and unit.answer_text in text
        assert "scenario" not in text.lower()
        if unit.kind == UnitKind.PAIR:
            assert "Answer A:" in text and "Answer B:" in text and ANSWER_B in text
            assert "(a) Answer A\n(b) Answer B\n(equal) They help about the same" in text
            assert "A1." not in text and "A2." not in text
        else:
            assert "The answer:" in text and ANSWER_B not in text
            assert "A1. How helpful" in text and "A2. Would you use" in text
            assert "PR." not in text
    # Recorded as people's answers are: each unit's own items, pair answers among a/b/equal.
    answers = Answer.objects.filter(assignment__participant__proxy_run=run)
    assert set(answers.values_list("assignment__status", flat=True)) == {AssignmentStatus.PROXY}
    pairs = answers.filter(assignment__study_scenario__kind=UnitKind.PAIR)
    assert sorted(pairs.values_list("item__code", flat=True)) == ["PR", "PR"]
    assert set(pairs.values_list("value", flat=True)) <= pair_keys
    assert all(a.explanation.strip() for a in pairs)
    singles = answers.filter(assignment__study_scenario__kind=UnitKind.ANSWER)
    assert sorted(set(singles.values_list("item__code", flat=True))) == ["A1", "A2"]
    assert singles.count() == 2 * 2 * 2


def test_a_pair_answer_must_be_a_b_or_equal():
    study = answer_study(answers=0)
    check = answers_check(proxy_items(study=study, unit_kind=UnitKind.PAIR))
    for value in ("a", "B", "equal"):
        assert check({"answers": [{"code": "PR", "value": value, "explanation": "x"}]}) is None
    problem = check({"answers": [{"code": "PR", "value": "both", "explanation": "x"}]})
    assert problem == 'PR must be "a", "b" or "equal"'


def test_the_answer_prompt_is_seeded_as_the_product_knows_it_and_is_the_survey_alone():
    migration = import_module("apps.llm.migrations.0013_survey_proxy_answers_prompt")
    seeded = PromptTemplate.objects.get(purpose=Purpose.SURVEY_PROXY, version=3)

    assert selectors.PROXY_ANSWERS_USER_TEXT == migration.USER_TEXT == seeded.user_text
    assert seeded.system_text == "" and "scenario" not in seeded.user_text.lower()
    assert selectors.proxy_prompt_departures(prompt=seeded) == []
    assert selectors.proxy_prompt_default(kind=StudyKind.ANSWERS) == seeded
    assert selectors.proxy_prompt_default(kind=StudyKind.SCENARIOS).version == 2


def test_an_answer_study_refuses_a_scenario_prompt_and_a_study_with_no_units(offline_provider_url):
    model = offline_model(offline_provider_url)
    published = PromptTemplate.objects.get(purpose=Purpose.SURVEY_PROXY, version=2)
    with pytest.raises(SurveyError, match="survey_proxy v2 asks about another kind of unit"):
        services.proxy_run_create(study=answer_study(), models=[model], prompt=published)
    with pytest.raises(SurveyError, match="no answers or pairs to rate"):
        services.proxy_run_create(study=answer_study(answers=0, pairs=0), models=[model])
    no_pair_items = answer_study()
    no_pair_items.items.filter(unit_kind=UnitKind.PAIR).delete()
    with pytest.raises(SurveyError, match="asks nothing of its units of kind"):
        services.proxy_run_create(study=no_pair_items, models=[model])


def test_the_estimate_counts_the_answers_text(offline_provider_url):
    model = offline_model(offline_provider_url)
    short, long = answer_study(), answer_study()
    long.study_scenarios.update(answer_text=ANSWER * 40)

    cheap = services.proxy_estimate(study=short, models=[model], runs_per_model=1)
    dear = services.proxy_estimate(study=long, models=[model], runs_per_model=1)

    assert cheap["calls"] == dear["calls"] == 3
    assert dear["cost_usd"] > cheap["cost_usd"] > 0
    run = services.proxy_run_create(study=long, models=[model], runs_per_model=1)
    rows = list(ProxyCall.objects.filter(run=run).values(*services.PROXY_WORK.estimate_fields))
    short_run = services.proxy_run_create(study=short, models=[model], runs_per_model=1)
    short_rows = ProxyCall.objects.filter(run=short_run).values(
        *services.PROXY_WORK.estimate_fields
    )
    assert sum(services.PROXY_WORK.estimate(rows)) > sum(
        services.PROXY_WORK.estimate(list(short_rows))
    )


# --- sweeps -------------------------------------------------------------------------------


TOKEN = "zq-unique-explanation-7731"


def finished_person(study, pid: str, **demographics) -> Participant:
    """A person who finished `study`, with `demographics`, who rated its first unit with an
    explanation holding TOKEN and answered every item with its last choice."""
    person = Participant.objects.create(
        study=study,
        prolific_pid=pid,
        status=ParticipantStatus.FINISHED,
        finished_at=timezone.now(),
        **demographics,
    )
    now = timezone.now()
    unit = study.study_scenarios.order_by("pk").first()
    assignment = Assignment.objects.create(
        participant=person,
        study_scenario=unit,
        position=1,
        status=AssignmentStatus.COMPLETED,
        reserved_at=now,
        reserved_until=now,
        completed_at=now,
    )
    Answer.objects.bulk_create(
        Answer(
            assignment=assignment,
            item=item,
            value=item.choices[-1][0],
            explanation=f"{TOKEN} {pid}",
            first_saved_at=now,
            saved_at=now,
        )
        for item in study.items.all()
    )
    return person


def test_a_sweep_makes_a_proxy_per_run_of_each_temperature_and_a_persona_per_person(
    make_study, offline_provider_url
):
    model = offline_model(offline_provider_url)
    study = make_study(live=False, count=2)
    woman = finished_person(study, "p1", age="25-34", gender="woman", education="bachelor")
    finished_person(study, "p2", age="no_say", gender="no_say")
    Participant.objects.create(study=study, prolific_pid="p3")  # still taking part
    services.proxy_run_create(study=study, models=[model], runs_per_model=2)  # indexes 1-2

    run = services.proxy_sweep_create(
        study=study,
        model=model,
        temperatures=[Decimal("0"), Decimal("0.7"), Decimal("1.50")],
        personas=True,
        runs_per_variant=2,
    )

    assert run.is_sweep and run.status == RunStatus.DRAFT
    assert run.sweep_temperatures == ["0", "0.7", "1.5"] and run.sweep_personas
    assert list(run.model_configs.all()) == [model]
    proxies = list(run.participants.order_by("run_index"))
    assert [(p.variant, p.temperature, p.run_index) for p in proxies] == [
        ("temperature 0", Decimal("0"), 3),
        ("temperature 0", Decimal("0"), 4),
        ("temperature 0.7", Decimal("0.7"), 5),
        ("temperature 0.7", Decimal("0.7"), 6),
        ("temperature 1.5", Decimal("1.5"), 7),
        ("temperature 1.5", Decimal("1.5"), 8),
        ("persona", None, 9),
        ("persona", None, 10),
    ]
    assert all(p.kind == ParticipantKind.PROXY and p.model == model for p in proxies)
    persona = proxies[6]
    assert persona.persona_of == woman
    assert (persona.age, persona.gender, persona.education, persona.income) == (
        "25-34",
        "woman",
        "bachelor",
        "",
    )
    assert ProxyCall.objects.filter(run=run).count() == 8 * 2
    assert [
        (v.label, v.participants, v.calls) for v in selectors.proxy_sweep_variants(run=run)
    ] == [
        ("temperature 0", 2, 4),
        ("temperature 0.7", 2, 4),
        ("temperature 1.5", 2, 4),
        ("persona", 2, 4),
    ]


def test_a_sweep_refuses_what_cannot_be_made(make_study, offline_provider_url):
    model = offline_model(offline_provider_url)
    study = make_study(live=False, count=1)

    def sweep(**arguments):
        return services.proxy_sweep_create(
            **{"study": study, "model": model, "runs_per_variant": 1, **arguments}
        )

    with pytest.raises(SurveyError, match="at least one variant"):
        sweep(temperatures=[], personas=False)
    with pytest.raises(SurveyError, match=r"between 0 and 2: 2\.5 is not"):
        sweep(temperatures=[Decimal("2.5")], personas=False)
    with pytest.raises(SurveyError, match="listed twice"):
        sweep(temperatures=[Decimal("1"), Decimal("1.0")], personas=False)
    with pytest.raises(SurveyError, match="No one has finished the study yet"):
        sweep(temperatures=[Decimal("1")], personas=True)
    assert not study.proxy_runs.exists()


def test_each_call_is_sent_at_its_variants_temperature(make_study, recording_provider):
    base_url, requests = recording_provider
    model = offline_model(base_url, name="offline-thorough")
    study = make_study(live=False, count=2)
    finished_person(study, "p1", age="35-44", gender="man")

    run = services.proxy_sweep_create(
        study=study,
        model=model,
        temperatures=[Decimal("0.2"), Decimal("1.3")],
        personas=True,
        runs_per_variant=1,
        persona_temperature=Decimal("0.9"),
    )
    work_all(run)

    assert len(requests) == 3 * 2
    sent = by_seed(requests)
    wanted = {"temperature 0.2": 0.2, "temperature 1.3": 1.3, "persona": 0.9}
    for call in ProxyCall.objects.filter(run=run).select_related("participant"):
        assert sent[call.seed]["temperature"] == wanted[call.participant.variant]
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED


def test_a_persona_proxy_is_told_its_demographics_and_never_sees_the_persons_answers(
    make_study, recording_provider
):
    base_url, requests = recording_provider
    model = offline_model(base_url)
    study = make_study(live=False, count=2)
    finished_person(study, "p1", age="25-34", gender="woman", education="bachelor", income="50-75k")
    finished_person(study, "p2", age="65+", gender="no_say", education="no_say", income="<25k")

    run = services.proxy_sweep_create(
        study=study, model=model, temperatures=[], personas=True, runs_per_variant=1
    )
    work_all(run)

    assert len(requests) == 2 * 2
    told = {
        "You are taking part in this survey as a woman aged 25-34, with a bachelor's degree "
        "and a household income of $50,000-$74,999.",
        "You are taking part in this survey as a person aged 65 or older, with a household "
        "income of less than $25,000.",
    }
    for body in requests:
        text = prompt_of(body)
        assert TOKEN not in text
        system, user = body["messages"]
        assert system["role"] == "system" and system["content"] in told
        # The survey itself is the plain proxy's, unchanged.
        assert user["content"].startswith("The scenario:\n<scenario>\n")
    assert {b["messages"][0]["content"] for b in requests} == told


def test_persona_text_is_built_from_the_proxys_own_fields_alone():
    proxy = Participant(kind=ParticipantKind.PROXY, gender="non_binary", education="doctorate")
    assert persona_text(proxy) == (
        "You are taking part in this survey as a non-binary person, with a doctorate or "
        "professional degree."
    )
    said_nothing = Participant(age="no_say", gender="self_described", income="no_say")
    assert persona_text(said_nothing) == ""


def test_a_plain_proxy_of_a_scenario_study_is_sent_the_survey_alone(make_study, recording_provider):
    base_url, requests = recording_provider
    study = make_study(live=False, count=1)
    run = services.proxy_run_create(
        study=study, models=[offline_model(base_url)], runs_per_model=1, seed=3
    )
    calls, _refused = services.PROXY_WORK.calls(list(run.calls.values_list("pk", flat=True)))

    work_all(run)

    (body,) = requests
    assert body["messages"] == calls[0].messages
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"].startswith("The scenario:\n<scenario>\n")
    assert "temperature" not in body


def test_an_answer_studys_proxy_run_page_counts_its_answers_and_pairs(
    role_client, offline_provider_url
):
    from django.urls import reverse

    from apps.accounts.roles import Role

    study = answer_study(answers=2, pairs=1)
    client = role_client(Role.RESEARCHER)
    url = reverse("surveys:proxy_runs", args=[study.pk])
    version_3 = PromptTemplate.objects.get(purpose=Purpose.SURVEY_PROXY, version=3)
    assert f'value="{version_3.pk}" selected' in client.get(url).content.decode()

    model = offline_model(offline_provider_url)
    response = client.post(url, {"models": [model.pk], "runs_per_model": 2})

    page = client.get(response["Location"]).content.decode()
    assert "Question and answer: 2; Question and two answers: 1." in page
    assert 'data-testid="calls">6<' in page
    assert 'data-testid="fidelity-note"' not in page
