import copy
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.questions.errors import QuestionError
from apps.questions.models import Question, Topic, length_bucket_for
from apps.questions.services import question_update, questions_import
from apps.rubrics import services as services_rubrics
from apps.rubrics.models import Rubric
from tests.factories import draft_with_criteria, question_make

pytestmark = pytest.mark.django_db
FIXTURE = Path(__file__).resolve().parents[2] / "apps" / "questions" / "fixtures" / "questions.json"


def fixture_doc() -> dict:
    return json.loads(FIXTURE.read_text())


def as_bytes(doc) -> bytes:
    return json.dumps(doc).encode()


def old_format(doc: dict) -> dict:
    """`doc` as files were written before the two need labels: one `need_type` (in place)."""
    for item in doc["questions"]:
        needs = item.pop("needs_sensemaking", None), item.pop("needs_guidance", None)
        item["need_type"] = {(True, False): "sensemaking", (False, True): "guidance"}.get(needs, "")
    return doc


def test_the_nine_topics_are_seeded():
    assert list(Topic.objects.values_list("name", flat=True)) == [
        "accounts",
        "moderation tools",
        "security tools",
        "privacy tools",
        "compromise",
        "platform actions",
        "scams",
        "harassment",
        "data concerns",
    ]


def test_the_fixture_imports_all_18_questions_with_their_labels():
    report = questions_import(content=FIXTURE.read_bytes(), filename="questions.json")
    assert len(report.created) == 18 and report.with_criteria == 18
    question = Question.objects.get(external_id="accounts-01")
    assert question.topic.name == "accounts"
    assert (
        question.mentions_prior_attempt,
        question.needs_sensemaking,
        question.needs_guidance,
    ) == (True, False, True)
    assert question.label_status == "verified"
    sensemaking = Question.objects.get(external_id="accounts-02")
    assert (sensemaking.needs_sensemaking, sensemaking.needs_guidance) == (True, False)
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
        (
            lambda d: d["questions"][7].update(needs_sensemaking="yes"),
            "questions[7] ('privacy-tools-02'), field \"needs_sensemaking\": must be true, false "
            "or null, found 'yes'",
        ),
        (
            lambda d: d["questions"][7].update(needs_guidance=None),
            "questions[7] ('privacy-tools-02'), field \"needs_guidance\": must be true or false "
            "when the other need is given",
        ),
        (
            lambda d: d["questions"][7].update(need_type="guidance"),
            'questions[7] (\'privacy-tools-02\'), field "need_type": give either "need_type" '
            "(the older form) or",
        ),
        (
            lambda d: old_format(d)["questions"][7].update(need_type="advice"),
            'questions[7] (\'privacy-tools-02\'), field "need_type": must be "sensemaking", '
            '"guidance" or "", found \'advice\'',
        ),
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


def sampled(question):
    from apps.llm.models import ModelConfig
    from apps.llm.selectors import prompt_current
    from apps.runs.models import Response, SamplingRun

    run = SamplingRun.objects.create(name="Benchmark", prompt=prompt_current(purpose="sample"))
    model = ModelConfig.objects.create(
        display_name="m", family="f", litellm_model="openai/offline-terse"
    )
    return Response.objects.create(run=run, model=model, question=question)


def test_a_questions_text_is_frozen_once_a_rubric_version_is_approved(expert, reviewer):
    question = question_make(text="How do I get my account back?")
    draft_with_criteria(question, expert)
    question = question_update(question=question, fields={"text": "How do I recover it?"})
    assert question.text == "How do I recover it?"  # only a draft so far: still free

    approved = Rubric.objects.get(question=question)
    services_rubrics.rubric_submit_for_review(rubric=approved, user=expert)
    services_rubrics.rubric_approve(rubric=approved, user=reviewer)
    with pytest.raises(QuestionError, match="rubric version 1 approved against it"):
        question_update(question=question, fields={"text": "Something else entirely?"})
    services_rubrics.rubric_start(question=question, user=expert)  # version 2, a draft
    with pytest.raises(QuestionError, match="can no longer change"):
        question_update(question=question, fields={"text": "Something else entirely?"})
    question.refresh_from_db()
    assert question.text == "How do I recover it?"
    assert Rubric.objects.get(version=1).question.text == "How do I recover it?"

    # What the rubric is not about can still change; the same text is not a change.
    question_update(
        question=question, fields={"needs_guidance": True, "text": "How do I recover it?"}
    )
    question.refresh_from_db()
    assert question.needs_guidance is True


def test_a_questions_text_is_frozen_once_a_model_answered_it():
    question = question_make()
    sampled(question)
    with pytest.raises(QuestionError, match="1 model answer sampled against it"):
        question_update(question=question, fields={"text": "Reworded."})
    assert Question.objects.get(pk=question.pk).text != "Reworded."


def test_the_console_refuses_a_frozen_text_with_the_reason_and_saves_the_rest(client, researcher):
    question = question_make(text="Line one.\nLine two?")
    sampled(question)
    client.force_login(researcher)
    url = reverse("admin:questions_question_change", args=[question.pk])
    form = {
        "external_id": question.external_id,
        "topic": question.topic_id,
        "text": "A new wording?",
        "original_text": "",
        "length_bucket": question.length_bucket,
        "needs_guidance": "on",
        "labelled_by": "",
        "verified_by": "",
    }
    refused = client.post(url, form)
    assert refused.status_code == 200
    assert "can no longer change: it has 1 model answer sampled against it" in refused.text
    question.refresh_from_db()
    assert (question.text, question.needs_guidance) == ("Line one.\nLine two?", False)

    # The browser sends the unchanged text with CRLF line ends: not a change of text.
    saved = client.post(url, {**form, "text": "Line one.\r\nLine two?"})
    assert saved.status_code == 302
    question.refresh_from_db()
    assert (question.text, question.needs_guidance) == ("Line one.\nLine two?", True)


