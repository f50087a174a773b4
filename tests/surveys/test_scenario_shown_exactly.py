"""A scenario's page shows its trajectory as the record holds it: every label found wherever it
stands but never inside JSON, every key and string with the characters the record means, every
number spelled as the record spells it, and long results folded but all there.

The expected side is read from the record by means of its own (a line-based split and a regex
over the JSON text), not by the code under test, and compared with what the page's HTML holds,
in order, step by step."""

import json
import re
from html.parser import HTMLParser

import pytest
from django.utils.html import escape

from apps.surveys import selectors
from apps.surveys.errors import RecordError
from apps.surveys.models import Scenario
from apps.surveys.privacylens import record_check, trajectory_steps
from tests.factories import fixture_records

# The fixture's labels all start a line, some indented (main12): a split on that is an oracle
# for these records that does not share the page's parser.
LINE_LABEL = re.compile(r"^[ \t]*(Action Input|Action|Observation):[ \t]?", re.MULTILINE)
JSON_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*")(?P<key>\s*:)?'
    r"|(?P<literal>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)"
    r"|(?P<empty>\{\s*\}|\[\s*\])"
)
PART = {"Action Input": "What it looked for", "Observation": "What it got back"}

# A hand-made trajectory: labels mid-line and indented, labels inside JSON strings (which are
# content), and numbers that re-serialising would respell.
HAND_MADE = (
    'Action: GmailSearchEmails Action Input: {"keywords": ["Observation: not a label"]}'
    '   Observation: {"emails": [{"id": "e1", "body": "Hi,\\nAction: none here.\\n'
    'Observation: nor here", "amount": 500.00, "count": 1e3, "delta": -0.0, "paid": true, '
    '"note": null, "tags": [], "meta": {}}]}\n'
    "\tAction: BankManagerGetBalance\n"
    '    Action Input: {"account": "checking"}\n'
    '    Observation: {"balance": 1200.50, "currency": "USD"}'
    "\n\nAction: NotionManagerSearchContent\nAction Input: not JSON, Observation: plain text"
)


