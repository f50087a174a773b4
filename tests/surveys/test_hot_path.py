"""What keeps participants' requests cheap, and what must not change because of it: the
per-process items cache (fresh after every change to the items, and only ever holding committed
rows), and the autosave that checks and writes in one statement, which must answer exactly as
the full path does whenever it does not write.

These commit (transaction=True): the cache keeps only what was read outside a transaction."""

import pytest
from django.db import connection, reset_queries
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.surveys import selectors, services
from apps.surveys.models import Answer, Assignment, Participant, ParticipantStatus, Study
from tests.surveys.flow import answers_for, consent, link

pytestmark = pytest.mark.django_db(transaction=True)


def save(client, study, assignment, code="H2", value="4", explanation="A reason."):
    url = f"/s/{study.slug}/scenario/{assignment.pk}/answer/{code}/"
    data = {f"value_{code}": value, f"explanation_{code}": explanation}
    return client.post(url, data, HTTP_HX_REQUEST="true")


def test_items_are_kept_in_memory_until_they_change(make_study):
    study = make_study(count=5, live=False)
    first = selectors.study_items(study=Study.objects.get(pk=study.pk))
    assert selectors.cached_study_items(study_id=study.pk) is first
    assert selectors.study_items(study=Study.objects.get(pk=study.pk)) is first

    item = study.items.get(code="H2")
    item.wording = "Reworded before anyone answered"
    services.survey_item_save(item=item)
    fresh = Study.objects.get(pk=study.pk)
    assert fresh.items_version > first.version
    again = selectors.study_items(study=fresh)
    assert again.by_code["H2"].wording == "Reworded before anyone answered"
    assert selectors.cached_study_items(study_id=study.pk) is again

    study.items.filter(code="P4").delete()  # a bulk delete, past any model signal
    assert "P4" not in selectors.study_items(study=Study.objects.get(pk=study.pk)).by_code


def test_a_study_saved_from_an_old_copy_keeps_its_items_version(make_study):
    study = make_study(count=5, live=False)
    stale = Study.objects.get(pk=study.pk)
    item = study.items.get(code="H3")
    item.wording = "Changed meanwhile"
    services.survey_item_save(item=item)
    bumped = Study.objects.get(pk=study.pk).items_version
    stale.name = "Renamed"
    stale.save()  # writes every column, the old items_version among them
    assert Study.objects.get(pk=study.pk).items_version == bumped


def test_items_read_inside_a_transaction_are_not_kept(make_study):
    from django.db import transaction

    study = make_study(count=5, live=False)
    with transaction.atomic():
        selectors.study_items(study=Study.objects.get(pk=study.pk))
    assert selectors.cached_study_items(study_id=study.pk) is None


def test_clearing_the_process_caches_makes_the_next_request_read_again(make_study):
    study = make_study(count=5)
    selectors.study_items(study=Study.objects.get(pk=study.pk))
    shown = study.study_scenarios.first()
    html = selectors.scenario_body_html(study_scenario=shown)

    selectors.process_caches_clear()
    assert selectors.cached_study_items(study_id=study.pk) is None
    with CaptureQueriesContext(connection) as queries:
        assert selectors.scenario_body_html(study_scenario=shown) == html
    assert len(queries) == 2  # the scenario and its response, read again
    with CaptureQueriesContext(connection) as queries:
        selectors.scenario_body_html(study_scenario=shown)
    assert len(queries) == 0


def test_an_autosave_is_one_statement_once_the_items_are_known(make_study):
    study = make_study(count=5)
    client = Client()
    consent(client, study)
    first = Assignment.objects.get(position=1)
    client.get(f"/s/{study.slug}/scenario/{first.pk}/")  # reads, and keeps, the items
    with CaptureQueriesContext(connection) as queries:
        response = save(client, study, first, explanation="Only the statement that writes.")
    assert response.status_code == 200 and "Saved" in response.content.decode()
    assert len(queries) == 1 and queries[0]["sql"].lstrip().startswith("INSERT")
    answer = Answer.objects.get()
    assert (answer.value, answer.explanation) == ("4", "Only the statement that writes.")


