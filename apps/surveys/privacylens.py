r"""PrivacyLens records: what an importable record must hold, and its trajectory as steps.

A record (SALT-NLP/PrivacyLens `data/main_data.json`) has `name`, `seed`, `vignette` and
`trajectory`; the trajectory's `executable_trajectory` is the text of the agent's tool calls:

    Action: GmailSearchEmails
    Action Input: {"keywords": ["party"]}
    Observation: {"emails": [...]}

Participants see the task (`user_instruction`) and these steps. The text is split, never
rewritten: a step's input or observation that is not valid JSON is shown as the text it is.
A label counts wherever it stands, mid-line or indented (11 of the 493 records have one so),
but never inside a JSON value: "Observation:" in an email's body is part of the email.

JSON is shown as its source spells it: `spelled` parses it keeping every number's text (500.00
stays 500.00, 1e3 stays 1e3) and every key of an object, in order, repeated keys too. Strings
are shown decoded, as the characters the source means: `\n` is a line break, `\u00e9` is é,
`\"` is a quote mark; true, false and null have one spelling each.

A record is refused when a page could not show it: a name that does not `fullmatch` (`$`
lets a trailing newline through), `user_name` or `final_action` longer than their columns,
a step's JSON nested deeper than `MAX_JSON_DEPTH` (the pages parse it again to render it).
"""

import json
import re
from dataclasses import dataclass

from apps.console.uploads import (
    MAX_JSON_DEPTH,
    NestedTooDeep,
    UploadRefused,
    deeper_than,
    json_parse,
)

from .errors import RecordError
from .models import Scenario

# (path, type) pairs every record must have; the full dataset's 493 records all do.
REQUIRED = [
    ("name", str),
    ("seed", dict),
    ("vignette", dict),
    ("trajectory", dict),
    ("trajectory.user_name", str),
    ("trajectory.user_instruction", str),
    ("trajectory.toolkits", list),
    ("trajectory.executable_trajectory", str),
    ("trajectory.final_action", str),
]
NON_EMPTY = {"name", "trajectory.user_instruction", "trajectory.executable_trajectory"}
NAME_MAX = Scenario._meta.get_field("name").max_length
NAME = re.compile(rf"[A-Za-z0-9_.:-]{{1,{NAME_MAX}}}")
# Text kept in a column of its own, at most that column's length.
COLUMNS = {
    "trajectory.user_name": Scenario._meta.get_field("user_name").max_length,
    "trajectory.final_action": Scenario._meta.get_field("final_action").max_length,
}
TYPE_NAMES = {str: "a string", dict: "an object", list: "a list"}
# `\b`: "ReAction:" holds no label.
_LABEL = re.compile(r"\b(Action Input|Action|Observation):[ \t]?")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _lookup(record: dict, path: str):
    value = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return KeyError
        value = value[part]
    return value


def record_check(record: object, index: int) -> dict:
    """The record, or RecordError naming it and the first field that is wrong."""
    if not isinstance(record, dict):
        raise RecordError(f"Record {index + 1}: is not a JSON object.")
    label = record.get("name") if isinstance(record.get("name"), str) else None
    where = f"Record {index + 1}" + (f" ({label})" if label else "")
    for path, kind in REQUIRED:
        value = _lookup(record, path)
        if value is KeyError:
            raise RecordError(f"{where}: the field {path} is missing.")
        if not isinstance(value, kind):
            raise RecordError(f"{where}: the field {path} must be {TYPE_NAMES[kind]}.")
        if path in NON_EMPTY and not value.strip():
            raise RecordError(f"{where}: the field {path} is empty.")
    if not NAME.fullmatch(record["name"]):
        raise RecordError(
            f"{where}: the field name must be 1-{NAME_MAX} letters, digits or . _ : - characters."
        )
    for path, limit in COLUMNS.items():
        if len(_lookup(record, path)) > limit:
            raise RecordError(
                f"{where}: the field {path} is longer than {limit} characters "
                f"({len(_lookup(record, path)):,})."
            )
    if not all(isinstance(t, str) for t in record["trajectory"]["toolkits"]):
        raise RecordError(f"{where}: the field trajectory.toolkits must list strings.")
    _, steps = trajectory_steps(record["trajectory"]["executable_trajectory"])
    for number, step in enumerate(steps, start=1):
        for label, part in (("Action Input", step.action_input), ("Observation", step.observation)):
            if part is not None and part.data is None and part.text.lstrip()[:1] in ("[", "{"):
                try:
                    json_parse(part.text)
                except NestedTooDeep as exc:
                    raise RecordError(
                        f"{where}: the field trajectory.executable_trajectory, step {number} "
                        f"({label}): its JSON is nested more than {MAX_JSON_DEPTH} levels deep."
                    ) from exc
                except UploadRefused:
                    pass  # not JSON: shown as the text it is
    return record


