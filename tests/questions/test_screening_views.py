"""The samples page, the screening queue and the dashboard, as a researcher's browser (or
HTMX) sees them; and that nobody else sees them."""

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.models import Question, Sample, SampledPost, ScreeningOutcome, Topic
from apps.questions.services import screening_decide
from tests.factories import exclusion_reasons_seeded, posts_make, sampled_make, user_with_role

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def reasons():
    return exclusion_reasons_seeded()


@pytest.fixture
def signed_in(client, researcher):
    client.force_login(researcher)
    return client


def urls() -> list[str]:
    (sampled,) = sampled_make(1)
    return [
        reverse("questions:samples"),
        reverse("questions:screening"),
        reverse("questions:screening-decide", args=[sampled.pk]),
        reverse("questions:screening-dashboard"),
    ]


@pytest.mark.parametrize("role", [Role.RESEARCHER, Role.EXPERT, Role.REVIEWER, None])
def test_every_page_is_for_researchers_only(role_client, role, reasons):
    client = role_client(role)
    for url in urls():
        expected = 200 if role == Role.RESEARCHER else 403
        assert client.get(url).status_code == expected, url
    decide = urls()[2]
    refused = client.post(decide, {"include": "1"})
    assert refused.status_code == (302 if role == Role.RESEARCHER else 403)
    assert SampledPost.objects.filter(decisions_count__gt=0).count() == (
        1 if role == Role.RESEARCHER else 0
    )


def test_anonymous_visitors_are_sent_to_sign_in(client, reasons):
    for url in urls():
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    response = client.post(urls()[2], {"include": "1"})
    assert response.status_code == 302 and not SampledPost.objects.filter(decisions_count=1)


def test_the_samples_page_draws_one_topic_and_lists_it_with_its_progress(signed_in, researcher):
    posts_make(30, topics=("scams",))
    response = signed_in.post(
        reverse("questions:samples"),
        {"topic": Topic.objects.get(name="scams").pk, "size": "10", "seed": "77"},
        follow=True,
    )
    sample = Sample.objects.get()
    assert (sample.size, sample.seed, sample.pool, sample.drawn_by) == (10, 77, 30, researcher)
    text = response.content.decode()
    assert "Drew 1 sample(s): scams: 10 of 30." in text
    assert "<code>77</code>" in text and 'data-testid="sample-row"' in text


def test_the_samples_page_draws_all_topics_at_once_and_names_those_without_posts(signed_in):
    posts_make(5, topics=("accounts",))
    response = signed_in.post(reverse("questions:samples"), {"size": "100"}, follow=True)
    (sample,) = Sample.objects.all()
    assert (sample.topic.name, sample.size, sample.pool) == ("accounts", 5, 5)
    text = response.content.decode()
    assert "accounts: 5 of 5 (all that were left)" in text
    assert "No post labelled “scams” is left to sample" in text


def test_a_draw_that_cannot_be_made_is_refused_on_the_page(signed_in):
    response = signed_in.post(reverse("questions:samples"), {"size": "100"})
    assert response.status_code == 422
    assert "No post labelled “accounts” is left to sample" in response.content.decode()
    bad = signed_in.post(reverse("questions:samples"), {"size": "0"})
    assert bad.status_code == 422 and not Sample.objects.exists()


def test_the_queue_shows_the_post_without_any_decision_and_its_shortcuts(
    signed_in, reasons, researcher
):
    posts = sampled_make(2, body="My ex knows my iCloud password. " * 40)  # 1,280 characters
    other = user_with_role(Role.RESEARCHER)
    screening_decide(sampled=posts[0], researcher=other, include=False, reason=reasons[7])
    response = signed_in.get(reverse("questions:screening"))
    text = response.content.decode()
    assert response.status_code == 200 and "<html" in text
    assert posts[0].post.title in text and "r/privacy" in text
    assert "1280 characters: 1,000 or more" in text
    assert "2 posts left for you to screen" in text
    # The other screener's exclusion is nowhere on the page (its reason is just a button).
    shown = text.split('<section id="screening"')[1].split("</section>")[0]
    assert shown.count("Not English") == 1 and "Not English</button>" in shown
    assert "decision" not in shown.lower() and other.get_username() not in text
    for key in ("i", "s", *"123456789"):
        assert f'aria-keyshortcuts="{key}"' in text


