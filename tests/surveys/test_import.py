import copy
import json

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.roles import Role
from apps.surveys.errors import SurveyError
from apps.surveys.models import Scenario, ScenarioResponse
from apps.surveys.privacylens import trajectory_steps
from apps.surveys.services import response_import_csv, scenario_import_json
from tests.factories import FIXTURE, fixture_records


def test_all_40_fixture_records_import_verbatim(db):
    summary = scenario_import_json(text=FIXTURE.read_bytes())
    assert (summary.created, summary.unchanged) == (40, 0)
    for record in fixture_records():
        scenario = Scenario.objects.get(name=record["name"])
        assert json.loads(scenario.record_json) == record
        assert list(json.loads(scenario.record_json)) == list(record), "key order kept"
        assert scenario.task == record["trajectory"]["user_instruction"]
        assert scenario.trajectory == record["trajectory"]["executable_trajectory"]


def test_every_fixture_trajectory_splits_into_steps_losing_no_content(db):
    for record in fixture_records():
        text = record["trajectory"]["executable_trajectory"]
        preamble, steps = trajectory_steps(text)
        assert steps and all(step.action for step in steps)
        rebuilt = [preamble]
        for step in steps:
            rebuilt.append(f"Action: {step.action}")
            if step.action_input:
                rebuilt.append(f"Action Input: {step.action_input.text}")
            if step.observation:
                rebuilt.append(f"Observation: {step.observation.text}")
        # Only the line breaks around the labels may differ; every other character is kept.
        assert "".join("\n".join(rebuilt).split()) == "".join(text.split()), record["name"]


def test_a_step_that_is_not_json_is_kept_as_text(db):
    _, steps = trajectory_steps(
        'Action: A\nAction Input: {\\"max_count\\": 10}\nObservation: {"ok": true}'
    )
    assert not steps[0].action_input.is_json
    assert steps[0].action_input.text == '{\\"max_count\\": 10}'
    assert steps[0].observation.data == {"ok": True}


def test_importing_again_changes_nothing(db):
    scenario_import_json(text=FIXTURE.read_bytes())
    summary = scenario_import_json(text=FIXTURE.read_bytes())
    assert (summary.created, summary.unchanged) == (0, 40)
    assert Scenario.objects.count() == 40


@pytest.mark.parametrize(
    "break_it,message",
    [
        (
            lambda r: r["trajectory"].pop("user_instruction"),
            "Record 7 (main41): the field trajectory.user_instruction is missing.",
        ),
        (
            lambda r: r["trajectory"].update(toolkits="Gmail"),
            "Record 7 (main41): the field trajectory.toolkits must be a list.",
        ),
        (lambda r: r.pop("seed"), "Record 7 (main41): the field seed is missing."),
        (
            lambda r: r["trajectory"].update(executable_trajectory="  "),
            "Record 7 (main41): the field trajectory.executable_trajectory is empty.",
        ),
        (lambda r: r.update(name="main 24!"), "Record 7 (main 24!): the field name must be"),
    ],
)
def test_a_bad_record_is_refused_by_name_and_field_and_nothing_is_imported(db, break_it, message):
    records = fixture_records()
    break_it(records[6])
    with pytest.raises(SurveyError) as raised:
        scenario_import_json(text=json.dumps(records))
    assert str(raised.value).startswith(message)
    assert Scenario.objects.count() == 0


def test_a_changed_record_under_an_imported_name_is_refused(db):
    scenario_import_json(text=FIXTURE.read_bytes())
    records = fixture_records()
    changed = copy.deepcopy(records[0])
    changed["trajectory"]["user_instruction"] += " (edited)"
    with pytest.raises(SurveyError, match="Record 2 \\(main3\\): a different scenario"):
        scenario_import_json(text=json.dumps([records[1], changed]))


def test_repeated_names_in_one_file_are_refused(db):
    records = fixture_records()
    with pytest.raises(SurveyError, match="Record 41 \\(main3\\): the field name repeats record 1"):
        scenario_import_json(text=json.dumps([*records, records[0]]))


def test_import_scenarios_command(db, tmp_path):
    call_command("import_scenarios", str(FIXTURE))
    assert Scenario.objects.count() == 40
    bad = tmp_path / "bad.json"
    bad.write_text("[{]")
    with pytest.raises(
        CommandError,
        match=r"bad\.json was not imported \(nothing was changed\): "
        r"The file cannot be imported: it is not valid JSON",
    ):
        call_command("import_scenarios", str(bad))


def test_console_import_page_imports_scenarios_and_reports_errors(role_client, tmp_path):
    client = role_client(Role.RESEARCHER)
    records = fixture_records()
    records[3]["trajectory"].pop("final_action")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    with bad.open("rb") as fh:
        page = client.post("/admin/surveys/scenario/import/", {"file": fh, "kind": "scenarios"})
    assert (
        "bad.json was not imported (nothing was changed): Record 4 (main14): the field "
        "trajectory.final_action is missing." in page.content.decode()
    )
    assert Scenario.objects.count() == 0
    with FIXTURE.open("rb") as fh:
        done = client.post("/admin/surveys/scenario/import/", {"file": fh, "kind": "scenarios"})
    assert done.status_code == 302 and Scenario.objects.count() == 40


def test_responses_import_from_csv_with_provenance(scenarios):
    text = 'scenario,response,model,prompt_version\nmain3,"Hi Emily, good luck!",GPT-5,privacy v2\n'
    assert response_import_csv(text=text) == 1
    assert response_import_csv(text=text) == 0
    response = ScenarioResponse.objects.get()
    assert response.provenance == "GPT-5, prompt privacy v2 (imported from csv)"
    assert not response.offline


def test_responses_csv_with_an_unknown_scenario_imports_nothing(scenarios):
    text = "scenario,response,model\nmain3,ok,GPT-5\nnope,ok,GPT-5\n"
    with pytest.raises(SurveyError, match="Line 3: no scenario is named 'nope'"):
        response_import_csv(text=text)
    assert not ScenarioResponse.objects.exists()