@dataclass(frozen=True)
class Part:
    text: str
    data: object  # the parsed JSON, or None when the text is not JSON

    @property
    def is_json(self) -> bool:
        return self.data is not None or self.text.strip() == "null"


@dataclass(frozen=True)
class Step:
    action: str
    action_input: Part | None
    observation: Part | None


def _part(text: str) -> Part:
    # Leading line breaks go (the label's line ends there), leading spaces stay (a text's
    # first-line indent); trailing space is the next label's indent, not this part's.
    text = text.strip("\n").rstrip()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # deep nesting: shown as text, never a 500
        return Part(text, None)
    # Imports refuse deeper JSON; this keeps a page safe from any record stored before.
    if isinstance(data, dict | list) and deeper_than(data) is not None:
        return Part(text, None)
    return Part(text, data)


def action_input(text: str) -> Part | None:
    """A response that is an action's input (a JSON object, as PrivacyLens's agent prompt
    asks for), as a part the page shows like a step's input; None for any other text."""
    part = _part(text)
    return part if isinstance(part.data, dict) else None


def _after_json(trajectory: str, start: int) -> int:
    """Where the JSON object or list that the text at `start` opens with ends, or `start`
    when it opens with none: a label is looked for only after it."""
    begin = _JSON_SPACE.match(trajectory, start).end()
    if trajectory[begin : begin + 1] not in ("{", "["):
        return start
    try:
        _, end = _DECODER.raw_decode(trajectory, begin)
    except (ValueError, RecursionError):  # not JSON after all: the text up to the next label
        return start
    return end


def _labelled(trajectory: str) -> tuple[str, list[tuple[str, str]]]:
    """(text before the first label, (label, text) pairs): every character but the labels'."""
    found = _LABEL.search(trajectory)
    if found is None:
        return trajectory, []
    preamble, pairs = trajectory[: found.start()], []
    while found is not None:
        label, start = found.group(1), found.end()
        past = start if label == "Action" else _after_json(trajectory, start)
        following = _LABEL.search(trajectory, past)
        end = following.start() if following else len(trajectory)
        pairs.append((label, trajectory[start:end]))
        found = following
    return preamble, pairs


def trajectory_steps(trajectory: str) -> tuple[str, list[Step]]:
    """(text before the first action, the steps). Splitting loses no character of content."""
    preamble, pairs = _labelled(trajectory)
    steps: list[dict] = []
    for label, body in pairs:
        if label == "Action" or not steps:
            steps.append({"action": body.strip() if label == "Action" else ""})
            if label == "Action":
                continue
        key = "action_input" if label == "Action Input" else "observation"
        if key in steps[-1]:  # a second observation for one action: keep it as its own step
            steps.append({"action": ""})
        steps[-1][key] = _part(body)
    return preamble.strip("\n").rstrip(), [
        Step(s["action"], s.get("action_input"), s.get("observation")) for s in steps
    ]


@dataclass(frozen=True)
class Number:
    """A JSON number as the source spells it."""

    text: str


class Members(list):
    """A JSON object: its (key, value) pairs in the source's order, a repeated key each time."""


def spelled(text: str) -> object:
    """The JSON value of `text` as written: a Number for every number, Members for every
    object, lists, decoded strings, True, False and None. ValueError when it is not JSON."""
    return json.loads(
        text, parse_int=Number, parse_float=Number, parse_constant=Number, object_pairs_hook=Members
    )