class Shown(HTMLParser):
    """What the scenario page shows of the steps, in order: ("action", name), ("part", its
    label), ("key" | "string" | "literal" | "text", the characters shown)."""

    KINDS = {"json-string": "string", "json-literal": "literal", "json-text": "text"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.shown, self.open, self.depth = [], None, 0
        self.in_title = False

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if self.open:
            self.depth += 1
            return
        if tag == "h3" and "step-title" in classes:
            self.in_title = True
        kind = (
            "action"
            if tag == "code" and self.in_title
            else "key"
            if tag == "dt"
            else "part"
            if "step-label" in classes
            else next((k for c, k in self.KINDS.items() if c in classes), None)
        )
        if kind:
            self.open, self.depth, self.text = kind, 0, ""

    def handle_endtag(self, tag):
        if tag == "h3":
            self.in_title = False
        if not self.open:
            return
        if self.depth:
            self.depth -= 1
            return
        self.shown.append((self.open, self.text))
        self.open = None

    def handle_data(self, data):
        if self.open:
            self.text += data


def shown_steps(page: str) -> list[tuple[str, str]]:
    parser = Shown()
    parser.feed(
        page[page.index('<ol class="steps">') : page.index('<section class="panel response"')]
    )
    # A folded result's label also names its action; the part is what is compared.
    return [
        (kind, "What it got back" if text.startswith("What it got back") else text)
        if kind == "part"
        else (kind, text)
        for kind, text in parser.shown
    ]


def json_tokens(text: str) -> list[tuple[str, str]]:
    tokens = []
    for match in JSON_TOKEN.finditer(text):
        if match["string"]:
            tokens.append(("key" if match["key"] else "string", json.loads(match["string"])))
        else:
            tokens.append(("literal", match["literal"] or re.sub(r"\s", "", match["empty"])))
    return tokens


def expected_steps(trajectory: str) -> list[tuple[str, str]]:
    pieces = LINE_LABEL.split(trajectory)
    assert not pieces[0].strip(), "no fixture trajectory has text before its first label"
    expected = []
    for label, body in zip(pieces[1::2], pieces[2::2], strict=True):
        if label == "Action":
            expected.append(("action", body.strip()))
            continue
        expected.append(("part", PART[label]))
        try:
            json.loads(body)
        except ValueError:
            expected.append(("text", body.strip()))
        else:
            expected.extend(json_tokens(body))
    return expected


def page_of(study_scenario) -> str:
    return str(selectors.scenario_body_html(study_scenario=study_scenario))


def test_every_fixture_record_is_shown_with_every_string_and_number_as_the_record_has_it(
    make_study,
):
    study = make_study(count=40, live=False)
    checked = set()
    for study_scenario in study.study_scenarios.select_related("scenario"):
        scenario = study_scenario.scenario
        page = page_of(study_scenario)
        expected = expected_steps(scenario.trajectory)
        assert shown_steps(page) == expected, scenario.name
        # Escaped, each one is in the page's HTML as it stands in the record.
        assert escape(scenario.task) in page and escape(scenario.user_name) in page
        for kind, text in expected:
            assert escape(text) in page, (scenario.name, kind, text)
        checked.add(scenario.name)
    assert len(checked) == 40 and "main12" in checked


def test_an_indented_label_in_a_fixture_record_starts_its_part(db):
    record = next(r for r in fixture_records() if r["name"] == "main12")
    trajectory = record["trajectory"]["executable_trajectory"]
    assert "\n Action Input:" in trajectory and "\n Observation:" in trajectory
    _, steps = trajectory_steps(trajectory)
    assert [s.action for s in steps] == ["GoogleCalendarSearchEvents", "NotionManagerSearchContent"]
    assert steps[1].action_input.data == {"keywords": "school week of February 14"}
    assert [r["id"] for r in steps[1].observation.data["results"]] == ["p1", "p7"]


def test_labels_mid_line_indented_or_inside_json_are_split_as_they_should_be(db):
    preamble, steps = trajectory_steps(HAND_MADE)
    assert preamble == ""
    assert [s.action for s in steps] == [
        "GmailSearchEmails",
        "BankManagerGetBalance",
        "NotionManagerSearchContent",
    ]
    first, second, third = steps
    assert first.action_input.data == {"keywords": ["Observation: not a label"]}
    email = first.observation.data["emails"][0]
    assert email["body"] == "Hi,\nAction: none here.\nObservation: nor here"
    assert first.observation.text.endswith('"tags": [], "meta": {}}]}')
    assert second.action_input.text == '{"account": "checking"}'
    assert second.observation.text == '{"balance": 1200.50, "currency": "USD"}'
    # Not JSON: the next label ends it, wherever it stands.
    assert (third.action_input.text, third.action_input.is_json) == ("not JSON,", False)
    assert (third.observation.text, third.observation.is_json) == ("plain text", False)
    # Nothing but the labels and the space around them is taken out.
    rebuilt = "".join(
        f"Action: {s.action}"
        + (f"Action Input: {s.action_input.text}" if s.action_input else "")
        + (f"Observation: {s.observation.text}" if s.observation else "")
        for s in steps
    )
    assert "".join(rebuilt.split()) == "".join(HAND_MADE.split())


def test_the_hand_made_trajectory_is_shown_step_by_step_as_written(make_study):
    study_scenario = make_study(count=1, live=False).study_scenarios.get()
    Scenario.objects.filter(pk=study_scenario.scenario_id).update(trajectory=HAND_MADE)
    shown = shown_steps(page_of(study_scenario))
    assert shown == [
        ("action", "GmailSearchEmails"),
        ("part", "What it looked for"),
        ("key", "keywords"),
        ("string", "Observation: not a label"),
        ("part", "What it got back"),
        ("key", "emails"),
        ("key", "id"),
        ("string", "e1"),
        ("key", "body"),
        ("string", "Hi,\nAction: none here.\nObservation: nor here"),
        ("key", "amount"),
        ("literal", "500.00"),
        ("key", "count"),
        ("literal", "1e3"),
        ("key", "delta"),
        ("literal", "-0.0"),
        ("key", "paid"),
        ("literal", "true"),
        ("key", "note"),
        ("literal", "null"),
        ("key", "tags"),
        ("literal", "[]"),
        ("key", "meta"),
        ("literal", "{}"),
        ("action", "BankManagerGetBalance"),
        ("part", "What it looked for"),
        ("key", "account"),
        ("string", "checking"),
        ("part", "What it got back"),
        ("key", "balance"),
        ("literal", "1200.50"),
        ("key", "currency"),
        ("string", "USD"),
        ("action", "NotionManagerSearchContent"),
        ("part", "What it looked for"),
        ("text", "not JSON,"),
        ("part", "What it got back"),
        ("text", "plain text"),
    ]


def test_strings_are_shown_as_the_characters_their_escapes_stand_for(make_study):
    study_scenario = make_study(count=1, live=False).study_scenarios.get()
    trajectory = (
        'Action: A\nObservation: {"caf\\u00e9": "say \\"hi\\"\\tthen <b>go</b>\\\\", '
        '"big": 12345678901234567890123, "tiny": 1E-400, "r\\u00e9p": ["\\ud83d\\ude00"]}'
    )
    Scenario.objects.filter(pk=study_scenario.scenario_id).update(trajectory=trajectory)
    page = page_of(study_scenario)
    assert shown_steps(page)[2:] == [
        ("key", "café"),
        ("string", 'say "hi"\tthen <b>go</b>\\'),
        ("key", "big"),
        ("literal", "12345678901234567890123"),
        ("key", "tiny"),
        ("literal", "1E-400"),
        ("key", "rép"),
        ("string", "😀"),
    ]
    assert escape('say "hi"\tthen <b>go</b>\\') in page and "<b>go</b>" not in page


def test_a_repeated_key_is_shown_each_time_it_is_written(make_study):
    study_scenario = make_study(count=1, live=False).study_scenarios.get()
    trajectory = 'Action: A\nObservation: {"to": "ann@example.com", "to": "bo@example.com"}'
    Scenario.objects.filter(pk=study_scenario.scenario_id).update(trajectory=trajectory)
    assert shown_steps(page_of(study_scenario))[2:] == [
        ("key", "to"),
        ("string", "ann@example.com"),
        ("key", "to"),
        ("string", "bo@example.com"),
    ]


def test_a_long_result_is_folded_with_a_summary_and_a_short_one_is_not(make_study):
    study_scenario = make_study(count=1, live=False).study_scenarios.get()
    long = json.dumps(
        {"emails": [{"id": f"e{i}", "subject": "Lunch on Friday"} for i in range(20)]}
    )
    trajectory = (
        f'Action: GmailSearchEmails\nAction Input: {{"q": "lunch"}}\nObservation: {long}\n'
        'Action: GmailReadEmail\nAction Input: {"id": "e1"}\nObservation: {"subject": "Lunch"}'
    )
    Scenario.objects.filter(pk=study_scenario.scenario_id).update(trajectory=trajectory)
    page = page_of(study_scenario)
    folds = re.findall(r"<details[^>]*>.*?</details>", page, re.DOTALL)
    assert len(folds) == 1 and folds[0].startswith('<details class="step-part fold">')
    summary = re.sub(r"<[^>]+>|\s+", " ", re.search(r"<summary>(.*?)</summary>", folds[0])[1])
    assert " ".join(summary.split()) == (
        f"What it got back from GmailSearchEmails ({len(long):,} characters) Show Hide"
    )
    assert folds[0].count('<span class="json-string">Lunch on Friday</span>') == 20
    assert '<p class="step-label">What it got back</p><dl class="json-object"><dt>subject' in page


def test_a_record_whose_json_nests_too_deep_for_a_page_is_refused_by_step(db):
    record = fixture_records()[0]
    deep = "[" * 40 + "]" * 40
    record["trajectory"]["executable_trajectory"] = (
        f'Action: A Action Input: {{"q": "Observation: x"}} Observation: {{"nested": {deep}}}'
    )
    with pytest.raises(RecordError, match=r"step 1 \(Observation\): its JSON is nested more"):
        record_check(record, 0)


def test_a_record_whose_json_does_not_close_is_accepted_and_shown_as_text(db):
    record = fixture_records()[0]
    record["trajectory"]["executable_trajectory"] = "Action: A Observation: [[ Action: B"
    assert record_check(record, 0) is record
    _, steps = trajectory_steps(record["trajectory"]["executable_trajectory"])
    assert [(s.action, s.observation and s.observation.text) for s in steps] == [
        ("A", "[["),
        ("B", None),
    ]


def test_a_response_that_is_an_actions_input_is_shown_as_its_fields(make_study):
    """PrivacyLens's agent prompt answers with the final action's input: participants read
    its fields (the message, its recipient) rather than JSON punctuation; other text stays
    text."""
    from apps.surveys.models import ResponseSource, ScenarioResponse, StudyScenario
    from apps.surveys.selectors import process_caches_clear, scenario_body_html

    study = make_study(live=False, count=1)
    scenario = study.study_scenarios.get().scenario
    text = '{"recipient_id": "Emily", "message": "Hi Emily,\\n\\nGood luck <b>Friday</b>."}'
    response = ScenarioResponse.objects.create(
        scenario=scenario, text=text, source=ResponseSource.IMPORTED, model_name="m"
    )
    ss = StudyScenario.objects.get(study=study, scenario=scenario)
    ss.response = response
    ss.save(update_fields=["response"])
    process_caches_clear()
    page = str(scenario_body_html(study_scenario=ss))
    assert f"<code>{scenario.final_action}</code>" in page
    assert "<dt>recipient_id</dt>" in page and "<dt>message</dt>" in page
    assert "Hi Emily,\nGood luck &lt;b&gt;Friday&lt;/b&gt;." in page.replace("\n\n", "\n")
    assert '{"recipient_id"' not in page