def test_an_autosave_the_one_statement_refuses_gets_the_full_paths_answer(make_study):
    study = make_study(count=10)
    client, other = Client(), Client()
    pid, _ = consent(client, study)
    consent(other, study)
    mine = Participant.objects.get(prolific_pid=pid)
    first = mine.assignments.get(position=1)
    theirs = Assignment.objects.exclude(participant=mine).first()
    client.get(f"/s/{study.slug}/scenario/{first.pk}/")
    assert selectors.cached_study_items(study_id=study.pk) is not None

    assert save(client, study, theirs).status_code == 404  # someone else's
    assert save(client, study, first, code="ZZ").status_code == 404  # no such question
    bad = save(client, study, first, value="9").content.decode()
    assert "Not saved" in bad and "not one of the answers" in bad
    assert not Answer.objects.exists()

    # The items change (before anyone answered): the save still lands, on the new version.
    item = study.items.get(code="H2")
    item.wording = "Reworded"
    services.survey_item_save(item=item)
    assert "Saved" in save(client, study, first).content.decode()
    version = Study.objects.get(pk=study.pk).items_version
    assert selectors.cached_study_items(study_id=study.pk).version == version

    # The link opened in another browser: this one no longer holds the survey.
    Client().get(link(study, pid))
    assert save(client, study, first, value="1").status_code == 403

    # Submitted: answers can no longer change.
    Participant.objects.filter(pk=mine.pk).update(status=ParticipantStatus.FINISHED)
    laptop = Client()
    laptop.get(link(study, pid))
    done = save(laptop, study, first, value="1").content.decode()
    assert "Not saved" in done and "submitted" in done
    assert list(Answer.objects.values_list("value", flat=True)) == ["4"]


def test_the_one_statement_autosave_refuses_nul_and_blanks_as_the_full_path_does(make_study):
    study = make_study(count=5)
    client = Client()
    consent(client, study)
    first = Assignment.objects.get(position=1)
    client.get(f"/s/{study.slug}/scenario/{first.pk}/")  # reads, and keeps, the items
    assert selectors.cached_study_items(study_id=study.pk) is not None
    for value, explanation in (("4\x00", "A reason."), ("4", "A\x00 reason.")):
        refused = save(client, study, first, value=value, explanation=explanation)
        assert refused.status_code == 400 and "cannot be saved" in refused.content.decode()
    assert not Answer.objects.exists()

    assert "Saved" in save(client, study, first, value="4", explanation="A reason.").text
    blank = save(client, study, first, value="", explanation="").content.decode()
    assert "Not saved" in blank
    assert list(Answer.objects.values_list("value", "explanation")) == [("4", "A reason.")]


def test_consent_and_demographics_take_at_most_six_queries_each(make_study):
    """The two steps with the most round trips under load (benchmarks/survey_load.py). BEGIN
    and COMMIT are round trips too, and are counted."""
    study = make_study(count=10)
    client = Client()
    pid = "a" * 24
    page = client.get(link(study, pid)).content.decode()
    shown = page.split('name="shown" value="', 1)[1].split('"', 1)[0]
    data = {
        "PROLIFIC_PID": pid,
        "STUDY_ID": "b" * 24,
        "SESSION_ID": "c" * 24,
        "decision": "agree",
        "shown": shown,
    }
    reset_queries()  # a full log (9000 entries, from making the study) would count nothing
    with CaptureQueriesContext(connection) as consenting:
        response = client.post(f"/s/{study.slug}/consent/", data)
    consent_queries = len(consenting.captured_queries)
    assert response.status_code == 302
    assert response["Location"] == f"/s/{study.slug}/instructions/"
    participant = Participant.objects.get(prolific_pid=pid)
    positions = sorted(participant.assignments.values_list("position", flat=True))
    assert positions == list(range(1, study.scenarios_per_participant + 1))
    assert participant.page_times.get(page="consent").submitted_at is not None

    client.post(f"/s/{study.slug}/instructions/")
    items = list(study.items.filter(attention_check=False))
    for assignment in participant.assignments.order_by("position"):
        client.post(f"/s/{study.slug}/scenario/{assignment.pk}/", answers_for(items))
    about = {"age": "25-34", "gender": "no_say", "education": "bachelor", "income": "no_say"}
    reset_queries()
    with CaptureQueriesContext(connection) as finishing:
        response = client.post(f"/s/{study.slug}/about-you/", about)
    finish_queries = len(finishing.captured_queries)
    assert response["Location"] == f"/s/{study.slug}/done/"
    participant.refresh_from_db()
    assert (participant.status, participant.completion_code) == ("finished", "DONE1234")
    assert set(participant.assignments.values_list("status", flat=True)) == {"completed"}
    assert participant.page_times.get(page="demographics").submitted_at is not None
    counted = {"consent": consent_queries, "demographics": finish_queries}
    assert max(counted.values()) <= 6, counted
