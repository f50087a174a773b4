"""Text that participants and researchers send to the survey pages: a NUL, or more than its
limit. Each is refused with a message, never a 500, and nothing is stored."""

import pytest
from django.test import Client

from apps.accounts.roles import Role
from apps.surveys.models import Answer, Assignment, ReviewStatus, Study
from tests.surveys.flow import consent, finish

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
MAX_EXPLANATION = 2_000
REJECTION_MESSAGE_MAX_CHARS = 5_000
STUDY_TEXT_MAX_CHARS = 20_000
REASON = (
    "These ratings were given in well under a minute per scenario and every explanation "
    "is the same sentence, so we cannot use them."
)


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_an_explanation_past_its_limit_is_refused_and_not_saved(client, make_study, htmx):
    study = make_study(count=5)
    consent(client, study)
    assignment = Assignment.objects.get(position=1)
    url = f"/s/{study.slug}/scenario/{assignment.pk}/answer/H2/"
    response = client.post(
        url, {"value_H2": "4", "explanation_H2": "w" * 2_000_000}, **(HX if htmx else {})
    )
    assert response.status_code == 400
    assert f"explanations are limited to {MAX_EXPLANATION} characters" in response.text
    assert not Answer.objects.exists()


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (REASON + "\x00", "Null characters are not allowed."),
        (
            REASON + "w" * REJECTION_MESSAGE_MAX_CHARS,
            f"A message is at most {REJECTION_MESSAGE_MAX_CHARS:,} characters",
        ),
        (
            "too short",
            "Prolific requires a message of at least 100 characters explaining the rejection "
            "(9 so far)",
        ),
    ],
    ids=["NUL", "past the limit", "too short"],
)
def test_a_rejection_message_that_cannot_be_sent_is_refused_on_the_review_page(
    role_client, make_study, message, expected
):
    study = make_study(count=5)
    participant = finish(Client(), study)
    client = role_client(Role.RESEARCHER)
    page = client.post(
        f"/studies/{study.pk}/review/{participant.pk}/",
        {"action": "reject", "category": "TOO_QUICKLY", "message": message},
        follow=True,
    )
    assert page.status_code == 200
    assert f"{participant.prolific_pid}: not rejected: {expected}" in page.text
    participant.refresh_from_db()
    assert participant.review_status == ReviewStatus.PENDING
    assert participant.rejection_message == ""


@pytest.mark.parametrize("category", ["\x00", "NOT_A_CATEGORY", ""])
def test_a_rejection_category_that_is_not_prolifics_is_refused(role_client, make_study, category):
    study = make_study(count=5)
    participant = finish(Client(), study)
    client = role_client(Role.RESEARCHER)
    page = client.post(
        f"/studies/{study.pk}/review/{participant.pk}/",
        {"action": "reject", "category": category, "message": REASON},
        follow=True,
    )
    assert "Choose one of Prolific&#x27;s rejection categories." in page.text
    participant.refresh_from_db()
    assert participant.review_status == ReviewStatus.PENDING


@pytest.mark.parametrize("field", ["consent_text", "instructions_text", "example_text"])
def test_a_study_text_past_its_limit_is_refused_on_the_form(role_client, scenarios, field):
    client = role_client(Role.RESEARCHER)
    data = {
        "name": "Pilot",
        "prolific_study_id": "",
        "scenarios_per_participant": 5,
        "ratings_per_scenario": 5,
        "reservation_minutes": 60,
        "consent_text": "c",
        "instructions_text": "i",
        "example_text": "e",
        "code_completed": "AAAA1",
        "code_no_consent": "BBBB1",
        "code_failed_attention": "CCCC1",
        "code_full": "DDDD1",
        "scenarios": [s.pk for s in scenarios[:6]],
        field: "t" * (STUDY_TEXT_MAX_CHARS + 1),
    }
    page = client.post("/studies/new/", data)
    assert page.status_code in (200, 400, 422)
    assert f"at most {STUDY_TEXT_MAX_CHARS} characters" in page.text
    assert not Study.objects.filter(name="Pilot").exists()
