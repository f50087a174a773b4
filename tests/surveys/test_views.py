import random
import re
import threading

import pytest
from django.test import Client, override_settings

from apps.accounts.roles import Role
from apps.surveys import services, throttle
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import (
    Answer,
    Assignment,
    AssignmentStatus,
    Participant,
    ParticipantStatus,
    ReviewStatus,
    Scenario,
    StudyStatus,
)
from tests.conftest import wait_until
from tests.factories import CODES, new_pid, offline_model
from tests.surveys.flow import SESSION, answers_for, consent, finish, link
from workers.engine import run_batch_task

PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'


@pytest.mark.parametrize(
    "query,problem",
    [
        ("", "missing PROLIFIC_PID, STUDY_ID, SESSION_ID"),
        (
            "?PROLIFIC_PID=abc&STUDY_ID=" + "b" * 24 + "&SESSION_ID=" + "c" * 24,
            "PROLIFIC_PID is not",
        ),
        (
            "?PROLIFIC_PID=" + "A" * 24 + "&STUDY_ID=" + "b" * 24 + "&SESSION_ID=" + "c" * 24,
            "PROLIFIC_PID is not",
        ),
        (
            "?PROLIFIC_PID=" + "a" * 24 + "&STUDY_ID=" + "b" * 24 + "&SESSION_ID=<script>",
            "SESSION_ID is not",
        ),
    ],
)
def test_bad_prolific_ids_get_a_friendly_page_and_nothing_is_stored(
    client, make_study, query, problem
):
    study = make_study(count=5)
    response = client.get(f"/s/{study.slug}/{query}")
    assert response.status_code == 400
    assert problem in response.content.decode()
    assert "open the study again from Prolific" in response.content.decode()
    assert not Participant.objects.exists()


def test_study_id_must_match_the_studys_prolific_id(client, make_study):
    study = make_study(count=5, prolific_study_id="d" * 24)
    response = client.get(link(study, new_pid()))
    assert response.status_code == 400 and "belongs to another study" in response.content.decode()


def test_the_consent_page_stores_nothing_until_consent(client, make_study):
    study = make_study(count=5)
    response = client.get(link(study, new_pid()))
    assert response.status_code == 200
    assert "I agree to take part" in response.content.decode()
    assert not Participant.objects.exists()


def test_declining_redirects_to_prolific_with_the_no_consent_code(client, make_study):
    study = make_study(count=5)
    pid, response = consent(client, study, decision="decline")
    assert response["Location"] == f"/s/{study.slug}/done/"
    page = client.get(response["Location"]).content.decode()
    assert "NOPE1234" in page
    assert 'data-return-to="https://app.prolific.com/submissions/complete?cc=NOPE1234"' in page
    assert Participant.objects.get(prolific_pid=pid).status == ParticipantStatus.NO_CONSENT
    assert not Assignment.objects.exists()


def test_whole_path_without_javascript_ends_at_the_completion_code(client, make_study):
    study = make_study(count=10)
    participant = finish(client, study)
    assert participant.status == ParticipantStatus.FINISHED
    assert Answer.objects.filter(assignment__participant=participant).count() == 5 * 7
    assert set(participant.assignments.values_list("status", flat=True)) == {
        AssignmentStatus.COMPLETED
    }
    assert (participant.age, participant.education) == ("25-34", "bachelor")
    page = client.get(f"/s/{study.slug}/done/").content.decode()
    assert "DONE1234" in page and "app.prolific.com/submissions/complete?cc=DONE1234" in page
    pages = set(participant.page_times.values_list("page", flat=True))
    assert pages == {"consent", "instructions", "scenario", "demographics"}
    assert participant.page_times.filter(submitted_at__isnull=True).count() == 0


def test_finished_pid_sees_its_code_again_and_never_a_new_bundle(client, make_study):
    study = make_study(count=10)
    participant = finish(client, study)
    again = Client()
    response = again.get(link(study, participant.prolific_pid))
    assert response["Location"] == f"/s/{study.slug}/done/"
    assert "DONE1234" in again.get(response["Location"]).content.decode()
    assert (
        Assignment.objects.filter(participant__prolific_pid=participant.prolific_pid).count() == 5
    )


