"""Text that reviewers and researchers send to the rubric pages: a NUL, or more than its
limit. Each is refused on the page with the text kept to correct, never a 500, and nothing
is stored."""

import pytest
from django.urls import reverse

from apps.rubrics import services
from apps.rubrics.models import ReviewComment, RubricState, SharedCriterionSet
from tests.factories import assign, draft_with_criteria, question_make

pytestmark = pytest.mark.django_db
COMMENT_MAX_CHARS = 4_000
NOTES_MAX_CHARS = 5_000


@pytest.fixture
def in_review(expert, reviewer):
    question = question_make()
    assign(question, author=expert, reviewer=reviewer)
    rubric = draft_with_criteria(question, expert)
    return services.rubric_submit_for_review(rubric=rubric, user=expert)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Say where\x00 the page is.", "Null characters are not allowed."),
        (
            "x" * 2_000_000,
            f"A comment is at most {COMMENT_MAX_CHARS:,} characters (this one has 2000000).",
        ),
    ],
    ids=["NUL", "2,000,000 characters"],
)
def test_a_request_for_changes_that_cannot_be_kept_is_refused_on_the_page(
    client, reviewer, in_review, message, expected
):
    client.force_login(reviewer)
    page = client.post(
        reverse("rubrics:request_changes", args=[in_review.pk]), {"message": message}
    )
    assert page.status_code == 400
    assert f"Nothing was requested: {expected}" in page.text
    assert 'data-testid="changes-error"' in page.text
    in_review.refresh_from_db()
    assert in_review.state == RubricState.IN_REVIEW and not ReviewComment.objects.exists()


def test_a_request_for_changes_of_the_limit_is_kept(client, reviewer, in_review):
    client.force_login(reviewer)
    message = "m" * COMMENT_MAX_CHARS
    client.post(reverse("rubrics:request_changes", args=[in_review.pk]), {"message": message})
    in_review.refresh_from_db()
    assert in_review.state == RubricState.CHANGES_REQUESTED
    assert ReviewComment.objects.get().body == message


def shared_post(**changes) -> dict:
    current = services.shared_criteria_current()
    rows = list(current.criteria.values_list("text", "polarity", "points"))
    data = {
        "text": [text for text, _p, _n in rows],
        "polarity": [polarity for _t, polarity, _n in rows],
        "points": [str(points) for _t, _p, points in rows],
        "notes": "Reworded.",
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"notes": "n" * (NOTES_MAX_CHARS + 1)},
            f"Notes are at most {NOTES_MAX_CHARS:,} characters",
        ),
        ({"notes": "Re\x00worded."}, "Null characters are not allowed."),
    ],
    ids=["long notes", "NUL in notes"],
)
def test_shared_criteria_notes_that_cannot_be_kept_publish_nothing(
    client, researcher, changes, expected
):
    client.force_login(researcher)
    before = SharedCriterionSet.objects.count()
    page = client.post(reverse("rubrics:shared"), shared_post(**changes))
    assert page.status_code == 422 and expected in page.text
    assert SharedCriterionSet.objects.count() == before


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Puts the key\x00 step first.", "Criterion 1: Null characters are not allowed."),
        ("k" * 1001, "Criterion 1: Keep a criterion under 1,000 characters (this one has 1001)."),
    ],
    ids=["NUL", "1,001 characters"],
)
def test_a_shared_criterion_text_that_cannot_be_kept_publishes_nothing(
    client, researcher, text, expected
):
    client.force_login(researcher)
    before = SharedCriterionSet.objects.count()
    data = shared_post()
    data["text"] = [text, *data["text"][1:]]
    page = client.post(reverse("rubrics:shared"), data)
    assert page.status_code == 422 and expected in page.text
    assert SharedCriterionSet.objects.count() == before
