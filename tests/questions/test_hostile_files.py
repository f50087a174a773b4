"""Hostile assay-questions/1 files: each is refused with a message that names the file and
the place, through the service, the console and the command alike, and nothing is kept."""

import html
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.questions.errors import QuestionError
from apps.questions.models import Question
from apps.questions.services import questions_import

pytestmark = pytest.mark.django_db
FIXTURE = Path(__file__).resolve().parents[2] / "apps" / "questions" / "fixtures" / "questions.json"
NAME = "hostile.json"


def doc(**changes) -> dict:
    """The fixture's first two questions, the first one changed by `changes`."""
    data = json.loads(FIXTURE.read_text())
    data["questions"] = data["questions"][:2]
    data["questions"][0].update(changes)
    return data


def encoded(data) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode()


def escaped(data) -> bytes:
    """JSON with every non-ASCII character escaped (a lone surrogate as `\\ud800`)."""
    return json.dumps(data).encode()


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


HOSTILE = {
    "nested 50,000 levels": (
        encoded(doc())[:-1] + f', "extra": {nested(50_000)}}}'.encode(),
        "nested more than 32 levels deep",
    ),
    "nested 40 levels": (
        encoded(doc(extra=json.loads(nested(40)))),
        "questions[0].extra",
    ),
    "topic as a list": (encoded(doc(topic=["accounts"])), "field \"topic\": ['accounts'] is not"),
    "topic as an object": (
        encoded(doc(topic={"a": 1})),
        "questions[0] ('accounts-01'), field \"topic\"",
    ),
    "listed topic as a list": (encoded({**doc(), "topics": [["accounts"]]}), 'field "topics"'),
    "escaped NUL in text": (
        encoded(doc(text="Help\u0000me")),
        "questions[0].text: a NUL character (\\u0000)",
    ),
    "NUL in a key": (encoded(doc(**{"no\u0000te": "x"})), "a key holds a NUL character"),
    "lone surrogate in text": (
        escaped(doc(text="Help \ud800me")),
        "questions[0].text: a lone surrogate (\\ud800)",
    ),
    "lone surrogate in a key": (
        escaped(doc(**{"no\udc00te": "x"})),
        "questions[0]: a key holds a lone surrogate (\\udc00)",
    ),
    "id given twice": (
        encoded(doc()).replace(b'"id": "accounts-01"', b'"id": "accounts-01", "id": "scams-01"'),
        'questions[0]: the key "id" appears twice',
    ),
    "raw NUL byte": (
        b'{"format": "assay-questions/1",\x00 "questions": []}',
        "line 1, column 32: a NUL",
    ),
    "id with a trailing newline": (encoded(doc(id="accounts-01\n")), 'field "id": must be text'),
    "text of 40,001 characters": (
        encoded(doc(text="x" * 40_001)),
        "questions[0] ('accounts-01'), field \"text\": 40,001 characters, more than the 40,000",
    ),
    "UTF-16 with a BOM": (json.dumps(doc()).encode("utf-16"), "it is UTF-16 text, not UTF-8"),
    "UTF-16 without a BOM": (json.dumps(doc()).encode("utf-16-le"), "it is UTF-16 text"),
    "UTF-32": (json.dumps(doc()).encode("utf-32"), "it is UTF-32 text"),
    "Latin-1": (
        json.dumps(doc(text="Caf\u00e9 wifi"), ensure_ascii=False).encode("latin-1"),
        "it is not UTF-8 text (line ",
    ),
}


def through_service(content: bytes, tmp_path, client) -> str:
    with pytest.raises(QuestionError) as refused:
        questions_import(content=content, filename=NAME)
    return str(refused.value)


def through_console(content: bytes, tmp_path, client) -> str:
    url = reverse("admin:questions_question_import")
    page = client.post(url, {"file": SimpleUploadedFile(NAME, content)})
    assert page.status_code == 200
    return html.unescape(page.text)


def through_command(content: bytes, tmp_path, client) -> str:
    path = tmp_path / NAME
    path.write_bytes(content)
    with pytest.raises(CommandError) as refused:
        call_command("import_questions", str(path))
    return str(refused.value)


ENTRY_POINTS = [through_service, through_console, through_command]


@pytest.fixture
def console(client, researcher):
    client.force_login(researcher)
    return client


@pytest.mark.parametrize("submit", ENTRY_POINTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_file_is_refused_by_name_and_place(kind, submit, tmp_path, console):
    content, expected = HOSTILE[kind]
    message = submit(content, tmp_path, console)
    assert f"{NAME} was not imported (nothing was changed)" in message
    assert expected in message
    assert Question.objects.count() == 0


@pytest.mark.parametrize("submit", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_a_file_over_20_mb_is_refused_before_it_is_read(submit, tmp_path, console):
    if submit is through_command:  # a sparse file: its size is known, its bytes never read
        path = tmp_path / NAME
        with path.open("wb") as big:
            big.truncate(20 * 1024 * 1024 + 1)
        with pytest.raises(CommandError, match=f"{NAME} was not imported .*larger than 20 MB"):
            call_command("import_questions", str(path))
    else:
        content = b" " * (20 * 1024 * 1024 + 1)
        assert "the file is larger than 20 MB" in submit(content, tmp_path, console)
    assert Question.objects.count() == 0
