"""Hostile rubric files (assay-questions/1 JSON and HealthBench JSONL): each is refused with
a message naming the file, the line or item and the field, through the service, the import
page and the command alike; nothing is imported and no upload is kept."""

import html
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.questions.models import Question
from apps.rubrics import services
from apps.rubrics.errors import ImportRefused
from apps.rubrics.models import RubricImport

pytestmark = pytest.mark.django_db
QUESTIONS = (
    Path(__file__).resolve().parents[2] / "apps" / "questions" / "fixtures" / "questions.json"
)
OPTIONS = {"points_mapping": "bands", "conversation": "join"}


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def hb_line(**changes) -> dict:
    line = {
        "prompt_id": "hb-1",
        "prompt": [{"role": "user", "content": "Someone took over my email. What now?"}],
        "rubrics": [
            {"criterion": "Says to reset the password.", "points": 5, "tags": ["axis:accuracy"]},
            {"criterion": "Is rude.", "points": -2, "tags": ["axis:communication_quality"]},
        ],
        "example_tags": ["theme:compromise"],
    }
    line.update(changes)
    return line


def hb_criterion(**changes) -> dict:
    return hb_line(rubrics=[{"criterion": "Says to reset it.", "points": 5, **changes}])


def jsonl(*lines) -> bytes:
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines).encode()


def escaped(*lines) -> bytes:
    """JSON Lines with every non-ASCII character escaped (a lone surrogate as `\\ud800`)."""
    return "\n".join(json.dumps(line) for line in lines).encode()


def document(change) -> bytes:
    """The fixture's first two questions, the document changed by `change`."""
    data = json.loads(QUESTIONS.read_text())
    data["questions"] = data["questions"][:2]
    change(data)
    return json.dumps(data, ensure_ascii=False).encode()


def shared(value) -> bytes:
    return document(lambda data: data.update(presentation_criteria=value))


def first_question(**fields) -> bytes:
    return document(lambda data: data["questions"][0].update(fields))


PRESENTATION = {"text": "Puts the key step first.", "polarity": "positive", "points": 3}


def assay(*, ascii: bool = False, **criterion) -> bytes:
    data = json.loads(QUESTIONS.read_text())
    data["questions"] = data["questions"][:2]
    data["questions"][0]["criteria"][0].update(criterion)
    return json.dumps(data, ensure_ascii=ascii).encode()


