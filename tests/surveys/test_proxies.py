"""Proxy participants on the bulk engine, against the offline provider over real HTTP."""

import json
from decimal import Decimal

import pytest

from apps.llm import engine
from apps.llm.models import CallStatus, LLMCall, RunStatus
from apps.surveys import selectors, services
from apps.surveys.errors import SurveyError
from apps.surveys.models import (
    Answer,
    AssignmentStatus,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    ProxyCall,
    ProxyCallStatus,
    SurveyItem,
)
from apps.surveys.services.proxies import answers_check, proxy_items
from tests.factories import offline_model
from tests.surveys.flow import completed_per_scenario

pytestmark = pytest.mark.django_db


def work_all(run, limit=None):
    """Work the run in this process, batch after batch, as the workers' chains would."""
    while True:
        outcome = engine.batch_run(work=services.PROXY_WORK.name, scope=run.pk, limit=limit)
        if outcome.again_in is None or not outcome.claimed:
            return


@pytest.fixture
def models(offline_provider_url):
    return [
        offline_model(offline_provider_url, name=n) for n in ("offline-terse", "offline-thorough")
    ]


def test_each_model_and_run_is_a_proxy_participant_with_a_call_per_scenario(make_study, models):
    study = make_study(live=False, count=4)

    run = services.proxy_run_create(study=study, models=models, runs_per_model=3, seed=7)

    proxies = Participant.objects.filter(proxy_run=run)
    assert proxies.count() == 6
    assert {(p.model_id, p.run_index) for p in proxies} == {
        (m.pk, i) for m in models for i in (1, 2, 3)
    }
    assert all(p.kind == ParticipantKind.PROXY for p in proxies)
    assert ProxyCall.objects.filter(run=run).count() == 6 * 4
    assert len(set(ProxyCall.objects.filter(run=run).values_list("seed", flat=True))) == 24
    # A second run of the same model goes on numbering its proxies.
    later = services.proxy_run_create(study=study, models=models[:1], runs_per_model=2)
    assert sorted(later.participants.values_list("run_index", flat=True)) == [4, 5]


def test_a_run_answers_every_item_of_every_scenario_once_as_people_answers_are_stored(
    make_study, models
):
    study = make_study(live=False, count=3)
    run = services.proxy_run_create(study=study, models=models, runs_per_model=2, seed=1)
    services.proxy_run_launch(run=run)

    work_all(run)

    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    items = proxy_items(study=study)
    answers = Answer.objects.filter(assignment__participant__proxy_run=run)
    assert answers.count() == 4 * 3 * len(items)
    by_code = {item.code: item for item in items}
    for answer in answers.select_related("item"):
        assert answer.value in {key for key, _label in by_code[answer.item.code].choices}
        if answer.item.explanation_required:
            assert answer.explanation.strip()
    assert set(answers.values_list("assignment__status", flat=True).distinct()) == {
        AssignmentStatus.PROXY
    }
    assert set(Participant.objects.filter(proxy_run=run).values_list("status", flat=True)) == {
        ParticipantStatus.FINISHED
    }
    # Each call once: one ledger row per call, none repeated by working the run again.
    calls = LLMCall.objects.filter(caller__startswith="proxy_call:", status=CallStatus.OK)
    assert calls.count() == 12
    work_all(run)
    assert calls.count() == 12
    # Runs of one model differ (each call has a seed of its own), as samples of a model do.
    texts = list(
        answers.filter(assignment__participant__model=models[0], item__code="P3").values_list(
            "explanation", flat=True
        )
    )
    assert len(set(texts)) > 1


def test_proxy_ratings_never_count_towards_the_ratings_people_give(make_study, models):
    study = make_study(live=False, count=2, ratings_per_scenario=1)
    run = services.proxy_run_create(study=study, models=models, runs_per_model=2)
    services.proxy_run_launch(run=run)
    work_all(run)

    assert set(completed_per_scenario(study).values()) == {0}
    assert selectors.study_progress(study=study).full == 0


def test_an_answer_off_the_scale_is_asked_again_with_the_problem_named(make_study):
    study = make_study(live=False, count=1)
    items = proxy_items(study=study)
    check = answers_check(items)
    good = [
        {"code": i.code, "value": "yes" if i.kind == "yes_no" else 3, "explanation": "Because."}
        for i in items
    ]
    assert check({"answers": good}) is None

    bad = [dict(a) for a in good]
    bad[1]["value"] = 6
    bad[2]["value"] = "maybe"
    bad[3]["explanation"] = " "
    problem = check({"answers": [*bad[:-1], {"code": "Z9", "value": 1, "explanation": "x"}]})
    assert f"no answer for {items[-1].code}" in problem
    assert "answers for questions that do not exist (Z9)" in problem
    assert f"{items[1].code} must be a whole number from 1 to 5" in problem
    assert f"{items[2].code} must be a whole number from 1 to 5" in problem
    assert f"{items[3].code} needs an explanation" in problem
    assert check({"answers": [*good, good[0]]}) == f"more than one answer for {items[0].code}"


