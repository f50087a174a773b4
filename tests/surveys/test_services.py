import datetime as dt
from collections import Counter

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.surveys import selectors, services
from apps.surveys.errors import SurveyError
from apps.surveys.models import (
    Answer,
    Assignment,
    AssignmentStatus,
    ParticipantStatus,
    StudyStatus,
    SurveyItem,
    UnitKind,
)
from tests.factories import new_pid
from tests.surveys.flow import completed_per_scenario

DEMOGRAPHICS = {"age": "no_say", "gender": "no_say", "education": "no_say", "income": "no_say"}
LONG_MESSAGE = (
    "Your explanations repeat the same few words for every question and do not refer to the "
    "scenarios, so we cannot use these ratings."
)


def arrive(study, pid=None, session="c" * 24):
    params = services.ProlificParams(pid or new_pid(), "b" * 24, session)
    return services.participant_consent(study=study, params=params, consent_seconds=12)


def complete(participant, value="4", explanation="It leaves out the medical details, good."):
    items = list(participant.study.items.filter(attention_check=False))
    for a in participant.assignments.order_by("position"):
        a.participant = participant
        answers = {i.code: ("yes" if i.kind == "yes_no" else value, explanation) for i in items}
        services.assignment_submit(assignment=a, answers=answers, items=items)
    return services.participant_finish(participant=participant, demographics=DEMOGRAPHICS)


def completed(study):
    return completed_per_scenario(study)


def test_bundle_is_n_distinct_scenarios_least_rated_first(make_study):
    study = make_study(count=6, ratings_per_scenario=2, scenarios_per_participant=3)
    first = arrive(study)
    second = arrive(study)
    a = {x.study_scenario_id for x in first.assignments.all()}
    b = {x.study_scenario_id for x in second.assignments.all()}
    assert len(a) == 3 and len(b) == 3
    assert not a & b, "the second arrival gets the three scenarios nobody has yet"
    positions = sorted(first.assignments.values_list("position", flat=True))
    assert positions == [1, 2, 3]


def test_full_when_completed_plus_live_reservations_reach_k(make_study):
    study = make_study(count=2, ratings_per_scenario=1, scenarios_per_participant=2)
    holder = arrive(study)
    assert holder.assignments.count() == 2
    late = arrive(study)
    assert late.status == ParticipantStatus.FULL
    assert late.completion_code == study.code_full
    assert not late.assignments.exists()


def test_reservation_expires_and_scenario_is_offered_again(make_study):
    study = make_study(count=1, ratings_per_scenario=1, scenarios_per_participant=1)
    holder = arrive(study)
    assert arrive(study).status == ParticipantStatus.FULL

    later = timezone.now() + dt.timedelta(minutes=study.reservation_minutes + 1)
    assert services.assignment_expire_overdue(now=later) == 1
    assert holder.assignments.get().status == AssignmentStatus.EXPIRED

    newcomer = arrive(study)
    assert newcomer.status == ParticipantStatus.ACTIVE
    assert newcomer.assignments.count() == 1


def test_a_lapsed_reservation_stops_counting_before_the_periodic_task_runs(make_study):
    study = make_study(count=1, ratings_per_scenario=1, scenarios_per_participant=1)
    holder = arrive(study)
    Assignment.objects.filter(participant=holder).update(
        reserved_until=timezone.now() - dt.timedelta(seconds=1)
    )
    assert arrive(study).status == ParticipantStatus.ACTIVE


def test_finishing_after_expiry_counts_only_if_the_scenario_still_has_room(make_study):
    study = make_study(count=1, ratings_per_scenario=1, scenarios_per_participant=1)
    slow = arrive(study)
    services.assignment_expire_overdue(now=timezone.now() + dt.timedelta(days=1))
    fast = arrive(study)
    complete(fast)
    complete(slow)
    slow_assignment = slow.assignments.get()
    assert slow_assignment.status == AssignmentStatus.EXPIRED, "k was reached by someone else"
    assert completed(study) == {study.study_scenarios.get().scenario.name: 1}
    slow.refresh_from_db()
    assert slow.status == ParticipantStatus.FINISHED and slow.completion_code == "DONE1234"


