"""The bank's reads (filters, metric means) and its assay-questions/1 writer."""

import json

import pytest

from apps.questions.interchange import FORMAT, questions_document
from apps.questions.models import LabelStatus, LengthBucket, Question
from apps.questions.selectors import bank as selectors
from apps.questions.services import questions_import
from tests.factories import question_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def bank():
    return {
        "short-guide": question_make(
            topic="scams",
            external_id="scams-01",
            text="Is this text from my bank a scam?",
            needs_guidance=True,
            mentions_prior_attempt=True,
            label_status=LabelStatus.VERIFIED,
            rewrite_cosine=0.5,
            rewrite_trigram_overlap=0.1,
        ),
        "long-sense": question_make(
            topic="scams",
            external_id="scams-02",
            text="w " * 340 + "why?",
            length_bucket=LengthBucket.LONG,
            needs_sensemaking=True,
            label_status=LabelStatus.RESOLVED,
            rewrite_cosine=0.7,
        ),
        "both": question_make(
            topic="harassment",
            external_id="harassment-01",
            needs_sensemaking=True,
            needs_guidance=True,
            label_status=LabelStatus.VERIFIED,
        ),
        "neither": question_make(
            topic="harassment",
            external_id="harassment-02",
            label_status=LabelStatus.VERIFIED,
        ),
        "accounts": question_make(
            topic="accounts", external_id="accounts-01", text="How do I lock my email account?"
        ),
    }


def ids(questions):
    return sorted(q.external_id for q in questions)


def test_bank_filters_by_topic_and_each_stratum(bank, researcher):
    def found(**filters):
        return ids(selectors.bank_questions(viewer=researcher, **filters))

    scams = bank["short-guide"].topic
    assert found(topic=scams) == ["scams-01", "scams-02"]
    assert found(length_bucket="long") == ["scams-02"]
    assert found(prior_attempt=True) == ["scams-01"]
    assert found(prior_attempt=False) == [
        "accounts-01",
        "harassment-01",
        "harassment-02",
        "scams-02",
    ]
    assert found(label_status="unlabelled") == ["accounts-01"]
    assert found(search="lock my") == ["accounts-01"]
    assert found(search="SCAMS-0", needs_guidance=True) == ["scams-01"]


def test_bank_filters_by_each_need_the_unlabelled_in_neither_answer(bank, researcher):
    def needing(**needs):
        return ids(selectors.bank_questions(viewer=researcher, **needs))

    assert needing(needs_sensemaking=True) == ["harassment-01", "scams-02"]
    assert needing(needs_sensemaking=False) == ["harassment-02", "scams-01"]
    assert needing(needs_guidance=True) == ["harassment-01", "scams-01"]
    assert needing(needs_guidance=False) == ["harassment-02", "scams-02"]
    assert needing(needs_sensemaking=True, needs_guidance=True) == ["harassment-01"]
    assert needing(needs_sensemaking=False, needs_guidance=False) == ["harassment-02"]


def test_metric_means_are_over_the_questions_that_have_them(bank):
    means = selectors.rewrite_metrics_means(questions=Question.objects.all())
    assert means["cosine"] == pytest.approx(0.6) and means["cosine_count"] == 2
    assert means["trigram"] == pytest.approx(0.1) and means["trigram_count"] == 1
    none = selectors.rewrite_metrics_means(
        questions=Question.objects.filter(pk=bank["accounts"].pk)
    )
    assert none["cosine"] is None and none["cosine_count"] == 0


def test_the_document_carries_only_settled_labels(bank, researcher):
    pending = question_make(
        topic="accounts",
        external_id="accounts-02",
        needs_guidance=True,
        mentions_prior_attempt=True,
        label_status=LabelStatus.LABELLED,
        labelled_by=researcher,
    )
    doc = questions_document(questions=selectors.bank_questions(viewer=researcher))
    assert doc["format"] == FORMAT and doc["topics"] == ["accounts", "scams", "harassment"]
    items = {item["id"]: item for item in doc["questions"]}
    assert items["scams-01"] == {
        "id": "scams-01",
        "topic": "scams",
        "text": "Is this text from my bank a scam?",
        "mentions_prior_attempt": True,
        "needs_sensemaking": False,
        "needs_guidance": True,
    }

    def needs(key):
        return items[key]["needs_sensemaking"], items[key]["needs_guidance"]

    assert needs("harassment-01") == (True, True) and needs("harassment-02") == (False, False)
    for unsettled in (pending.external_id, "accounts-01"):
        assert needs(unsettled) == (None, None), "not labelled in the file"
        assert items[unsettled]["mentions_prior_attempt"] is False
    assert all("need_type" not in item for item in doc["questions"])
    assert all("criteria" not in item for item in doc["questions"])


def test_the_document_imports_into_an_empty_bank_unchanged(bank):
    def labels(questions):
        return {
            q.external_id: (
                q.topic.name,
                q.text,
                q.mentions_prior_attempt,
                q.needs_sensemaking,
                q.needs_guidance,
            )
            for q in questions
        }

    before = labels(Question.objects.filter(label_status__in=["verified", "resolved"]))
    content = json.dumps(
        questions_document(questions=Question.objects.exclude(topic__name="accounts"))
    )
    Question.objects.all().delete()
    report = questions_import(content=content, filename="bank.json")
    assert sorted(report.created) == ["harassment-01", "harassment-02", "scams-01", "scams-02"]
    assert labels(Question.objects.all()) == before
    assert set(Question.objects.values_list("label_status", flat=True)) == {"verified"}


def test_an_unsettled_question_goes_out_and_comes_back_unlabelled(bank):
    content = json.dumps(
        questions_document(questions=Question.objects.filter(topic__name="accounts"))
    )
    Question.objects.all().delete()
    questions_import(content=content, filename="bank.json")
    (question,) = Question.objects.all()
    assert question.label_status == LabelStatus.UNLABELLED