def test_a_proxy_that_never_answers_validly_fails_its_call_with_the_reason(
    make_study, answering_provider, provider_key
):
    provider_key("ASSAY_TEST_STAND_IN_KEY", "sk-test-stand-in")
    study = make_study(live=False, count=1)
    model = offline_model(
        answering_provider(json.dumps({"answers": []})),
        name="stand-in",
        api_key_env="ASSAY_TEST_STAND_IN_KEY",
    )
    run = services.proxy_run_create(study=study, models=[model], runs_per_model=1)
    services.proxy_run_launch(run=run)

    work_all(run)

    call = ProxyCall.objects.get(run=run)
    assert call.status == ProxyCallStatus.FAILED
    assert call.error_kind == CallStatus.INVALID_OUTPUT
    assert "no answer for H1" in call.error
    assert not Answer.objects.filter(assignment__participant__proxy_run=run).exists()
    # Failed calls go back to pending with a fresh budget of attempts when retried.
    with pytest.raises(SurveyError, match="Unknown kind of error: 'bogus'"):
        services.proxy_calls_retry(run=run, error_kind="bogus")
    assert services.proxy_calls_retry(run=run, error_kind=CallStatus.TIMEOUT) == 0
    assert services.proxy_calls_retry(run=run, error_kind=CallStatus.INVALID_OUTPUT) == 1
    assert ProxyCall.objects.get(run=run).status == ProxyCallStatus.PENDING


def test_attention_checks_are_for_people_and_are_not_asked_of_proxies(make_study, models):
    study = make_study(live=False, count=1)
    SurveyItem.objects.create(
        study=study,
        code="AC1",
        wording="Choose 'No'.",
        kind="yes_no",
        attention_check=True,
        expected_value="no",
        order=99,
    )
    assert "AC1" not in [i.code for i in proxy_items(study=study)]


def test_a_paused_run_takes_no_calls_and_a_cancelled_one_none_ever(make_study, models):
    study = make_study(live=False, count=2)
    run = services.proxy_run_create(study=study, models=models[:1], runs_per_model=1)
    services.proxy_run_launch(run=run)
    services.proxy_run_pause(run=run)
    assert engine.batch_run(work=services.PROXY_WORK.name, scope=run.pk).claimed == 0
    services.proxy_run_resume(run=run)
    services.proxy_run_cancel(run=run)
    assert engine.batch_run(work=services.PROXY_WORK.name, scope=run.pk).claimed == 0
    with pytest.raises(SurveyError, match="cancelled"):
        services.proxy_run_resume(run=run)


def test_a_run_refuses_a_study_whose_scenarios_lack_responses(make_study, scenarios, models):
    from apps.surveys.forms import DEFAULT_TEXTS
    from tests.factories import CODES

    study = services.study_create(scenarios=scenarios[:2], name="s", **DEFAULT_TEXTS, **CODES)
    with pytest.raises(SurveyError, match="2 of the study's scenarios have no response"):
        services.proxy_run_create(study=study, models=models)
    with pytest.raises(SurveyError, match="between 1 and 20"):
        services.proxy_run_create(
            study=make_study(live=False, count=1), models=models, runs_per_model=0
        )


def test_a_set_temperature_is_sent_and_none_leaves_the_providers_default(make_study, models):
    study = make_study(live=False, count=1)
    run = services.proxy_run_create(
        study=study, models=models[:1], runs_per_model=1, temperature=Decimal("0.70")
    )
    calls, _refused = services.PROXY_WORK.calls(list(run.calls.values_list("pk", flat=True)))
    assert calls[0].params["temperature"] == 0.7
    default = services.proxy_run_create(study=study, models=models[:1], runs_per_model=1)
    calls, _refused = services.PROXY_WORK.calls(list(default.calls.values_list("pk", flat=True)))
    assert "temperature" not in calls[0].params
    # The proxy reads what a participant reads: task, trajectory, response, item wording.
    call = default.calls.select_related("study_scenario__scenario", "study_scenario__response")[0]
    text = "\n".join(m["content"] for m in calls[0].messages)
    assert call.study_scenario.scenario.task in text
    assert call.study_scenario.response.text in text
    for item in proxy_items(study=study):
        assert item.wording in text


def test_proxies_are_never_reviewed_approved_or_counted_among_participants(
    make_study, models, role_client
):
    from django.urls import reverse

    from apps.accounts.roles import Role

    study = make_study(live=False, count=2)
    run = services.proxy_run_create(study=study, models=models, runs_per_model=1)
    services.proxy_run_launch(run=run)
    work_all(run)
    proxies = Participant.objects.filter(proxy_run=run)
    assert set(proxies.values_list("status", flat=True)) == {ParticipantStatus.FINISHED}

    assert selectors.review(study=study).rows == []
    assert not selectors.approvals(study=study).exists()
    assert sum(selectors.study_progress(study=study).participants.values()) == 0
    client = role_client(Role.RESEARCHER)
    for proxy in proxies:
        url = reverse("surveys:participant_review", args=[study.pk, proxy.pk])
        assert client.post(url, {"action": "approve"}).status_code == 404
    with pytest.raises(SurveyError):
        services.participants_approve(
            study=study, participant_ids=[p.pk for p in proxies], user=None
        )
