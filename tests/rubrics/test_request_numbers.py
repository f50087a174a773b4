"""Numbers in queries and forms: every odd value is refused or replaced with a message,
never answered with a 500 (str.isdigit() admits "²", which int() refuses)."""

import pytest
from django.urls import reverse

from apps.rubrics.models import Rubric
from tests.factories import assign, draft_with_criteria, question_make

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
ODD = ["²", "-1", "99999999999", "abc", "\x00"]
REFUSED = ["²", "-1", "abc", "\x00"]  # not whole numbers at all


@pytest.fixture
def draft(expert, reviewer):
    question = question_make()
    assign(question, author=expert, reviewer=reviewer)
    return draft_with_criteria(question, expert)


@pytest.mark.parametrize("value", ODD)
def test_freshness_days_falls_back_to_180_and_says_why(client, researcher, value):
    client.force_login(researcher)
    page = client.get(reverse("rubrics:freshness"), {"days": value})
    assert page.status_code == 200
    assert 'name="days" min="0" value="180"' in page.text
    assert "Showing 180 days instead." in page.text


@pytest.mark.parametrize("value", ODD)
def test_sending_back_an_odd_rubric_id_is_refused_with_400(client, researcher, value):
    client.force_login(researcher)
    page = client.post(reverse("rubrics:freshness"), {"rubric": value, "reason": "Stale."})
    assert page.status_code == 400
    assert 'class="message message-error"' in page.text  # "Choose rubrics...", "Null characters..."
    assert Rubric.objects.count() == 0


@pytest.mark.parametrize("value", REFUSED)
@pytest.mark.parametrize("htmx", [False, True])
def test_samples_show_with_odd_ids_shows_none_and_says_why(client, expert, draft, value, htmx):
    client.force_login(expert)
    url = reverse("rubrics:samples", args=[draft.pk])
    page = client.get(url, {"show": value}, **(HX if htmx else {}))
    assert page.status_code == 200
    assert 'data-testid="sample-answer"' not in page.text
    assert "separated by commas" in page.text


@pytest.mark.parametrize("value", REFUSED)
@pytest.mark.parametrize("htmx", [False, True])
def test_samples_exclude_with_odd_ids_is_refused_with_400(client, expert, draft, value, htmx):
    client.force_login(expert)
    url = reverse("rubrics:samples", args=[draft.pk])
    page = client.post(url, {"exclude": value}, **(HX if htmx else {}))
    assert page.status_code == 400
    assert "separated by commas" in page.text


@pytest.mark.parametrize("value", ["²", "¹", "\u0661"])  # isdigit() says yes to each
def test_shared_criteria_points_that_are_not_ascii_digits_are_refused(client, researcher, value):
    client.force_login(researcher)
    page = client.post(
        reverse("rubrics:shared"),
        {"text": "Puts the key step first.", "polarity": "positive", "points": value},
    )
    assert page.status_code == 422
    assert "points must be 5, 3, 2 or 1" in page.text


@pytest.mark.parametrize("url", ["rubrics:index", "rubrics:workspace", "rubrics:export"])
def test_a_topic_filter_holding_a_nul_shows_every_topic(client, researcher, url):
    client.force_login(researcher)
    page = client.get(reverse(url), {"topic": "\x00", "page": "\x00", "state": "\x00"})
    assert page.status_code == 200