def test_missing_answers_are_shown_and_nothing_advances(client, make_study):
    study = make_study(count=5)
    consent(client, study)
    client.post(f"/s/{study.slug}/instructions/")
    assignment = Assignment.objects.get(position=1)
    response = client.post(f"/s/{study.slug}/scenario/{assignment.pk}/", {"value_H1": "yes"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "Please choose an answer." in page and "Please explain your answer" in page
    assignment.refresh_from_db()
    assert assignment.answered_at is None


def test_refresh_back_two_tabs_and_double_submit_keep_one_answer_per_item_the_last(
    client, make_study
):
    study = make_study(count=5)
    consent(client, study)
    client.post(f"/s/{study.slug}/instructions/")
    first = Assignment.objects.get(position=1)
    url = f"/s/{study.slug}/scenario/{first.pk}/"
    items = list(study.items.all())
    second_tab = Client()
    second_tab.cookies = client.cookies  # the same browser, another tab

    client.post(url + "answer/H2/", {"value_H2": "2"}, HTTP_HX_REQUEST="true")
    client.get(url)  # refresh
    second_tab.post(
        url + "answer/H2/", {"value_H2": "3", "explanation_H2": "tab two"}, HTTP_HX_REQUEST="true"
    )
    client.post(url, answers_for(items, value="5", explanation="Final answer, from tab one."))
    client.post(
        url, answers_for(items, value="5", explanation="Final answer, from tab one.")
    )  # double
    client.get(url)  # back button
    client.post(
        url + "answer/H2/",
        {"value_H2": "1", "explanation_H2": "Changed my mind on the way back."},
        HTTP_HX_REQUEST="true",
    )

    rows = Answer.objects.filter(assignment=first)
    assert rows.count() == 7
    h2 = rows.get(item__code="H2")
    assert (h2.value, h2.explanation) == ("1", "Changed my mind on the way back.")
    assert h2.save_count == 5


def test_autosave_answers_with_the_saved_state_fragment_and_without_htmx_redirects(
    client, make_study
):
    study = make_study(count=5)
    consent(client, study)
    assignment = Assignment.objects.get(position=1)
    url = f"/s/{study.slug}/scenario/{assignment.pk}/answer/P1/"
    fragment = client.post(url, {"value_P1": "4"}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    assert re.fullmatch(
        r'<p class="save-state" id="state-P1" role="status">Saved \d\d:\d\d:\d\d</p>',
        fragment.content.decode().strip(),
    )
    plain = client.post(url, {"explanation_P1": "Health details are sensitive."})
    assert (
        plain.status_code == 302
        and plain["Location"] == f"/s/{study.slug}/scenario/{assignment.pk}/"
    )
    answer = Answer.objects.get()
    assert (answer.value, answer.explanation) == ("4", "Health details are sensitive.")
    bad = client.post(url, {"value_P1": "7"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Not saved" in bad and Answer.objects.get().value == "4"


def test_other_participants_assignments_are_404(client, make_study):
    study = make_study(count=10)
    consent(client, study)
    other = Client()
    consent(other, study)
    mine = Participant.objects.order_by("pk").first()
    theirs = Assignment.objects.exclude(participant=mine).first()
    assert client.get(f"/s/{study.slug}/scenario/{theirs.pk}/").status_code == 404
    response = client.post(f"/s/{study.slug}/scenario/{theirs.pk}/answer/H2/", {"value_H2": "1"})
    assert response.status_code == 404
    assert not Answer.objects.exists()


def test_pages_need_the_browser_that_opened_the_link(client, make_study):
    study = make_study(count=5)
    pid, _ = consent(client, study)
    assignment = Assignment.objects.get(position=1)
    stranger = Client()
    assert stranger.get(f"/s/{study.slug}/scenario/{assignment.pk}/").status_code == 403

    laptop = Client()  # the same person, another device: resumes where they left off
    response = laptop.get(link(study, pid))
    assert response["Location"] == f"/s/{study.slug}/instructions/"
    assert laptop.get(f"/s/{study.slug}/scenario/{assignment.pk}/").status_code == 200
    # The first browser no longer holds the session.
    assert client.get(f"/s/{study.slug}/scenario/{assignment.pk}/").status_code == 403


def test_resuming_needs_the_same_prolific_session(client, make_study):
    study = make_study(count=5)
    pid, _ = consent(client, study)
    response = Client().get(link(study, pid, session="e" * 24))
    assert response.status_code == 400
    assert "another Prolific session" in response.content.decode()


def test_resume_goes_to_the_first_unanswered_scenario(client, make_study):
    study = make_study(count=5)
    pid, _ = consent(client, study)
    client.post(f"/s/{study.slug}/instructions/")
    first = Assignment.objects.get(position=1)
    client.post(f"/s/{study.slug}/scenario/{first.pk}/", answers_for(list(study.items.all())))
    second = Assignment.objects.get(position=2)
    response = Client().get(link(study, pid))
    assert response["Location"] == f"/s/{study.slug}/scenario/{second.pk}/"


def test_study_full_page_with_its_code(client, make_study):
    study = make_study(count=5, ratings_per_scenario=1)
    consent(Client(), study)
    pid, response = consent(client, study)
    page = client.get(response["Location"]).content.decode()
    assert "Sorry, the study is full" in page and "FULL1234" in page
    assert Participant.objects.get(prolific_pid=pid).status == ParticipantStatus.FULL


def test_script_in_a_scenario_or_explanation_is_shown_as_text(client, make_study, role_client):
    study = make_study(count=5)
    scenario = Scenario.objects.get(pk=study.study_scenarios.first().scenario_id)
    scenario.task = "Reply to Ann " + PAYLOAD
    scenario.trajectory = (
        'Action: X\nAction Input: {"q": "'
        + PAYLOAD.replace('"', '\\"')
        + '"}\nObservation: '
        + PAYLOAD
    )
    scenario.save()
    participant = finish(client, study)
    assignment = participant.assignments.get(study_scenario__scenario=scenario)
    Answer.objects.filter(assignment=assignment, item__code="H2").update(explanation=PAYLOAD)
    review = (
        role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/review/?status=all").content.decode()
    )
    Participant.objects.filter(pk=participant.pk).update(status=ParticipantStatus.ACTIVE)
    page = client.get(f"/s/{study.slug}/scenario/{assignment.pk}/").content.decode()
    for html in (page, review):
        assert "<script>window.__pwned" not in html
        assert "<img src=x" not in html
    assert (
        page.count("&lt;script&gt;window.__pwned = 1&lt;/script&gt;") >= 3
    )  # task, input, observation
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in review


def test_scenario_context_is_shown_as_structured_html_without_changing_text(client, make_study):
    study = make_study(count=5)
    consent(client, study)
    assignment = Assignment.objects.get(position=1)
    scenario = assignment.study_scenario.scenario
    page = client.get(f"/s/{study.slug}/scenario/{assignment.pk}/").content.decode()
    assert '<dl class="json-object">' in page
    from django.utils.html import escape

    assert escape(scenario.task) in page
    assert escape(assignment.study_scenario.response.text).replace("\n", "<br>") in page
    assert "offline demo model" in page


@override_settings(SURVEY_RATE_LIMIT_PER_MINUTE=3)
def test_anonymous_endpoints_are_rate_limited(make_study):
    study = make_study(count=5)
    # Fresh addresses each run: the counters live in Redis for a minute.
    address, other = (f"10.{random.randrange(256)}.{random.randrange(256)}.{i}" for i in (1, 2))
    codes = [Client(REMOTE_ADDR=address).get(f"/s/{study.slug}/?{i}").status_code for i in range(5)]
    assert codes == [400, 400, 400, 429, 429]
    assert Client(REMOTE_ADDR=other).get(f"/s/{study.slug}/").status_code == 400


def test_one_rate_limiter_client_per_process_even_when_threads_race(monkeypatch):
    monkeypatch.setattr(throttle, "_client", None)
    start, clients = threading.Barrier(8), []

    def first_use():
        start.wait()
        clients.append(throttle._redis())

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in clients}) == 1


def test_paused_study_turns_new_arrivals_away_politely(client, make_study):
    study = make_study(count=5, live=False)
    response = client.get(link(study, new_pid()))
    assert response.status_code == 503 and "not open" in response.content.decode()


# --- researchers -------------------------------------------------------------------------


def test_researcher_creates_a_study_from_the_form(role_client, scenarios):
    client = role_client(Role.RESEARCHER)
    page = client.get("/studies/new/").content.decode()
    assert "main3" in page
    data = {
        "name": "Pilot",
        "prolific_study_id": "",
        "scenarios_per_participant": 5,
        "ratings_per_scenario": 5,
        "reservation_minutes": 60,
        "consent_text": "c",
        "instructions_text": "i",
        "example_text": "e",
        "code_completed": "AAAA1",
        "code_no_consent": "BBBB1",
        "code_failed_attention": "CCCC1",
        "code_full": "DDDD1",
        "scenarios": [s.pk for s in scenarios[:6]],
    }
    response = client.post("/studies/new/", data)
    from apps.surveys.models import Study

    study = Study.objects.get(name="Pilot")
    assert response["Location"] == f"/studies/{study.pk}/"
    assert study.study_scenarios.count() == 6 and study.items.count() == 7
    detail = client.get(response["Location"]).content.decode()
    assert "6 scenario(s) have no response to rate yet" in detail
    client.post(f"/studies/{study.pk}/status/", {"status": "live"})
    study.refresh_from_db()
    assert study.status == StudyStatus.DRAFT  # refused: no responses yet


def test_researcher_goes_live_pauses_and_closes(role_client, make_study):
    study = make_study(count=5, live=False)
    client = role_client(Role.RESEARCHER)
    for status in ("live", "paused", "closed"):
        client.post(f"/studies/{study.pk}/status/", {"status": status, "confirmed": "yes"})
        study.refresh_from_db()
        assert study.status == status


def test_study_page_shows_provenance_and_progress(role_client, make_study):
    study = make_study(count=5)
    finish(Client(), study)
    page = role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/").content.decode()
    assert "Offline Thorough (demo), prompt scenario_response v1 (imported from csv)" in page
    assert "offline demo model" in page
    assert "5 of 25 ratings completed" in page


def test_preview_shows_the_participants_page_and_saves_nothing(role_client, make_study):
    study = make_study(count=5, live=False)
    page = role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/preview/").content.decode()
    assert "Nothing is saved" in page and "I agree" not in page
    assert "hx-post" not in page
    assert study.items.get(code="P4").wording in page


def test_review_approve_reject_and_export_approvals(role_client, make_study):
    study = make_study(count=10)
    good, bad = finish(Client(), study), finish(Client(), study)
    client = role_client(Role.RESEARCHER)
    page = client.get(f"/studies/{study.pk}/review/").content.decode()
    assert good.prolific_pid in page and bad.prolific_pid in page
    client.post(f"/studies/{study.pk}/approve/", {"participant": good.pk, "confirmed": "yes"})
    short = client.post(
        f"/studies/{study.pk}/review/{bad.pk}/",
        {"action": "reject", "category": "LOW_EFFORT", "message": "too short"},
        follow=True,
    )
    assert "at least 100 characters" in short.content.decode()
    bad.refresh_from_db()
    assert bad.review_status == ReviewStatus.PENDING
    message = (
        "These ratings were given in well under a minute per scenario and every explanation "
        "is the same sentence, so we cannot use them."
    )
    client.post(
        f"/studies/{study.pk}/review/{bad.pk}/",
        {"action": "reject", "category": "TOO_QUICKLY", "message": message},
    )
    bad.refresh_from_db()
    assert (bad.review_status, bad.rejection_category) == (ReviewStatus.REJECTED, "TOO_QUICKLY")
    assert set(bad.assignments.values_list("status", flat=True)) == {AssignmentStatus.REJECTED}

    csv_text = b"".join(client.get(f"/studies/{study.pk}/approvals.csv").streaming_content).decode()
    lines = csv_text.strip().splitlines()
    assert lines[0] == "participant_id,submission_id,study_id,completion_code,finished_at"
    assert len(lines) == 2 and lines[1].startswith(f"{good.prolific_pid},{SESSION},")


def test_researcher_marks_a_participant_returned(role_client, make_study):
    study = make_study(count=5)
    pid, _ = consent(Client(), study)
    participant = Participant.objects.get(prolific_pid=pid)
    role_client(Role.RESEARCHER).post(
        f"/studies/{study.pk}/review/{participant.pk}/", {"action": "returned"}
    )
    participant.refresh_from_db()
    assert participant.status == ParticipantStatus.RETURNED
    assert set(participant.assignments.values_list("status", flat=True)) == {
        AssignmentStatus.RELEASED
    }


@pytest.mark.worker
def test_generating_from_the_study_page_fills_it_with_the_models_responses(
    route_to_worker, role_client, scenarios, offline_provider
):
    route_to_worker(run_batch_task)
    model = offline_model(offline_provider(), name="offline-thorough")
    study = services.study_create(scenarios=scenarios[:3], name="g", **DEFAULT_TEXTS, **CODES)
    client = role_client(Role.RESEARCHER)
    asked = client.post(f"/studies/{study.pk}/responses/", {"model": model.pk}, follow=True)
    assert f"Asked {model} for the missing responses" in asked.content.decode()

    missing = study.study_scenarios.filter(response__isnull=True)
    assert wait_until(lambda: not missing.exists(), timeout=90)
    page = client.get(f"/studies/{study.pk}/").content.decode()
    provenance = f"{model.display_name}, prompt scenario_response v2 (generated through"
    assert page.count(provenance) == 3
    assert "have no response to rate yet" not in page
    study.refresh_from_db()
    assert study.status == StudyStatus.DRAFT  # the researcher decides when it goes live


# --- fidelity to the published design, and the researcher's pages --------------------------


def test_the_consent_page_states_the_time_scaled_from_the_published_study(client, make_study):
    published = client.get(link(make_study(count=5), new_pid())).text
    assert "It takes about 47 minutes" in published and "20 minutes" not in published
    three = make_study(count=5, scenarios_per_participant=3)
    assert "It takes about 28 minutes" in Client().get(link(three, new_pid())).text


def test_h1_shows_no_explanation_box_and_the_other_items_do(client, make_study, role_client):
    study = make_study(count=5)
    pid, _ = consent(client, study)
    client.post(f"/s/{study.slug}/instructions/")
    first = Participant.objects.get(prolific_pid=pid).assignments.get(position=1)
    pages = [
        client.get(f"/s/{study.slug}/scenario/{first.pk}/").text,
        role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/preview/").text,
    ]
    for page in pages:
        assert 'name="explanation_H1"' not in page and "(optional)" not in page
        assert all(f'name="explanation_{code}"' in page for code in ("H2", "P4"))
    items = list(study.items.filter(attention_check=False))
    data = {k: v for k, v in answers_for(items).items() if k != "explanation_H1"}
    assert client.post(f"/s/{study.slug}/scenario/{first.pk}/", data).status_code == 302


def test_the_worked_example_answers_none_of_the_studys_questions(client, make_study):
    study = make_study(count=5)
    consent(client, study)
    page = client.get(f"/s/{study.slug}/instructions/").text
    assert "A worked example" in page and "practice question" in page
    example = study.example_text.lower()
    labels = {label.lower() for item in study.items.all() for label in item.scale_labels}
    assert labels and not [label for label in labels if label in example]
    assert "(yes)" not in example


def test_old_default_texts_are_updated_by_the_migration(make_study):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("apps.surveys.migrations.0005_published_survey_details")
    old_consent = DEFAULT_TEXTS["consent_text"].replace(
        "saying briefly why.", "saying briefly why." + migration.OLD_TIME
    )
    fresh = make_study(count=5, live=False, example_text=migration.OLD_EXAMPLE)
    started = make_study(count=5, example_text=migration.OLD_EXAMPLE)
    type(fresh).objects.update(consent_text=old_consent)
    consent(Client(), started)
    migration.texts_update(apps, None)
    fresh.refresh_from_db()
    started.refresh_from_db()
    assert fresh.consent_text == started.consent_text == DEFAULT_TEXTS["consent_text"]
    assert fresh.example_text == migration.NEW_EXAMPLE == DEFAULT_TEXTS["example_text"]
    assert started.example_text == migration.OLD_EXAMPLE, "participants have seen it"


def _finish_failing_check(client, study, failed: set[str]) -> Participant:
    pid, _ = consent(client, study)
    client.post(f"/s/{study.slug}/instructions/")
    participant = Participant.objects.get(prolific_pid=pid)
    for assignment in participant.assignments.order_by("position"):
        items = [
            i
            for i in study.items.all()
            if not i.attention_check or i.on_page == assignment.position
        ]
        data = answers_for(items) | {f"value_{code}": "1" for code in failed}
        client.post(f"/s/{study.slug}/scenario/{assignment.pk}/", data)
    demographics = {"age": "25-34", "gender": "no_say", "education": "bachelor", "income": "no_say"}
    client.post(f"/s/{study.slug}/about-you/", demographics)
    participant.refresh_from_db()
    return participant


def test_review_page_shows_readable_flags_rules_and_collapsed_reject_forms(make_study, role_client):
    from apps.surveys.models import SurveyItem

    study = make_study(count=10, live=False)
    for n, page in ((1, 2), (2, 4)):
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
    study = services.study_set_status(study=study, status=StudyStatus.LIVE)
    once = _finish_failing_check(Client(), study, {"AC1"})
    twice = _finish_failing_check(Client(), study, {"AC1", "AC2"})
    assert once.status == twice.status == ParticipantStatus.FINISHED
    page = role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/review/").text

    one = page[
        page.index(f'id="participant-{once.pk}"') : page.index(f'id="participant-{twice.pk}"')
    ]
    two = page[page.index(f'id="participant-{twice.pk}"') :]
    assert "Missed an attention check</strong> (not grounds for a rejection)" in one
    assert "<strong>Failed attention checks" not in one, "one failure is not grounds"
    assert "Failed attention checks</strong>: failed 2 of 2 attention checks" in two
    assert "Flagged for rejection" in two
    assert '<option value="FAILED_CHECK" selected>' in two
    assert "attention_once</strong>" not in page and "<strong>attention</strong>" not in page
    assert "more than 3 SD under the mean completion time" in page
    assert "Now 2 participants." in page
    assert "at least two failed checks" in page and "about 47 minutes" in page
    assert page.count('<details class="reject"') == 2
    assert page.count("<textarea") == page.count('<details class="reject"')
    assert "onclick" not in page


def test_approving_asks_for_a_confirmation_first(make_study, role_client):
    study = make_study(count=5)
    participant = finish(Client(), study)
    client = role_client(Role.RESEARCHER)
    review = client.get(f"/studies/{study.pk}/review/").text
    assert 'form="approve-form"' in review and 'value="approve"' not in review
    asked = client.post(f"/studies/{study.pk}/approve/", {"participant": participant.pk})
    assert asked.status_code == 200 and "Approve 1 submission?" in asked.text
    assert "approvals CSV" in asked.text  # no Prolific API configured here
    participant.refresh_from_db()
    assert participant.review_status == ReviewStatus.PENDING
    client.post(
        f"/studies/{study.pk}/approve/", {"participant": participant.pk, "confirmed": "yes"}
    )
    participant.refresh_from_db()
    assert participant.review_status == ReviewStatus.APPROVED
    nobody = client.post(f"/studies/{study.pk}/approve/", {}, follow=True)
    assert "Choose the submissions to approve" in nobody.text


def test_closing_a_study_asks_for_a_confirmation_first(make_study, role_client):
    study = make_study(count=5)
    client = role_client(Role.RESEARCHER)
    assert "Close…" in client.get(f"/studies/{study.pk}/").text
    asked = client.post(f"/studies/{study.pk}/status/", {"status": "closed"})
    assert asked.status_code == 200 and "cannot go live again" in asked.text
    assert 'name="confirmed" value="yes"' in asked.text and "onclick" not in asked.text
    study.refresh_from_db()
    assert study.status == StudyStatus.LIVE
    client.post(f"/studies/{study.pk}/status/", {"status": "closed", "confirmed": "yes"})
    study.refresh_from_db()
    assert study.status == StudyStatus.CLOSED


def test_the_study_form_offers_a_scenario_filter_and_select_all_from_a_script_file(
    role_client, scenarios
):
    page = role_client(Role.RESEARCHER).get("/studies/new/").text
    assert re.search(r'<div class="picker-tools" data-picker-tools hidden>', page)
    assert 'data-picker-select="all"' in page and 'data-picker-select="none"' in page
    assert "/static/js/study-form.js" in page
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", page)), "no inline script"
    assert scenarios[0].task[:40] in page  # the task beside the name, to tell them apart
    assert page.count('type="checkbox" name="scenarios"') == len(scenarios)
    assert '<fieldset class="panel form-section">' in page


def test_the_model_for_responses_defaults_to_the_first_active_one(scenarios, role_client):
    first = offline_model("http://127.0.0.1:9", name="offline-friendly")
    offline_model("http://127.0.0.1:9", name="offline-terse")
    study = services.study_create(scenarios=scenarios[:3], name="g", **DEFAULT_TEXTS, **CODES)
    page = role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/").text
    assert "---------" not in page
    # No empty choice: a browser selects the first option, and a form post sends it.
    options = re.search(r'<select name="model"[^>]*>(.*?)</select>', page, re.S).group(1)
    assert re.findall(r'<option value="(\d+)"', options)[0] == str(first.pk)


HX = {"HTTP_HX_REQUEST": "true"}
ABOUT = {"age": "25-34", "gender": "no_say", "education": "bachelor", "income": "no_say"}


def answered_every_page(client, study):
    """Consent, instructions and every scenario page submitted; (participant, assignments)."""
    pid, _ = consent(client, study)
    client.post(f"/s/{study.slug}/instructions/")
    participant = Participant.objects.get(prolific_pid=pid)
    items = list(study.items.filter(attention_check=False))
    assignments = list(participant.assignments.order_by("position"))
    for assignment in assignments:
        client.post(f"/s/{study.slug}/scenario/{assignment.pk}/", answers_for(items))
    return participant, assignments


def test_an_autosave_never_blanks_a_submitted_answer_and_the_code_still_needs_it(
    client, make_study
):
    study = make_study(count=10)
    participant, assignments = answered_every_page(client, study)
    url = f"/s/{study.slug}/scenario/{assignments[0].pk}/answer/H2/"
    given = Answer.objects.get(assignment=assignments[0], item__code="H2")

    blank = client.post(url, {"value_H2": "", "explanation_H2": ""}, **HX).content.decode()
    assert "Not saved" in blank and "Saved " not in blank
    client.post(url, {"value_H2": "2", "explanation_H2": "   "}, **HX)  # explanation required
    answer = Answer.objects.get(pk=given.pk)
    assert (answer.value, answer.explanation) == ("2", given.explanation)

    response = client.post(f"/s/{study.slug}/about-you/", ABOUT)
    assert response["Location"] == f"/s/{study.slug}/done/"
    participant.refresh_from_db()
    assert participant.completion_code == "DONE1234"


@pytest.mark.parametrize("blanked", ["value", "explanation"])
def test_the_completion_code_is_given_only_when_every_required_answer_is_there(
    client, make_study, blanked
):
    study = make_study(count=10)
    participant, assignments = answered_every_page(client, study)
    third = assignments[2]
    # However it came to be empty (rows saved before autosaves kept answers, an edit in
    # the database), the server checks at the end, not the pages.
    Answer.objects.filter(assignment=third, item__code="P3").update(**{blanked: ""})

    response = client.post(f"/s/{study.slug}/about-you/", ABOUT)
    assert response["Location"] == f"/s/{study.slug}/scenario/{third.pk}/"
    participant.refresh_from_db()
    assert participant.status == ParticipantStatus.ACTIVE and participant.completion_code == ""
    assert "/done/" not in client.get(f"/s/{study.slug}/done/")["Location"]
    page = client.get(response["Location"]).content.decode()
    assert "Scenario 3 has a question without an answer" in page

    items = list(study.items.filter(attention_check=False))
    client.post(f"/s/{study.slug}/scenario/{third.pk}/", answers_for(items))
    response = client.post(f"/s/{study.slug}/about-you/", ABOUT)
    assert response["Location"] == f"/s/{study.slug}/done/"
    participant.refresh_from_db()
    assert participant.completion_code == "DONE1234"


@pytest.mark.parametrize("field", ["value", "explanation"])
@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_a_nul_character_in_an_autosaved_answer_is_refused_with_400(
    client, make_study, field, htmx
):
    study = make_study(count=5)
    consent(client, study)
    assignment = Assignment.objects.get(position=1)
    data = {"value_H2": "4", "explanation_H2": "A reason."}
    data[f"{field}_H2"] = data[f"{field}_H2"][:1] + "\x00" + data[f"{field}_H2"][1:]
    url = f"/s/{study.slug}/scenario/{assignment.pk}/answer/H2/"
    response = client.post(url, data, **(HX if htmx else {}))
    assert response.status_code == 400
    assert "Not saved: H2: the answer contains a character that cannot be saved" in (
        response.content.decode()
    )
    assert not Answer.objects.exists()
