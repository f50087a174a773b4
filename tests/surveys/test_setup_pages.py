"""Setting up studies on the researcher's pages: importing scenarios and responses, and a
study's survey items (frozen once anyone has answered), for researchers only."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from apps.accounts.roles import Role
from apps.surveys import services
from apps.surveys.models import Scenario, ScenarioResponse, SurveyItem
from tests.factories import FIXTURE, fixture_records, new_pid, responses_csv

IMPORT = reverse("surveys:setup_import")


def items_url(study) -> str:
    return reverse("surveys:setup_items", args=[study.pk])


def item_url(item) -> str:
    return reverse("surveys:setup_item", args=[item.study_id, item.pk])


def item_data(**fields) -> dict:
    return {
        "code": "X1",
        "wording": "How clear is the response?",
        "kind": "scale",
        "scale_labels": "Not clear\nSomewhat clear\nVery clear",
        "explanation_required": "on",
        "group": "",
        "order": 20,
        "expected_value": "",
        "on_page": 1,
        **fields,
    }


def answered(study) -> None:
    params = services.ProlificParams(new_pid(), "b" * 24, "c" * 24)
    participant = services.participant_consent(study=study, params=params, consent_seconds=12)
    services.answer_save(
        participant=participant,
        assignment_id=participant.assignments.first().pk,
        item=study.items.get(code="H2"),
        value="3",
        explanation=None,
    )


@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER])
def test_only_researchers_reach_the_setup_pages(role_client, role, make_study):
    study = make_study(count=2, live=False)
    item = study.items.get(code="H2")
    client = role_client(role)
    for url in (IMPORT, items_url(study), item_url(item)):
        assert Client().get(url)["Location"].startswith(reverse("login"))  # signed out
        expected = 200 if role == Role.RESEARCHER else 403
        assert client.get(url).status_code == expected, url
    if role != Role.RESEARCHER:
        client.post(item_url(item), item_data(code="H2", wording="Changed"))
        client.post(items_url(study), item_data())
        upload = SimpleUploadedFile("s.json", json.dumps(fixture_records()[:1]).encode())
        client.post(IMPORT, {"kind": "scenarios", "file": upload})
        assert study.items.get(code="H2").wording != "Changed"
        assert not study.items.filter(code="X1").exists()
        assert Scenario.objects.count() == 40  # the fixture's, none added


@pytest.mark.django_db
def test_scenarios_import_with_counts_and_appear_in_the_history(role_client):
    client = role_client(Role.RESEARCHER)
    records = fixture_records()[:3]
    upload = SimpleUploadedFile("three.json", json.dumps(records).encode())
    response = client.post(IMPORT, {"kind": "scenarios", "file": upload}, follow=True)
    page = response.text
    assert "three.json: 3 scenario(s) imported, 0 skipped (already there, unchanged)" in page
    assert Scenario.objects.count() == 3
    assert "3 scenarios and 0 imported responses" in page
    history = page[page.index('id="recent-imports"') :]
    assert '<td class="num">3</td>' in history

    again = SimpleUploadedFile("again.json", FIXTURE.read_bytes())
    page = client.post(IMPORT, {"kind": "scenarios", "file": again}, follow=True).text
    assert "again.json: 37 scenario(s) imported, 3 skipped" in page


@pytest.mark.django_db
def test_responses_import_into_a_study(role_client, scenarios):
    client = role_client(Role.RESEARCHER)
    csv = responses_csv(scenarios[:2]).encode()
    upload = SimpleUploadedFile("answers.csv", csv)
    page = client.post(IMPORT, {"kind": "responses", "file": upload}, follow=True).text
    assert "answers.csv: 2 response(s) imported, no errors." in page
    assert ScenarioResponse.objects.count() == 2


@pytest.mark.django_db
def test_a_bad_scenario_file_is_refused_naming_file_record_and_field_and_nothing_is_stored(
    role_client,
):
    client = role_client(Role.RESEARCHER)
    records = fixture_records()[:8]
    records[6]["trajectory"].pop("user_instruction")
    upload = SimpleUploadedFile("bad<b>.json", json.dumps(records).encode())
    response = client.post(IMPORT, {"kind": "scenarios", "file": upload})
    page = response.text
    assert response.status_code == 422
    assert "bad&lt;b&gt;.json was not imported (nothing was changed):" in page
    assert "bad<b>" not in page
    assert "<li>Record 7 (main41): the field trajectory.user_instruction is missing.</li>" in page
    assert Scenario.objects.count() == 0


@pytest.mark.django_db
def test_a_bad_response_line_is_refused_naming_line_and_column(role_client, scenarios):
    client = role_client(Role.RESEARCHER)
    before = ScenarioResponse.objects.count()
    csv = b"scenario,response,model\nmain3,A reply,gpt\nmain4,,gpt\n"
    upload = SimpleUploadedFile("replies.csv", csv)
    page = client.post(IMPORT, {"kind": "responses", "file": upload}).text
    assert "replies.csv was not imported (nothing was changed):" in page
    assert "<li>Line 3: the column response is empty.</li>" in page
    assert ScenarioResponse.objects.count() == before


@pytest.mark.django_db
def test_an_import_without_a_file_is_refused_on_its_field(role_client):
    response = role_client(Role.RESEARCHER).post(IMPORT, {"kind": "scenarios"})
    assert response.status_code == 422 and "This field is required." in response.text


@pytest.mark.django_db
def test_a_researcher_adds_and_edits_a_studys_items(role_client, make_study):
    study = make_study(count=2, live=False)
    client = role_client(Role.RESEARCHER)
    page = client.get(items_url(study)).text
    assert "They can be changed until someone answers the study" in page
    response = client.post(items_url(study), item_data(wording="Is <em>this</em> clear?"))
    assert response.status_code == 302
    added = study.items.get(code="X1")
    assert added.scale_labels == ["Not clear", "Somewhat clear", "Very clear"]
    listing = client.get(items_url(study)).text
    assert "Is &lt;em&gt;this&lt;/em&gt; clear?" in listing and "<em>this</em>" not in listing

    edit = client.get(item_url(added)).text
    assert "Not clear\nSomewhat clear\nVery clear</textarea>" in edit
    data = item_data(kind="yes_no", scale_labels="", explanation_required="")
    assert client.post(item_url(added), data).status_code == 302
    added.refresh_from_db()
    assert (added.kind, added.scale_labels, added.explanation_required) == ("yes_no", [], False)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"code": "H 2"}, "Enter a valid value."),
        ({"code": "H2"}, "Survey item with this Study and Code already exists."),
        ({"scale_labels": "Only one"}, "A labelled scale needs at least two labels."),
        ({"kind": "yes_no"}, "A yes / no item has no scale labels."),
        ({"attention_check": "on"}, "An attention check needs the answer it expects."),
    ],
)
def test_an_item_that_breaks_a_rule_is_refused_and_nothing_is_saved(
    role_client, make_study, fields, message
):
    study = make_study(count=2, live=False)
    client = role_client(Role.RESEARCHER)
    before = list(SurveyItem.objects.values_list("pk", "code", "wording", "kind"))
    response = client.post(items_url(study), item_data(**fields))
    assert response.status_code == 422
    assert message in response.text
    assert list(SurveyItem.objects.values_list("pk", "code", "wording", "kind")) == before


@pytest.mark.django_db
def test_items_are_frozen_on_the_page_once_anyone_answered(role_client, make_study):
    study = make_study(count=5)
    answered(study)
    client = role_client(Role.RESEARCHER)
    item = study.items.get(code="H2")
    page = client.get(items_url(study)).text
    assert "its items are frozen" in page and "Add an item" not in page
    assert "<form" not in page.split("<main", 1)[1]
    response = client.post(item_url(item), item_data(code="H2", wording="Reworded"))
    assert response.status_code == 422
    assert "Someone has answered this study: its questions are frozen." in response.text
    response = client.post(items_url(study), item_data())
    assert response.status_code == 422
    item.refresh_from_db()
    assert item.wording != "Reworded" and not study.items.filter(code="X1").exists()


@pytest.mark.django_db
def test_the_study_pages_link_to_the_setup_pages_not_the_console(role_client, make_study):
    study = make_study(count=2, live=False)
    client = role_client(Role.RESEARCHER)
    studies = client.get(reverse("surveys:study_list")).text
    assert f'href="{IMPORT}"' in studies and f'href="{items_url(study)}"' in studies
    home = client.get(reverse("home")).text
    assert f'href="{IMPORT}">Import scenarios and responses</a>' in home