def test_expired_reservation_completes_when_there_is_still_room(make_study):
    study = make_study(count=1, ratings_per_scenario=2, scenarios_per_participant=1)
    slow = arrive(study)
    services.assignment_expire_overdue(now=timezone.now() + dt.timedelta(days=1))
    complete(slow)
    assert slow.assignments.get().status == AssignmentStatus.COMPLETED


def test_rejection_excludes_ratings_and_reopens_scenarios(make_study, make_user):
    study = make_study(count=1, ratings_per_scenario=1, scenarios_per_participant=1)
    done = complete(arrive(study))
    assert arrive(study).status == ParticipantStatus.FULL

    with pytest.raises(SurveyError, match="at least 100 characters"):
        services.participant_reject(
            participant=done, user=None, category="LOW_EFFORT", message="no"
        )
    services.participant_reject(
        participant=done, user=make_user(None), category="LOW_EFFORT", message=LONG_MESSAGE
    )
    assert done.assignments.get().status == AssignmentStatus.REJECTED
    assert set(completed(study).values()) == {0}
    assert arrive(study).assignments.count() == 1


def test_rejection_needs_a_prolific_category(make_study):
    done = complete(arrive(make_study(count=5)))
    with pytest.raises(SurveyError, match="categories"):
        services.participant_reject(
            participant=done, user=None, category="RUDE", message=LONG_MESSAGE
        )


def test_returned_participant_frees_their_reservations(make_study):
    study = make_study(count=1, ratings_per_scenario=1, scenarios_per_participant=1)
    holder = arrive(study)
    services.participant_mark_returned(participant=holder)
    assert holder.assignments.get().status == AssignmentStatus.RELEASED
    assert arrive(study).status == ParticipantStatus.ACTIVE


def test_consenting_twice_reserves_one_bundle(make_study):
    study = make_study(count=10)
    pid = new_pid()
    first = arrive(study, pid)
    again = arrive(study, pid)
    assert first.pk == again.pk
    assert Assignment.objects.filter(participant=first).count() == 5


def test_answer_saved_repeatedly_is_one_row_holding_the_last_answer(make_study):
    participant = arrive(make_study(count=5))
    mine = {"participant": participant, "assignment_id": participant.assignments.first().pk}
    item = participant.study.items.get(code="H2")
    services.answer_save(**mine, item=item, value="2", explanation=None)
    services.answer_save(**mine, item=item, value=None, explanation="first try")
    services.answer_save(**mine, item=item, value="5", explanation="changed my mind")
    answer = Answer.objects.get()
    assert (answer.value, answer.explanation, answer.save_count) == ("5", "changed my mind", 3)


def test_answer_outside_the_scale_is_refused(make_study):
    participant = arrive(make_study(count=5))
    item = participant.study.items.get(code="H2")
    with pytest.raises(SurveyError, match="not one of the answers"):
        services.answer_save(
            participant=participant,
            assignment_id=participant.assignments.first().pk,
            item=item,
            value="9",
            explanation="",
        )
    assert not Answer.objects.exists()


def test_database_allows_one_assignment_per_participant_and_scenario(make_study):
    participant = arrive(make_study(count=5))
    a = participant.assignments.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(
            participant=participant,
            study_scenario=a.study_scenario,
            position=99,
            reserved_at=a.reserved_at,
            reserved_until=a.reserved_until,
        )


def test_database_allows_one_answer_per_assignment_and_item(make_study):
    participant = arrive(make_study(count=5))
    a, item, now = participant.assignments.first(), participant.study.items.first(), timezone.now()
    Answer.objects.create(assignment=a, item=item, value="yes", first_saved_at=now, saved_at=now)
    with pytest.raises(IntegrityError), transaction.atomic():
        Answer.objects.create(assignment=a, item=item, value="no", first_saved_at=now, saved_at=now)


