"""Hostile PrivacyLens scenario files and response CSVs: each is refused with a message
naming the file, the record or line and the field, through the service, the console and the
command alike, and nothing is imported."""

import copy
import html
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from apps.surveys.errors import SurveyError
from apps.surveys.models import Scenario, ScenarioResponse
from apps.surveys.privacylens import trajectory_steps
from apps.surveys.services import response_import_csv, scenario_import_json
from apps.surveys.templatetags.surveys import json_block
from tests.factories import fixture_records

pytestmark = pytest.mark.django_db
IMPORT_URL = "/admin/surveys/scenario/import/"


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def records(change=None) -> list[dict]:
    """The first two fixture records, the first one changed by `change`."""
    two = copy.deepcopy(fixture_records()[:2])
    if change:
        change(two[0])
    return two


def encoded(data) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode()


def observation(text: str):
    def change(record):
        record["trajectory"]["executable_trajectory"] = (
            f'Action: GmailSearchEmails\nAction Input: {{"keywords": ["a"]}}\nObservation: {text}'
        )

    return change


def set_field(path: str, value):
    def change(record):
        *parents, last = path.split(".")
        target = record
        for part in parents:
            target = target[part]
        target[last] = value

    return change


SCENARIOS = {
    "user_name of 201 characters": (
        encoded(records(set_field("trajectory.user_name", "x" * 201))),
        "Record 1 (main3): the field trajectory.user_name is longer than 200 characters (201).",
    ),
    "final_action of 201 characters": (
        encoded(records(set_field("trajectory.final_action", "y" * 201))),
        "the field trajectory.final_action is longer than 200 characters",
    ),
    "name with a trailing newline": (
        encoded(records(set_field("name", "main3\n"))),
        "the field name must be 1-100 letters",
    ),
    "name of 101 characters": (encoded(records(set_field("name", "m" * 101))), "field name must"),
    "name as a list": (encoded(records(set_field("name", ["main3"]))), "name must be a string"),
    "an observation nested 50,000 levels": (
        encoded(records(observation(nested(50_000)))),
        "Record 1 (main3): the field trajectory.executable_trajectory, step 1 (Observation): its "
        "JSON is nested more than 32 levels deep.",
    ),
    "an observation nested 40 levels": (
        encoded(records(observation(nested(40)))),
        "step 1 (Observation): its JSON is nested more than 32",
    ),
    "the file nested 50,000 levels": (nested(50_000).encode(), "nested more than 32 levels"),
    "a record nested 40 levels": (
        encoded(records(set_field("seed.extra", json.loads(nested(40))))),
        "[0].seed.extra",
    ),
    "escaped NUL in the task": (
        encoded(records(set_field("trajectory.user_instruction", "Reply\u0000now"))),
        "[0].trajectory.user_instruction: a NUL character (\\u0000)",
    ),
    "raw NUL byte": (b"[\x00]", "line 1, column 2: a NUL character"),
    "lone surrogate in the task": (
        json.dumps(records(set_field("trajectory.user_instruction", "Reply \ud800"))).encode(),
        "[0].trajectory.user_instruction: a lone surrogate (\\ud800)",
    ),
    "name given twice": (
        encoded(records()).replace(b'"name": "main3"', b'"name": "main3", "name": "other"', 1),
        '[0]: the key "name" appears twice',
    ),
    "raw NUL in a value": (b'[{"name": "m\x00"}]', "line 1, column 13: a NUL character"),
    "a record of 250,000 characters": (
        encoded(records(set_field("vignette.story", "z" * 250_000))),
        "Record 1 (main3): the record is 25",
    ),
    "toolkits holding an object": (
        encoded(records(set_field("trajectory.toolkits", [{"a": 1}]))),
        "trajectory.toolkits must list strings",
    ),
    "UTF-16 with a BOM": (encoded(records()).decode().encode("utf-16"), "it is UTF-16 text"),
    "UTF-16 without a BOM": (encoded(records()).decode().encode("utf-16-be"), "UTF-16"),
    "Latin-1": (
        encoded(records(set_field("trajectory.user_name", "Ren\u00e9e")))
        .decode()
        .encode("latin-1"),
        "it is not UTF-8 text",
    ),
}


def header(*rows: str, columns="scenario,response,model,prompt_version") -> bytes:
    return "\n".join([columns, *rows]).encode()


