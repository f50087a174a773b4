"""No CSV the product writes, but the approvals CSV that Prolific needs, holds a participant's
Prolific id or session id: the console's exports of every model and the survey report's
tables carry a pseudonym (stable within a study, different across studies). Every cell of
every export is safe to open in a spreadsheet, for participants whose ids and explanations
start with what a spreadsheet would run."""

import csv
import io
import re
import uuid

import pytest
from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import reverse

from apps.accounts.roles import Role
from apps.console.csv_export import spreadsheet_safe
from apps.console.sites import ReadOnlyAdmin, ResearcherAdminSite
from apps.surveys.models import Answer, Participant
from apps.surveys.pseudonyms import pseudonym
from apps.surveys.services import participants_approve
from tests.factories import user_with_role
from tests.surveys.flow import finish

pytestmark = pytest.mark.django_db

LEADS = ["=", "+", "-", "@", "\uff1d", "\t"]
NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")


def hostile_ids(lead: str) -> tuple[str, str]:
    """A PID and a session id that start with `lead` and appear nowhere else."""
    tag = uuid.uuid4().hex
    return f"{lead}PID{tag[:20]}"[:24], f"{lead}SES{tag[20:]}"[:24]


def people_finished(study, count: int) -> list[Participant]:
    """`count` people through the whole survey (each in a browser of their own)."""
    return [finish(Client(), study, session=uuid.uuid4().hex[:24]) for _ in range(count)]


@pytest.fixture
def hostile(make_study):
    """A finished, approved study whose people's PIDs, session ids and explanations start
    with a formula's first character; the ids are set after the survey (a link's must be
    hexadecimal) as a careless import or a future format could leave them."""
    study = make_study(count=5, ratings_per_scenario=10)
    participants = people_finished(study, len(LEADS))
    ids = {}
    for participant, lead in zip(participants, LEADS, strict=True):
        pid, session = hostile_ids(lead)
        Participant.objects.filter(pk=participant.pk).update(
            prolific_pid=pid, prolific_session_id=session
        )
        Answer.objects.filter(assignment__participant=participant).update(
            explanation=f'{lead}HYPERLINK("http://x.test") said {lead}'
        )
        ids[participant.pk] = (pid, session)
    researcher = user_with_role(Role.RESEARCHER)
    participants_approve(study=study, participant_ids=list(ids), user=researcher)
    return study, ids


# The bank's one row of targets: its list is its edit page, and it holds no participant.
NO_LIST = {"questions.QuotaSettings"}


def console_exports(client) -> dict[str, str]:
    """Every model's console export, of all its rows."""
    bodies = {}
    for model in admin.site._registry:
        meta = model._meta
        if meta.label in NO_LIST:
            continue
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        response = client.post(
            url, {"action": "export_as_csv", "select_across": "1", "_selected_action": ["0"]}
        )
        assert response.status_code == 200, (meta.label, response.content[:300])
        bodies[meta.label] = b"".join(response.streaming_content).decode()
    return bodies


def report_exports(client, study) -> dict[str, str]:
    """Every CSV that the study's survey report links to."""
    page = client.get(reverse("analysis:survey_report", args=[study.pk])).content.decode()
    links = sorted(set(re.findall(r'href="([^"]+\.csv)"', page)))
    assert len(links) >= 5, links
    return {link: b"".join(client.get(link).streaming_content).decode() for link in links}


def cells(text: str):
    for row in csv.reader(io.StringIO(text, newline="")):
        yield from row


def test_no_export_but_the_approvals_csv_holds_a_prolific_id(client, hostile, researcher):
    study, ids = hostile
    client.force_login(researcher)
    exports = {**console_exports(client), **report_exports(client, study)}
    assert {
        "surveys.Participant",
        "surveys.Answer",
        "surveys.Assignment",
        "surveys.PageTime",
    } <= set(exports)
    # The disagreement browser is a page, not a file; it names no one either.
    disagreements = client.get(reverse("analysis:survey_disagreements", args=[study.pk]))
    exports["disagreements"] = disagreements.content.decode()
    for name, text in exports.items():
        for pid, session in ids.values():
            assert pid not in text, name
            assert session not in text, name
    approvals = client.get(reverse("surveys:approvals_csv", args=[study.pk]))
    text = b"".join(approvals.streaming_content).decode()
    for pid, session in ids.values():  # Prolific needs them: the approvals CSV has them all
        assert pid in text and session in text