def test_the_queue_with_htmx_is_only_the_fragment(signed_in, reasons):
    sampled_make(1)
    response = signed_in.get(reverse("questions:screening"), **HX)
    text = response.content.decode()
    assert response.status_code == 200 and "<html" not in text
    assert text.lstrip().startswith('<section id="screening"')


def test_a_decision_without_javascript_redirects_to_the_queue(signed_in, reasons):
    first, second = sampled_make(2, topic="scams")
    url = reverse("questions:screening-decide", args=[first.pk])
    response = signed_in.post(url, {"reason": reasons[0].pk, "note": "vague", "topic": "scams"})
    assert response.status_code == 302
    assert response["Location"] == reverse("questions:screening") + "?topic=scams"
    first.refresh_from_db()
    assert first.decisions_count == 1 and first.decisions.get().note == "vague"
    page = signed_in.get(response["Location"]).content.decode()
    assert f"Saved: you excluded ({reasons[0].text}) {first.post.external_id}." in page
    assert second.post.title in page


def test_a_decision_with_htmx_returns_the_next_post_as_a_fragment(signed_in, reasons):
    first, second = sampled_make(2)
    url = reverse("questions:screening-decide", args=[first.pk])
    response = signed_in.post(url, {"include": "1"}, **HX)
    text = response.content.decode()
    assert response.status_code == 200 and "<html" not in text
    assert f"Saved: you included {first.post.external_id}." in text
    assert second.post.title in text and "1 post left for you" in text


def test_the_second_include_makes_the_question_and_says_so(signed_in, reasons):
    (sampled,) = sampled_make(1)
    screening_decide(sampled=sampled, researcher=user_with_role(Role.RESEARCHER), include=True)
    url = reverse("questions:screening-decide", args=[sampled.pk])
    text = signed_in.post(url, {"include": "1"}, **HX).content.decode()
    assert "Both screeners included it: it is now a question in the bank." in text
    assert "Nothing left for you to screen" in text
    assert Question.objects.filter(source_post=sampled.post).exists()


def test_a_refused_decision_is_said_and_the_next_post_follows(signed_in, reasons, researcher):
    first, second = sampled_make(2)
    screening_decide(sampled=first, researcher=researcher, include=True)
    url = reverse("questions:screening-decide", args=[first.pk])
    text = signed_in.post(url, {"reason": reasons[0].pk}, **HX).content.decode()
    assert "You have already screened this post" in text and second.post.title in text
    plain = signed_in.post(url, {"reason": reasons[0].pk}, follow=True).content.decode()
    assert "You have already screened this post" in plain
    first.refresh_from_db()
    assert first.decisions_count == 1


def test_skipping_moves_to_the_next_post_with_and_without_htmx(signed_in, reasons):
    first, second = sampled_make(2)
    url = reverse("questions:screening") + f"?after={first.pk}"
    for extra in ({}, HX):
        text = signed_in.get(url, **extra).content.decode()
        assert second.post.title in text and first.post.title not in text


def test_a_posts_own_page_says_when_it_is_no_longer_the_researchers_to_screen(
    signed_in, researcher, reasons
):
    (sampled,) = sampled_make(1)
    url = reverse("questions:screening-decide", args=[sampled.pk])
    assert 'name="include"' in signed_in.get(url).content.decode()
    screening_decide(sampled=sampled, researcher=researcher, include=True)
    text = signed_in.get(url).content.decode()
    assert "You have screened" in text and "you can undo it" in text
    assert 'name="include"' not in text
    missing = reverse("questions:screening-decide", args=[sampled.pk + 1000])
    assert signed_in.get(missing).status_code == 404


def test_the_dashboard_shows_progress_agreement_and_the_undefined_kappa(signed_in, reasons):
    people = [user_with_role(Role.RESEARCHER) for _ in range(2)]
    a, b, _c = sampled_make(3, topic="scams")
    for sampled in (a, b):
        for person in people:
            screening_decide(sampled=sampled, researcher=person, include=True)
    text = signed_in.get(reverse("questions:screening-dashboard")).content.decode()
    assert "the published study did not report the agreement" in text
    assert "<strong>first</strong> decision against its <strong>second</strong>" in text
    assert "100.0%" in text and '— <span class="help">(every decision is “include”)' in text
    assert SampledPost.objects.filter(outcome=ScreeningOutcome.INCLUDED).count() == 2
