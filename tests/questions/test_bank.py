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
            topic="scams", external_id="scams-01", text="Is this text from my bank a scam?",
            need_type="guidance", mentions_prior_attempt=True, label_status=LabelStatus.VERIFIED,
            rewrite_cosine=0.5, rewrite_trigram_overlap=0.1,
        ),
        "long-sense": question_make(
            topic="scams", external_id="scams-02", text="w " * 340 + "why?",
            length_bucket=LengthBucket.LONG, need_type="sensemaking",
            label_status=LabelStatus.RESOLVED, rewrite_cosine=0.7,
        ),
        "accounts": question_make(
            topic="accounts", external_id="accounts-01", text="How do I lock my email account?"
        ),
    }  # fmt: skip


def ids(questions):
    return sorted(q.external_id for q in questions)


def test_bank_filters_by_topic_and_each_stratum(bank):
    scams = bank["short-guide"].topic
    assert ids(selectors.bank_questions(topic=scams)) == ["scams-01", "scams-02"]
    assert ids(selectors.bank_questions(length_bucket="long")) == ["scams-02"]
    assert ids(selectors.bank_questions(prior_attempt=True)) == ["scams-01"]
    assert ids(selectors.bank_questions(prior_attempt=False)) == ["accounts-01", "scams-02"]
    assert ids(selectors.bank_questions(need_type="sensemaking")) == ["scams-02"]
    assert ids(selectors.bank_questions(label_status="unlabelled")) == ["accounts-01"]
    assert ids(selectors.bank_questions(search="lock my")) == ["accounts-01"]
    assert ids(selectors.bank_questions(search="SCAMS-0", need_type="guidance")) == ["scams-01"]


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
        topic="accounts", external_id="accounts-02", need_type="guidance",
        mentions_prior_attempt=True, label_status=LabelStatus.LABELLED, labelled_by=researcher,
    )  # fmt: skip
    doc = questions_document(questions=selectors.bank_questions())
    assert doc["format"] == FORMAT and doc["topics"] == ["accounts", "scams"]
    items = {item["id"]: item for item in doc["questions"]}
    assert items["scams-01"] == {
        "id": "scams-01", "topic": "scams", "text": "Is this text from my bank a scam?",
        "need_type": "guidance", "mentions_prior_attempt": True,
    }  # fmt: skip
    assert items[pending.external_id]["need_type"] == ""
    assert items[pending.external_id]["mentions_prior_attempt"] is False
    assert all("criteria" not in item for item in doc["questions"])


def test_the_document_imports_into_an_empty_bank_unchanged(bank):
    before = {
        q.external_id: (q.topic.name, q.text, q.need_type, q.mentions_prior_attempt)
        for q in Question.objects.filter(label_status__in=["verified", "resolved"])
    }
    content = json.dumps(
        questions_document(questions=Question.objects.filter(external_id__startswith="scams"))
    )
    Question.objects.all().delete()
    report = questions_import(content=content, filename="bank.json")
    assert sorted(report.created) == ["scams-01", "scams-02"]
    after = {
        q.external_id: (q.topic.name, q.text, q.need_type, q.mentions_prior_attempt)
        for q in Question.objects.all()
    }
    assert after == before
    assert set(Question.objects.values_list("label_status", flat=True)) == {"verified"}
