import copy
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.questions.errors import QuestionError
from apps.questions.models import Question, Topic
from apps.questions.services import questions_import

pytestmark = pytest.mark.django_db
FIXTURE = Path(__file__).resolve().parents[2] / "apps" / "questions" / "fixtures" / "questions.json"


def fixture_doc() -> dict:
    return json.loads(FIXTURE.read_text())


def as_bytes(doc) -> bytes:
    return json.dumps(doc).encode()


def test_the_nine_topics_are_seeded():
    assert list(Topic.objects.values_list("name", flat=True)) == [
        "accounts", "moderation tools", "security tools", "privacy tools", "compromise",
        "platform actions", "scams", "harassment", "data concerns",
    ]  # fmt: skip


def test_the_fixture_imports_all_18_questions_with_their_labels():
    report = questions_import(content=FIXTURE.read_bytes(), filename="questions.json")
    assert len(report.created) == 18 and report.with_criteria == 18
    question = Question.objects.get(external_id="accounts-01")
    assert question.topic.name == "accounts"
    assert (question.need_type, question.mentions_prior_attempt) == ("guidance", True)
    assert question.length_bucket == "short"
    assert "import those as rubrics" in report.summary()


def test_importing_again_changes_nothing():
    questions_import(content=FIXTURE.read_bytes(), filename="questions.json")
    report = questions_import(content=FIXTURE.read_bytes(), filename="questions.json")
    assert report.created == [] and len(report.unchanged) == 18
    assert Question.objects.count() == 18


@pytest.mark.parametrize(
    "break_it,expected",
    [
        (lambda d: d.update(format="other/1"), "field \"format\" must be 'assay-questions/1'"),
        (
            lambda d: d["questions"][3].update(topic="acounts"),
            "questions[3] ('moderation-02'), field \"topic\": 'acounts' is not one of the topics",
        ),
        (
            lambda d: d["questions"][5].update(text="  "),
            "questions[5] ('security-tools-02'), field \"text\"",
        ),
        (lambda d: d["questions"][7].update(need_type="advice"), 'field "need_type"'),
        (lambda d: d["questions"][9].update(id="accounts-01"), "the same id as questions[0]"),
        (
            lambda d: d["questions"][2].update(mentions_prior_attempt="yes"),
            "mentions_prior_attempt",
        ),
    ],
)
def test_a_bad_file_is_refused_whole_naming_file_item_and_field(break_it, expected):
    doc = fixture_doc()
    break_it(doc)
    with pytest.raises(QuestionError) as refused:
        questions_import(content=as_bytes(doc), filename="bank.json")
    message = str(refused.value)
    assert message.startswith("bank.json was not imported (nothing was changed)")
    assert expected in message
    assert Question.objects.count() == 0


def test_invalid_json_names_the_line():
    with pytest.raises(QuestionError, match=r"bank.json.*not valid JSON .* line 2"):
        questions_import(
            content=b'{"format": "assay-questions/1",\n "questions": [}', filename="bank.json"
        )


def test_a_changed_question_with_a_known_id_is_refused_and_nothing_is_imported():
    questions_import(content=FIXTURE.read_bytes(), filename="questions.json")
    doc = copy.deepcopy(fixture_doc())
    doc["questions"][0]["text"] = "A different question."
    doc["questions"].append({"id": "new-01", "topic": "scams", "text": "Is this a scam?"})
    with pytest.raises(
        QuestionError, match=r"questions\[0\] \('accounts-01'\), field \"text\": differs"
    ):
        questions_import(content=as_bytes(doc), filename="bank.json")
    assert not Question.objects.filter(external_id="new-01").exists()


def test_the_command_imports_and_refuses_with_the_message(tmp_path, capsys):
    call_command("import_questions", str(FIXTURE))
    assert "18 question(s) imported" in capsys.readouterr().out
    bad = tmp_path / "broken.json"
    bad.write_text('{"format": "assay-questions/1", "questions": [{"id": "x"}]}')
    with pytest.raises(
        CommandError, match=r'broken.json .* questions\[0\] \(\'x\'\), field "topic"'
    ):
        call_command("import_questions", str(bad))


def test_researchers_import_from_the_console(client, researcher):
    client.force_login(researcher)
    url = reverse("admin:questions_question_import")
    assert "Import questions" in client.get(reverse("admin:questions_question_changelist")).text
    with FIXTURE.open("rb") as upload:
        response = client.post(url, {"file": upload})
    assert response.status_code == 302
    assert Question.objects.count() == 18


def test_the_console_shows_why_a_file_was_refused(client, researcher, tmp_path):
    client.force_login(researcher)
    bad = tmp_path / "typo.json"
    bad.write_text(
        json.dumps(
            {
                "format": "assay-questions/1",
                "questions": [{"id": "a-1", "topic": "nope", "text": "Hi"}],
            }
        )
    )
    with bad.open("rb") as upload:
        response = client.post(reverse("admin:questions_question_import"), {"file": upload})
    assert response.status_code == 200
    assert "typo.json was not imported" in response.text
    assert "&#x27;nope&#x27; is not one of the topics" in response.text
    assert Question.objects.count() == 0


def test_only_researchers_reach_the_console_import(client, expert):
    client.force_login(expert)
    response = client.get(reverse("admin:questions_question_import"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
