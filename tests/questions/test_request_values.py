"""Values researchers' browsers send to the question bank's pages: a NUL, a number that is
not one, a note past its limit. Each is refused on the page that was sent (status 200 for an
HTMX fragment, 400 for a page), never with a 500, and nothing is stored."""

import pytest
from django.urls import reverse

from apps.questions.models import LabelStatus, ScreeningDecision
from tests.factories import (
    exclusion_reasons_seeded,
    question_from_post_make,
    question_make,
    rewrite_made,
    sampled_make,
)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
NOTE_MAX_CHARS = 5_000  # a screening note's limit
REASON_OFFERED = "Choose one of the exclusion reasons offered."
NUMBERS = ["abc", "²", "-1", "1.5", "99999999999999999999", "\x00"]


@pytest.fixture
def signed_in(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def reasons():
    return exclusion_reasons_seeded()


def decide_url(sampled) -> str:
    return reverse("questions:screening-decide", args=[sampled.pk])


@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize(
    ("note", "expected"),
    [
        ("Spam\x00 link", "Null characters are not allowed."),
        (
            "x" * 2_000_000,
            f"A note is at most {NOTE_MAX_CHARS:,} characters (this one has 2000000).",
        ),
    ],
    ids=["NUL", "2,000,000 characters"],
)
def test_a_screening_note_that_cannot_be_kept_is_refused_on_the_page(
    signed_in, reasons, htmx, note, expected
):
    (sampled,) = sampled_make(1)
    page = signed_in.post(
        decide_url(sampled), {"include": "1", "note": note}, **(HX if htmx else {})
    )
    assert page.status_code == (200 if htmx else 400)
    assert expected in page.text
    assert sampled.post.title in page.text  # the same post, to decide again
    assert not ScreeningDecision.objects.exists()


def test_a_note_of_the_limit_is_kept(signed_in, reasons):
    (sampled,) = sampled_make(1)
    signed_in.post(decide_url(sampled), {"include": "1", "note": "n" * NOTE_MAX_CHARS})
    assert len(ScreeningDecision.objects.get().note) == NOTE_MAX_CHARS


@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize("value", NUMBERS)
def test_an_exclusion_reason_that_is_not_one_is_refused_on_the_page(
    signed_in, reasons, htmx, value
):
    (sampled,) = sampled_make(1)
    page = signed_in.post(decide_url(sampled), {"reason": value}, **(HX if htmx else {}))
    assert page.status_code == (200 if htmx else 400)
    expected = "Null characters are not allowed." if value == "\x00" else REASON_OFFERED
    assert f"Reason: {expected}" in page.text
    assert not ScreeningDecision.objects.exists()


@pytest.mark.parametrize("value", NUMBERS)
def test_the_queue_takes_an_odd_after_or_topic_as_none(signed_in, reasons, value):
    (sampled,) = sampled_make(1)
    for htmx in (False, True):
        page = signed_in.get(
            reverse("questions:screening"), {"after": value, "topic": value}, **(HX if htmx else {})
        )
        assert page.status_code == 200 and sampled.post.title in page.text
    post = signed_in.post(decide_url(sampled), {"include": "1", "topic": value})
    assert post.status_code == 302 and ScreeningDecision.objects.count() == 1


@pytest.mark.parametrize("value", NUMBERS)
def test_the_label_pages_take_an_odd_topic_or_question_as_none(signed_in, value):
    question = question_make()
    for htmx in (False, True):
        extra = HX if htmx else {}
        labels = signed_in.get(
            reverse("questions:labels"), {"topic": value, "question": value}, **extra
        )
        assert labels.status_code == 200 and question.external_id in labels.text
        disputes = signed_in.get(reverse("questions:disputes"), {"topic": value}, **extra)
        assert disputes.status_code == 200
    labelled = signed_in.post(
        reverse("questions:label", args=[question.pk]),
        {
            "topic": value,
            "prior_attempt": "no",
            "sensemaking": "yes",
            "guidance": "no",
            "step": "label",
        },
    )
    assert labelled.status_code == 302
    question.refresh_from_db()
    assert question.label_status == LabelStatus.LABELLED


@pytest.mark.parametrize("value", NUMBERS)
def test_resolving_a_question_that_is_not_one_is_not_found(signed_in, value):
    question = question_make()
    resolve = signed_in.post(
        reverse("questions:disputes"),
        {
            "question": value,
            "prior_attempt": "no",
            "sensemaking": "yes",
            "guidance": "no",
            "step": "resolve",
        },
    )
    assert resolve.status_code == 404
    question.refresh_from_db()
    assert question.label_status == LabelStatus.UNLABELLED


def test_a_preview_of_an_edit_past_a_questions_limit_is_refused_and_not_compared(signed_in):
    rewrite = rewrite_made(question_from_post_make(body="My account was taken."), text="Taken.")
    url = reverse("questions:rewrite", args=[rewrite.pk])
    page = signed_in.get(url, {"text": "word " * 10_000})
    assert page.status_code == 400
    assert "A question is at most 40,000 characters (this text has 50000)." in page.text
    fragment = signed_in.get(url, {"text": "word " * 10_000}, **HX)
    assert fragment.status_code == 200 and "at most 40,000 characters" in fragment.text


def test_approving_a_text_past_a_questions_limit_is_refused_and_nothing_changes(signed_in):
    question = question_from_post_make(body="My account was taken.")
    rewrite = rewrite_made(question, text="Taken.")
    page = signed_in.post(reverse("questions:rewrite", args=[rewrite.pk]), {"text": "w" * 40_001})
    assert page.status_code == 422
    assert "A question is at most 40,000 characters (this text has 40001)." in page.text
    question.refresh_from_db()
    assert question.text == "My account was taken." and question.rewrite is None


@pytest.mark.parametrize("value", ["9" * 30, "2147483648", "\x00", "²"])
def test_quota_settings_past_the_columns_are_refused_on_the_form(signed_in, value):
    url = reverse("questions:quotas")
    before = signed_in.get(url).context["settings"]
    page = signed_in.post(url, {"target_per_topic": value, "minimum_per_stratum": value})
    assert page.status_code == 422
    assert 'class="error' in page.text or "errorlist" in page.text
    after = signed_in.get(url).context["settings"]
    assert (after.target_per_topic, after.minimum_per_stratum) == (
        before.target_per_topic,
        before.minimum_per_stratum,
    )