HEALTHBENCH = {
    "example_tags as a number": (
        jsonl(hb_line(example_tags=7)),
        "line 1 ('hb-1'), field \"example_tags\": must be a list of tags, found 7",
    ),
    "example_tags as text": (jsonl(hb_line(example_tags="theme:compromise")), "example_tags"),
    "tags as a number": (
        jsonl(hb_criterion(tags=3)),
        "line 1 ('hb-1'), rubrics[0], field \"tags\": must be a list of tags, found 3",
    ),
    "tags as an object": (jsonl(hb_criterion(tags={"axis": 1})), 'field "tags"'),
    "a tag that is a number": (
        jsonl(hb_criterion(tags=["axis:accuracy", 7])),
        'rubrics[0], field "tags": each tag must be text, found 7',
    ),
    "an example tag that is an object": (
        jsonl(hb_line(example_tags=["theme:compromise", {"theme": "scams"}])),
        "field \"example_tags\": each tag must be text, found {'theme': 'scams'}",
    ),
    "assay as a number": (
        jsonl(hb_line(assay=2)),
        "line 1 ('hb-1'), field \"assay\": must be an object",
    ),
    "assay with an unknown state": (
        jsonl(hb_line(assay={"rubric_version": 1, "rubric_state": "done"})),
        "line 1 ('hb-1'), assay, field \"rubric_state\": must be one of",
    ),
    "escaped NUL in a criterion": (
        jsonl(hb_criterion(criterion="Reset\u0000it")),
        "line 1: rubrics[0].criterion: a NUL character (\\u0000)",
    ),
    "raw NUL byte": (jsonl(hb_line()) + b"\n\x00", "line 2, column 1: a NUL character"),
    "lone surrogate in a criterion": (
        escaped(hb_line(), hb_criterion(criterion="Reset \ud800it")),
        "hostile.jsonl line 2: rubrics[0].criterion: a lone surrogate (\\ud800)",
    ),
    "prompt_id given twice": (
        jsonl(hb_line())[:-1] + b', "prompt_id": "hb-2"}',
        'hostile.jsonl line 1: the top level: the key "prompt_id" appears twice',
    ),
    "nested 50,000 levels": (
        jsonl(hb_line()) + b"\n" + nested(50_000).encode(),
        "line 2: it is nested more than 32 levels deep",
    ),
    "nested 40 levels": (jsonl(hb_line(extra=json.loads(nested(40)))), "line 1: extra"),
    "criterion of 5,000 characters": (
        jsonl(hb_criterion(criterion="x" * 5000)),
        'rubrics[0], field "criterion": 5,000 characters, more than the 1,000 allowed',
    ),
    "criterion as a list": (jsonl(hb_criterion(criterion=["a"])), 'field "criterion": must be'),
    "prompt of 50,000 characters": (
        jsonl(hb_line(prompt=[{"role": "user", "content": "x" * 50_000}])),
        'field "prompt[0].content": 50,000 characters, more than the 40,000 allowed',
    ),
    "role as a list": (
        jsonl(hb_line(prompt=[{"role": ["user"], "content": "a"}, {"content": "b"}])),
        'a message\'s "role" must be text',
    ),
    "prompt_id with a trailing newline": (
        jsonl(hb_line(prompt_id="hb-1\n")),
        'field "prompt_id": must be an id',
    ),
    "prompt_id as a list": (jsonl(hb_line(prompt_id=["hb-1"])), 'field "prompt_id"'),
    "points as text": (jsonl(hb_criterion(points="5")), "found '5'"),
    "points as a fraction": (jsonl(hb_criterion(points=2.5)), "found 2.5"),
    "a line that is a list": (jsonl(hb_line(), [1]), "line 2: must be a JSON object"),
    "UTF-16": (jsonl(hb_line()).decode().encode("utf-16"), "it is UTF-16 text, not UTF-8"),
    "Latin-1": (
        jsonl(hb_line(prompt_id="caf\u00e9")).decode().encode("latin-1"),
        "it is not UTF-8 text",
    ),
}
ASSAY = {
    "criterion of 5,000 characters": (
        assay(text="x" * 5000),
        'criteria[0], field "text": 5,000 characters, more than the 1,000 allowed',
    ),
    "criterion as a list": (assay(text=["x"]), 'criteria[0], field "text": must be non-empty'),
    "polarity as an object": (assay(polarity={"a": 1}), 'field "polarity": must be'),
    "kind as a list": (assay(kind=["factual"]), 'field "kind": must be'),
    "points as text": (assay(points="5"), "found '5'"),
    "points true": (assay(points=True), "found True"),
    "escaped NUL": (assay(text="A\u0000B"), "questions[0].criteria[0].text: a NUL character"),
    "lone surrogate": (
        assay(ascii=True, text="A\udbffB"),
        "questions[0].criteria[0].text: a lone surrogate (\\udbff)",
    ),
    "points given twice": (
        assay(points=4).replace(b'"points": 4', b'"points": 4, "points": 5'),
        'questions[0].criteria[0]: the key "points" appears twice',
    ),
    "nested 50,000 levels": (
        assay()[:-1] + f', "extra": {nested(50_000)}}}'.encode(),
        "nested more than 32 levels deep",
    ),
    "UTF-16": (assay().decode().encode("utf-16"), "it is UTF-16 text, not UTF-8"),
    "presentation_criteria of a number, text and a null text": (
        shared([1, "x", {"text": None}]),
        "presentation_criteria[0]: must be a JSON object, found 1",
    ),
    "presentation_criteria as an object": (
        shared({"text": "x"}),
        'field "presentation_criteria": must be a list of criteria',
    ),
    "a presentation criterion of the factual kind": (
        shared([{**PRESENTATION, "kind": "factual"}]),
        'presentation_criteria[0], field "kind": must be "presentation", found \'factual\'',
    ),
    "a presentation criterion worth 4": (
        shared([{**PRESENTATION, "points": 4}]),
        'presentation_criteria[0], field "points": 4 is outside 5, 3, 2, 1',
    ),
    "a presentation criterion twice": (
        shared([PRESENTATION, PRESENTATION]),
        "presentation_criteria: the criterion 'Puts the key step first.' appears twice",
    ),
    "rubric_version as text": (
        first_question(rubric_version="2"),
        "questions[0] ('accounts-01'), field \"rubric_version\": must be a whole number from 1",
    ),
    "rubric_state unknown": (
        first_question(rubric_state="published"),
        'field "rubric_state": must be one of "draft", "in_review"',
    ),
}
CASES = [("healthbench", k, *v) for k, v in HEALTHBENCH.items()] + [
    ("assay", k, *v) for k, v in ASSAY.items()
]
NAME = {"healthbench": "hostile.jsonl", "assay": "hostile.json"}