def test_answers_are_frozen_after_finishing(make_study):
    done = complete(arrive(make_study(count=5)))
    with pytest.raises(SurveyError, match="submitted"):
        services.answer_save(
            participant=done,
            assignment_id=done.assignments.first().pk,
            item=done.study.items.get(code="H2"),
            value="1",
            explanation="",
        )


def test_finishing_needs_every_scenario_answered(make_study):
    participant = arrive(make_study(count=5))
    with pytest.raises(SurveyError, match="Scenario 1 is not finished"):
        services.participant_finish(participant=participant, demographics=DEMOGRAPHICS)


def _with_checks(study, pages):
    for n, page in enumerate(pages, start=1):
        SurveyItem.objects.create(
            study=study,
            code=f"AC{n}",
            kind="scale",
            wording="Choose 'Very helpful' here.",
            scale_labels=["a", "b", "c", "Very helpful", "e"],
            attention_check=True,
            expected_value="4",
            explanation_required=False,
            order=90 + n,
            on_page=page,
        )
    return services.study_set_status(study=study, status=StudyStatus.LIVE)


FIVE_SCENARIOS = dict.fromkeys(range(1, 6), UnitKind.SCENARIO)


def _finish_failing(study, codes):
    """A participant who answers every item, failing the attention checks in `codes`."""
    participant = arrive(study)
    for a in participant.assignments.order_by("position"):
        a.participant = participant
        page = selectors.items_for_page(study=study, position=a.position, kinds=FIVE_SCENARIOS)
        answers = {
            i.code: (
                "yes" if i.kind == "yes_no" else "2" if i.code in codes else "4",
                "A considered explanation here.",
            )
            for i in page
        }
        services.assignment_submit(assignment=a, answers=answers, items=page)
    return services.participant_finish(participant=participant, demographics=DEMOGRAPHICS)


def test_attention_checks_are_placed_on_their_pages(make_study):
    study = _with_checks(make_study(count=5, live=False), pages=[2])
    assert "AC1" in {
        i.code for i in selectors.items_for_page(study=study, position=2, kinds=FIVE_SCENARIOS)
    }
    assert "AC1" not in {
        i.code for i in selectors.items_for_page(study=study, position=1, kinds=FIVE_SCENARIOS)
    }


def test_in_a_study_of_5_minutes_or_more_two_failed_attention_checks_give_their_code(make_study):
    study = _with_checks(make_study(count=5, live=False), pages=[2, 4])
    assert selectors.study_estimate(study=study).minutes >= 5
    once = _finish_failing(study, {"AC1"})
    assert not once.attention_failed and once.completion_code == "DONE1234"
    twice = _finish_failing(study, {"AC1", "AC2"})
    assert twice.attention_failed and twice.completion_code == "ATTN1234"


def test_items_freeze_once_anyone_answered(make_study):
    study = make_study(count=5)
    item = study.items.get(code="H2")
    item.wording = "Reworded before anyone answered"
    services.survey_item_save(item=item)
    participant = arrive(study)
    services.answer_save(
        participant=participant,
        assignment_id=participant.assignments.first().pk,
        item=item,
        value="3",
        explanation=None,
    )
    item.wording = "Reworded after"
    with pytest.raises(SurveyError, match="frozen"):
        services.survey_item_save(item=item)
    assert study.items.get(code="H2").wording == "Reworded before anyone answered"


def test_new_study_copies_the_published_seven_items(make_study):
    study = make_study(count=5, live=False)
    items = list(study.items.all())
    assert [i.code for i in items] == ["H1", "H2", "H3", "P1", "P2", "P3", "P4"]
    assert [i.explanation_required for i in items] == [False] + [True] * 6
    assert all(len(i.scale_labels) == 5 for i in items[1:])
    assert items[0].kind == "yes_no"


def test_going_live_needs_a_response_for_every_scenario(scenarios):
    from apps.surveys.forms import DEFAULT_TEXTS
    from tests.factories import CODES

    study = services.study_create(scenarios=scenarios[:5], name="x", **DEFAULT_TEXTS, **CODES)
    with pytest.raises(SurveyError, match="5 scenario"):
        services.study_set_status(study=study, status=StudyStatus.LIVE)
    study.refresh_from_db()
    assert study.status == StudyStatus.DRAFT