RESPONSES = {
    "model of 201 characters": (
        header(f"main3,Hello,{'m' * 201},v1"),
        "Line 2: the column model is longer than 200 characters (201).",
    ),
    "prompt_version of 51 characters": (
        header(f"main3,Hello,GPT,{'p' * 51}"),
        "Line 2: the column prompt_version is longer than 50 characters",
    ),
    "a response of 20,001 characters": (
        header(f"main3,{'r' * 20_001},GPT,v1"),
        "the column response is longer than 20,000",
    ),
    "a field past the csv module's limit": (
        header(f'main3,"{"r" * 140_000}",GPT,v1'),
        "not valid CSV (field larger than field limit",
    ),
    "more cells than columns": (header("main3,Hello,GPT,v1,extra"), "Line 2: more cells"),
    "line numbers count multi-line cells": (
        header('main3,"one\ntwo",GPT,v1', f"main3,Hi,{'m' * 201},v1"),
        "Line 4: the column model",
    ),
    "raw NUL": (header("main3,Hel\x00lo,GPT,v1"), "line 2, column 10: a NUL character"),
    "a column named twice": (
        header("main3,Hello,GPT,v1", columns="scenario,response,model,response"),
        'line 1 (the header): the column "response" appears twice',
    ),
    "UTF-16": (header("main3,Hello,GPT,v1").decode().encode("utf-16"), "it is UTF-16 text"),
    "Latin-1": (header("main3,Caf\u00e9,GPT,v1").decode().encode("latin-1"), "not UTF-8"),
    "an unknown scenario": (header("nope,Hello,GPT,v1"), "Line 2: no scenario is named 'nope'"),
}


@dataclass(frozen=True)
class Format:
    """An import format's three entry points: the service, the console's import form (its
    `kind` choice) and the management command."""

    service: Callable
    kind: str
    command: str


SCENARIO_FILE = Format(scenario_import_json, "scenarios", "import_scenarios")
RESPONSE_FILE = Format(response_import_csv, "responses", "import_responses")
WAYS = ["service", "console", "command"]


def submitted(fmt: Format, way: str, content: bytes, client, tmp_path, name: str) -> str:
    """`content`, named `name`, imported `way`: the refusal's message."""
    if way == "service":
        with pytest.raises(SurveyError) as refused:
            fmt.service(text=content, filename=name)
        return str(refused.value)
    if way == "console":
        page = client.post(
            IMPORT_URL, {"file": SimpleUploadedFile(name, content), "kind": fmt.kind}
        )
        assert page.status_code == 200
        return html.unescape(page.text)
    (tmp_path / name).write_bytes(content)
    with pytest.raises(CommandError) as refused:
        call_command(fmt.command, str(tmp_path / name))
    return str(refused.value)


@pytest.fixture
def console(client, researcher):
    client.force_login(researcher)
    return client


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_a_hostile_scenario_file_is_refused_by_name_and_place(kind, way, console, tmp_path):
    content, expected = SCENARIOS[kind]
    message = submitted(SCENARIO_FILE, way, content, console, tmp_path, "hostile.json")
    assert "hostile.json was not imported (nothing was changed)" in message
    assert expected in message
    assert Scenario.objects.count() == 0


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("kind", list(RESPONSES))
def test_a_hostile_response_csv_is_refused_by_name_and_line(
    kind, way, scenarios, console, tmp_path
):
    content, expected = RESPONSES[kind]
    message = submitted(RESPONSE_FILE, way, content, console, tmp_path, "hostile.csv")
    assert "hostile.csv was not imported (nothing was changed)" in message
    assert expected in message
    assert ScenarioResponse.objects.count() == 0


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("fmt", [SCENARIO_FILE, RESPONSE_FILE], ids=lambda f: f.kind)
def test_a_file_over_20_mb_is_refused_before_it_is_read(fmt, way, console, tmp_path):
    if way == "command":
        with (tmp_path / "big.json").open("wb") as big:  # sparse: its bytes are never read
            big.truncate(20 * 1024 * 1024 + 1)
        with pytest.raises(CommandError, match=r"big\.json was not imported .*larger than 20 MB"):
            call_command(fmt.command, str(tmp_path / "big.json"))
    else:
        message = submitted(fmt, way, b" " * (20 * 1024 * 1024 + 1), console, tmp_path, "big.json")
        assert "big.json was not imported" in message and "larger than 20 MB" in message
    assert not Scenario.objects.exists() and not ScenarioResponse.objects.exists()


def test_a_utf8_bom_is_accepted_in_both_formats(db):
    assert scenario_import_json(text=b"\xef\xbb\xbf" + encoded(records())).created == 2
    csv_text = b"\xef\xbb\xbf" + header("main3,Hello,GPT,v1")
    assert response_import_csv(text=csv_text, filename="ok.csv") == 1


def test_a_stored_deeply_nested_observation_is_shown_as_text(db):
    # A record stored before imports checked depth must not take its pages down.
    _, steps = trajectory_steps(f"Action: A\nObservation: {nested(50_000)}")
    assert steps[0].observation.data is None
    assert json_block(steps[0].observation).startswith('<pre class="json-text">[[[')