def test_the_console_changes_a_text_nothing_depends_on_yet(client, researcher):
    question = question_make(text="Short?")
    client.force_login(researcher)
    url = reverse("admin:questions_question_change", args=[question.pk])
    form = {
        "external_id": question.external_id,
        "topic": question.topic_id,
        "original_text": "",
        "text": "A much longer wording of the same question? " * 12,
        "length_bucket": question.length_bucket,
        "labelled_by": "",
        "verified_by": "",
    }
    assert client.post(url, form).status_code == 302
    question.refresh_from_db()
    assert question.text.startswith("A much longer wording")


@pytest.mark.parametrize(
    ("text", "reason"),
    [("x" * 40_001, "more than the 40,000 allowed"), ("Hi\x00there", "NUL"), ("   ", "non-empty")],
)
def test_an_edited_text_keeps_the_importers_limits(text, reason):
    question = question_make(text="How do I get my account back?")
    with pytest.raises(QuestionError, match=reason):
        question_update(question=question, fields={"text": text})
    assert Question.objects.get(pk=question.pk).text == "How do I get my account back?"


@pytest.mark.parametrize(
    ("characters", "bucket"),
    [
        (1, "short"),
        (332, "short"),
        (333, "medium"),
        (665, "medium"),
        (666, "long"),
        (999, "long"),
        (1000, "over"),
        (40_000, "over"),
    ],
)
def test_length_buckets_are_the_published_thirds_of_a_thousand_characters(characters, bucket):
    # Characters, not words or bytes: "é" is one character and two bytes.
    text = ("é" * (characters - 1)) + "?"
    assert length_bucket_for(text) == bucket
    question = question_make(text=text)
    assert question.length_bucket == bucket


def test_an_edited_question_from_a_post_keeps_its_post_s_stratum():
    original = "My account was taken over and the email changed. " * 8  # 400 characters: medium
    question = question_make(text=original, original_text=original)
    assert question.length_bucket == "medium"
    question_update(question=question, fields={"text": "Someone took over my account. Help?"})
    question.refresh_from_db()
    assert (question.text, question.length_bucket) == (
        "Someone took over my account. Help?",
        "medium",
    )


def test_imported_labels_count_as_verified_and_unlabelled_questions_wait_for_labels():
    doc = fixture_doc()
    doc["questions"] = doc["questions"][:2]
    doc["questions"][1] = {**doc["questions"][1], "needs_sensemaking": None, "needs_guidance": None}
    questions_import(content=as_bytes(doc), filename="two.json")
    first, second = (Question.objects.get(external_id=q["id"]) for q in doc["questions"])
    assert (first.label_status, second.label_status) == ("verified", "unlabelled")


def test_the_new_format_imports_both_needs_one_or_neither_as_verified_labels():
    doc = {
        "format": "assay-questions/1",
        "questions": [
            {
                "id": "both",
                "topic": "scams",
                "text": "Why me, and what now?",
                "needs_sensemaking": True,
                "needs_guidance": True,
            },
            {
                "id": "sense",
                "topic": "scams",
                "text": "Why me?",
                "needs_sensemaking": True,
                "needs_guidance": False,
            },
            {
                "id": "neither",
                "topic": "scams",
                "text": "Anyone else?",
                "needs_sensemaking": False,
                "needs_guidance": False,
            },
            {"id": "unlabelled", "topic": "scams", "text": "Hello?"},
        ],
    }
    questions_import(content=as_bytes(doc), filename="new.json")
    labels = {
        q.external_id: (q.needs_sensemaking, q.needs_guidance, q.label_status)
        for q in Question.objects.all()
    }
    assert labels == {
        "both": (True, True, "verified"),
        "sense": (True, False, "verified"),
        "neither": (False, False, "verified"),
        "unlabelled": (False, False, "unlabelled"),
    }


def test_an_old_file_with_need_type_imports_as_the_migration_maps_it():
    doc = old_format(fixture_doc())
    doc["questions"][1]["need_type"] = ""
    assert [q["need_type"] for q in doc["questions"][:3]] == ["guidance", "", "guidance"]
    assert doc["questions"][4]["need_type"] == "sensemaking"
    report = questions_import(content=as_bytes(doc), filename="old.json")
    assert len(report.created) == 18
    labels = {
        q.external_id: (q.needs_sensemaking, q.needs_guidance, q.label_status)
        for q in Question.objects.all()
    }
    assert labels["accounts-01"] == (False, True, "verified")  # "guidance"
    assert labels["security-tools-01"] == (True, False, "verified")  # "sensemaking"
    assert labels["accounts-02"] == (False, False, "unlabelled")  # ""


def test_a_file_whose_labels_differ_from_the_banks_is_refused_naming_the_need():
    questions_import(content=FIXTURE.read_bytes(), filename="questions.json")
    doc = fixture_doc()
    doc["questions"][0]["needs_sensemaking"] = True  # accounts-01: guidance only in the bank
    with pytest.raises(
        QuestionError,
        match=r"questions\[0\] \('accounts-01'\), field \"needs_sensemaking\": differs",
    ):
        questions_import(content=as_bytes(doc), filename="bank.json")
    # The fixture written the older way is the same questions: nothing differs.
    report = questions_import(content=as_bytes(old_format(fixture_doc())), filename="old.json")
    assert report.created == [] and len(report.unchanged) == 18