def test_status_transitions_are_limited(make_study):
    study = make_study(count=5)
    services.study_set_status(study=study, status=StudyStatus.PAUSED)
    services.study_set_status(study=study, status=StudyStatus.CLOSED)
    with pytest.raises(SurveyError, match="closed study cannot become live"):
        services.study_set_status(study=study, status=StudyStatus.LIVE)


def test_paused_study_takes_no_new_participants(make_study):
    study = make_study(count=5)
    study = services.study_set_status(study=study, status=StudyStatus.PAUSED)
    with pytest.raises(SurveyError, match="not taking new"):
        arrive(study)


def test_every_scenario_gets_exactly_k_when_people_keep_coming(make_study):
    study = make_study(count=12, ratings_per_scenario=3, scenarios_per_participant=5)
    outcomes = Counter()
    for _ in range(12):
        participant = arrive(study)
        outcomes[participant.status] += 1
        if participant.status == ParticipantStatus.ACTIVE:
            complete(participant)
    assert set(completed(study).values()) == {3}
    # 36 ratings: seven bundles of five and one of one; the rest find the study full.
    assert outcomes[ParticipantStatus.FULL] == 12 - 8


def test_participant_and_study_read_in_one_statement_match_the_orm(make_study):
    from apps.surveys.models import Participant, Study

    participant = arrive(make_study(count=5))
    slug = participant.study.slug
    [fast] = selectors.participants_with_study(ids=[participant.pk, participant.pk + 99], slug=slug)
    orm = Participant.objects.select_related("study").get(pk=participant.pk)
    for model, a, b in ((Participant, fast, orm), (Study, fast.study, orm.study)):
        for field in model._meta.concrete_fields:
            assert getattr(a, field.attname) == getattr(b, field.attname), field.name
    assert not fast._state.adding and fast._state.db == orm._state.db
    assert selectors.participants_with_study(ids=[participant.pk], slug="elsewhere") == []


def test_the_scenario_prompt_gets_every_trajectory_field_as_a_variable(scenarios):
    """The published prompt's inputs: the user's name and email, the toolkits, the task, the
    trajectory so far and the final action; each a variable a researcher's prompt can use."""
    import json

    from apps.llm.models import PROMPT_VARIABLES, PromptTemplate, Purpose
    from apps.surveys.selectors import scenario_prompt_variables, scenario_response_messages

    scenario = next(s for s in scenarios if s.name == "main12")
    record = json.loads(scenario.record_json)["trajectory"]
    variables = scenario_prompt_variables(scenario=scenario)
    assert set(variables) == set(PROMPT_VARIABLES[Purpose.SCENARIO_RESPONSE])
    assert variables["user_email"] == record["user_email"]
    assert variables["trajectory"] == record["executable_trajectory"]
    assert variables["final_action"] == "MessengerSendMessage"
    assert variables["toolkits"].splitlines() == [
        "- GoogleCalendar: GoogleCalendarSearchEvents",
        "- NotionManager: NotionManagerSearchContent",
        "- Messenger: MessengerSendMessage",
    ]
    prompt = PromptTemplate.objects.get(purpose=Purpose.SCENARIO_RESPONSE, version=2)
    text = "\n".join(
        m["content"] for m in scenario_response_messages(scenario=scenario, prompt=prompt)
    )
    for name in ("user_name", "user_email", "task", "trajectory", "final_action"):
        assert variables[name] in text, name


def test_a_prompt_may_use_only_its_purposes_variables(db):
    from apps.llm.errors import PromptError
    from apps.llm.services import prompt_template_save

    saved = prompt_template_save(
        purpose="scenario_response", system_text="", user_text="$user_name: $final_action"
    )
    assert saved.variables == ["user_name", "final_action"]
    with pytest.raises(PromptError, match=r"\$recipient: not a variable of scenario_response"):
        prompt_template_save(purpose="scenario_response", system_text="", user_text="$recipient")