def through_service(fmt, content, researcher, client, tmp_path) -> str:
    with pytest.raises(ImportRefused) as refused:
        services.rubric_import_upload(
            content=content, filename=NAME[fmt], format=fmt, options=OPTIONS, user=researcher
        )
    return str(refused.value)


def through_page(fmt, content, researcher, client, tmp_path) -> str:
    client.force_login(researcher)
    upload = SimpleUploadedFile(NAME[fmt], content)
    page = client.post(reverse("rubrics:import"), {"file": upload, "format": fmt, **OPTIONS})
    assert page.status_code == 422
    return html.unescape(page.text)


def through_command(fmt, content, researcher, client, tmp_path) -> str:
    path = tmp_path / NAME[fmt]
    path.write_bytes(content)
    with pytest.raises(CommandError) as refused:
        call_command(
            "import_rubrics",
            str(path),
            "--format",
            fmt,
            "--as",
            researcher.username,
            "--points-mapping",
            "bands",
            "--conversation",
            "join",
            "--commit",
            "--rescale",
        )
    return str(refused.value)


ENTRY_POINTS = [through_service, through_page, through_command]


@pytest.mark.parametrize("submit", ENTRY_POINTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(("fmt", "kind", "content", "expected"), CASES, ids=[c[1] for c in CASES])
def test_a_hostile_rubric_file_is_refused_by_name_and_place(
    fmt, kind, content, expected, submit, researcher, client, tmp_path
):
    message = submit(fmt, content, researcher, client, tmp_path)
    assert f"{NAME[fmt]} was not imported (nothing was changed)" in message
    assert expected in message
    assert not RubricImport.objects.exists() and Question.objects.count() == 0


@pytest.mark.parametrize("submit", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_a_rubric_file_over_10_mb_is_refused_before_it_is_read(
    submit, researcher, client, tmp_path
):
    if submit is through_command:  # a sparse file: its size is known, its bytes never read
        path = tmp_path / NAME["healthbench"]
        with path.open("wb") as big:
            big.truncate(10 * 1024 * 1024 + 1)
        with pytest.raises(CommandError, match=r"was not imported .*larger than 10 MB"):
            call_command(
                "import_rubrics", str(path), "--format", "healthbench", "--as", researcher.username
            )
    else:
        content = b"\n" * (10 * 1024 * 1024 + 1)
        message = submit("healthbench", content, researcher, client, tmp_path)
        assert "the file is larger than 10 MB" in message
    assert not RubricImport.objects.exists()


def test_a_utf8_bom_and_a_criterion_of_1000_characters_are_accepted(researcher):
    content = b"\xef\xbb\xbf" + jsonl(hb_criterion(criterion="x" * 1000))
    upload = services.rubric_import_upload(
        content=content, filename="ok.jsonl", format="healthbench", options={}, user=researcher
    )
    assert services.rubric_import_plan(upload=upload).ok


def test_a_dry_run_of_the_command_keeps_no_upload(researcher, tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_bytes(jsonl(hb_line()))
    call_command(
        "import_rubrics", str(path), "--format", "healthbench", "--as", researcher.username
    )
    assert not RubricImport.objects.exists()


def test_every_malformed_presentation_criterion_is_named(researcher):
    with pytest.raises(ImportRefused) as refused:
        services.rubric_import_upload(
            content=shared([1, "x", {"text": None}]),
            filename="shared.json",
            format="assay",
            options={},
            user=researcher,
        )
    message = str(refused.value)
    assert "presentation_criteria[0]: must be a JSON object, found 1" in message
    assert "presentation_criteria[1]: must be a JSON object, found 'x'" in message
    assert 'presentation_criteria[2], field "text": must be non-empty text' in message
    assert 'presentation_criteria[2], field "polarity": must be' in message
    assert not RubricImport.objects.exists() and Question.objects.count() == 0