def test_every_cell_of_every_export_is_safe_in_a_spreadsheet(client, hostile, researcher):
    study, _ids = hostile
    client.force_login(researcher)
    exports = {**console_exports(client), **report_exports(client, study)}
    approvals = client.get(reverse("surveys:approvals_csv", args=[study.pk]))
    exports["approvals"] = b"".join(approvals.streaming_content).decode()
    explanations = 0
    for name, text in exports.items():
        for cell in cells(text):
            assert NUMBER.fullmatch(cell) or spreadsheet_safe(cell) == cell, (name, cell)
            explanations += "HYPERLINK" in cell
    assert explanations >= len(LEADS)  # the hostile explanations were exported, neutralised
    answers = list(csv.DictReader(io.StringIO(exports["surveys.Answer"], newline="")))
    assert {a["explanation"][:2] for a in answers} == {"'" + lead for lead in LEADS}


def pseudonyms_by_export(client) -> dict[str, set[str]]:
    exports = console_exports(client)
    found = {}
    for label in (
        "surveys.Participant",
        "surveys.Answer",
        "surveys.Assignment",
        "surveys.PageTime",
    ):
        rows = csv.DictReader(io.StringIO(exports[label], newline=""))
        found[label] = {row["participant pseudonym"] for row in rows}
    return found


def test_a_pseudonym_is_stable_within_a_study_and_differs_across_studies(
    client, make_study, researcher
):
    first, second = make_study(count=5), make_study(count=5, name="Second study")
    person = people_finished(first, 1)[0]
    # The same person takes the second study too.
    again = finish(Client(), second, pid=person.prolific_pid, session=uuid.uuid4().hex[:24])
    client.force_login(researcher)
    expected = {
        pseudonym(study_id=first.pk, prolific_pid=person.prolific_pid),
        pseudonym(study_id=second.pk, prolific_pid=again.prolific_pid),
    }
    assert len(expected) == 2  # one person, two studies, two pseudonyms
    once, twice = pseudonyms_by_export(client), pseudonyms_by_export(client)
    assert once == twice
    for label, found in once.items():
        assert found == expected, label


def test_the_console_refuses_an_export_that_names_a_prolific_id():
    site = ResearcherAdminSite(name="refusing")

    class Named(ReadOnlyAdmin):
        csv_fields = ("id", "prolific_pid")

    class Reached(ReadOnlyAdmin):
        csv_fields = ("id", ("session", "assignment__participant__prolific_session_id"))

    class Everything(ReadOnlyAdmin):
        pass  # every concrete column, PROLIFIC_PID among them

    for model, admin_class in ((Participant, Named), (Answer, Reached), (Participant, Everything)):
        with pytest.raises(ImproperlyConfigured, match="approvals CSV"):
            site.register(model, admin_class)
        assert model not in site._registry


def test_the_consoles_answers_list_names_the_participant_scenario_and_place(
    client, make_study, researcher
):
    study = make_study(count=5, ratings_per_scenario=3)
    person = people_finished(study, 1)[0]
    client.force_login(researcher)
    page = client.get(reverse("admin:surveys_answer_changelist")).content.decode()
    assignment = person.assignments.select_related("study_scenario__scenario").first()
    shown = pseudonym(study_id=study.pk, prolific_pid=person.prolific_pid)
    # The assignment's own name, the Prolific ID and the place, is not how a row is shown.
    assert re.search(rf'<th class="field-participant"><a [^>]*>{shown}</a></th>', page)
    assert f'<td class="field-scenario">{assignment.study_scenario.scenario.name}</td>' in page
    assert f'<td class="field-position">{assignment.position}</td>' in page
