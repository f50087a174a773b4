"""Undoing one's own screening decisions: the service (a stack of one's own decisions,
refused once the pair is complete, recorded as a withdrawal), the undo endpoint for every
role, with and without HTMX, and that nobody undoes another researcher's decision."""

import threading

import pytest
from django.db import connection
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.errors import QuestionError
from apps.questions.models import (
    Question,
    SampledPost,
    ScreeningDecision,
    ScreeningOutcome,
    ScreeningWithdrawal,
)
from apps.questions.services import screening_decide, screening_undo
from tests.conftest import ROLES
from tests.factories import exclusion_reasons_seeded, sampled_make, user_with_role

HX = {"HTTP_HX_REQUEST": "true"}
UNDO = "questions:screening-undo"


@pytest.fixture
def reasons(db):
    return exclusion_reasons_seeded()


def test_undo_withdraws_the_last_decision_and_again_goes_further_back(db, researcher, reasons):
    first, second = sampled_make(2)
    screening_decide(sampled=first, researcher=researcher, include=True)
    screening_decide(
        sampled=second, researcher=researcher, include=False, reason=reasons[2], note="off"
    )
    undone = screening_undo(researcher=researcher)
    assert undone.pk == second.pk and undone.decisions_count == 0
    withdrawn = ScreeningWithdrawal.objects.get()
    assert (withdrawn.sampled, withdrawn.include, withdrawn.reason, withdrawn.note) == (
        second,
        False,
        reasons[2],
        "off",
    )
    assert screening_undo(researcher=researcher).pk == first.pk
    assert not ScreeningDecision.objects.exists()
    assert ScreeningWithdrawal.objects.count() == 2
    assert set(SampledPost.objects.values_list("decisions_count", flat=True)) == {0}
    with pytest.raises(QuestionError, match="no screening decision to undo"):
        screening_undo(researcher=researcher)
    # Withdrawn, the post is theirs to screen again, and the decision may be made anew.
    again = screening_decide(sampled=first, researcher=researcher, include=False, reason=reasons[0])
    assert again.sampled.decisions_count == 1


def test_undo_is_refused_once_the_other_screener_has_decided(db, researcher, reasons):
    (sampled,) = sampled_make(1)
    other = user_with_role(Role.RESEARCHER)
    screening_decide(sampled=sampled, researcher=researcher, include=True)
    screening_decide(sampled=sampled, researcher=other, include=True)
    with pytest.raises(QuestionError, match="pair is complete \\(included\\)"):
        screening_undo(researcher=researcher)
    with pytest.raises(QuestionError, match="pair is complete"):
        screening_undo(researcher=other)
    sampled.refresh_from_db()
    assert (sampled.decisions_count, sampled.outcome) == (2, ScreeningOutcome.INCLUDED)
    assert Question.objects.filter(source_post=sampled.post).exists()
    assert not ScreeningWithdrawal.objects.exists()


def test_undo_of_a_decision_that_is_no_longer_the_last_is_refused(db, researcher, reasons):
    first, second = sampled_make(2)
    made = screening_decide(sampled=first, researcher=researcher, include=True)
    screening_decide(sampled=second, researcher=researcher, include=True)
    with pytest.raises(QuestionError, match="no longer your last one"):
        screening_undo(researcher=researcher, decision_id=made.pk)
    assert ScreeningDecision.objects.count() == 2


def test_undo_withdraws_only_ones_own_decision(db, researcher, reasons):
    (sampled,) = sampled_make(1)
    other = user_with_role(Role.RESEARCHER)
    theirs = screening_decide(sampled=sampled, researcher=other, include=True)
    with pytest.raises(QuestionError, match="no screening decision to undo"):
        screening_undo(researcher=researcher)
    with pytest.raises(QuestionError, match="no screening decision to undo"):
        screening_undo(researcher=researcher, decision_id=theirs.pk)
    screening_decide(sampled=sampled, researcher=researcher, include=False, reason=reasons[0])
    with pytest.raises(QuestionError, match="no longer your last one"):
        screening_undo(researcher=researcher, decision_id=theirs.pk)
    assert ScreeningDecision.objects.filter(researcher=other).get() == theirs
    with pytest.raises(QuestionError, match="Only researchers"):
        screening_undo(researcher=user_with_role(Role.EXPERT))


def at_once(**calls) -> dict[str, str]:
    """Run each call in a thread of its own, released together: "done" or the refusal."""
    start, outcomes = threading.Barrier(len(calls)), {}

    def run(name, call):
        try:
            start.wait()
            call()
            outcomes[name] = "done"
        except QuestionError as exc:
            outcomes[name] = str(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=item) for item in calls.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_an_undo_and_the_other_screeners_decision_at_once_leave_a_consistent_pair(reasons):
    """The undo and the other screener's decision take the post's row lock in turn: either
    the undo comes first (the post keeps the other's decision alone) or the decision does
    (the pair is complete, and the undo is refused); never a count that disagrees with
    the rows."""
    for seed in (1, 2, 3):
        (sampled,) = sampled_make(1, seed=seed)
        mine, other = user_with_role(Role.RESEARCHER), user_with_role(Role.RESEARCHER)
        screening_decide(sampled=sampled, researcher=mine, include=True)
        outcomes = at_once(
            undo=lambda m=mine: screening_undo(researcher=m),
            decide=lambda s=sampled, o=other: screening_decide(
                sampled=s, researcher=o, include=True
            ),
        )
        sampled.refresh_from_db()
        assert outcomes["decide"] == "done"
        rows = ScreeningDecision.objects.filter(sampled=sampled)
        assert sampled.decisions_count == rows.count()
        if outcomes["undo"] == "done":
            assert list(rows.values_list("researcher", flat=True)) == [other.pk]
            assert sampled.outcome == ScreeningOutcome.OPEN
        else:
            assert "pair is complete" in outcomes["undo"]
            assert sampled.outcome == ScreeningOutcome.INCLUDED and rows.count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_only_researchers_may_undo(role_client, role, reasons):
    (sampled,) = sampled_make(1)
    screener = user_with_role(Role.RESEARCHER)
    screening_decide(sampled=sampled, researcher=screener, include=True)
    client = role_client(role)
    response = client.post(reverse(UNDO))
    if role == Role.RESEARCHER:
        # Another researcher has no decision of their own: the screener's stays.
        assert response.status_code == 302
        page = client.get(response["Location"]).content.decode()
        assert "You have no screening decision to undo." in page
    else:
        assert response.status_code == 403
    assert ScreeningDecision.objects.filter(researcher=screener).count() == 1
    assert client.get(reverse(UNDO)).status_code in (302, 403, 405)


@pytest.mark.django_db
def test_an_anonymous_visitor_is_sent_to_sign_in(client, reasons):
    response = client.post(reverse(UNDO))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
def test_another_pairs_screener_cannot_undo_a_decision_by_naming_it(client, reasons):
    (sampled,) = sampled_make(1)
    screener, stranger = user_with_role(Role.RESEARCHER), user_with_role(Role.RESEARCHER)
    theirs = screening_decide(sampled=sampled, researcher=screener, include=True)
    client.force_login(stranger)
    text = client.post(reverse(UNDO), {"decision": theirs.pk}, **HX).content.decode()
    assert "no screening decision to undo" in text
    assert ScreeningDecision.objects.get() == theirs


@pytest.mark.django_db
def test_the_queue_offers_the_undo_key_and_htmx_returns_the_undone_post(client, reasons):
    first, second = sampled_make(2, topic="scams")
    researcher = user_with_role(Role.RESEARCHER)
    client.force_login(researcher)
    url = reverse("questions:screening-decide", args=[first.pk])
    text = client.post(url, {"include": "1", "topic": "scams"}, **HX).content.decode()
    assert 'aria-keyshortcuts="u"' in text and second.post.title in text
    assert f"You included {first.post.external_id}; the other screener" in text
    decision = ScreeningDecision.objects.get()
    data = {"decision": decision.pk, "topic": "scams"}
    undone = client.post(reverse(UNDO), data, **HX)
    text = undone.content.decode()
    assert undone.status_code == 200 and "<html" not in text
    assert f"Undone: your decision on {first.post.external_id} is withdrawn" in text
    assert first.post.title in text and 'name="include"' in text
    assert "2 posts left for you to screen in scams" in text
    # The same key pressed twice names the same decision: the second press undoes nothing.
    again = client.post(reverse(UNDO), data, **HX).content.decode()
    assert "no screening decision to undo" in again


@pytest.mark.django_db
def test_undo_without_javascript_lands_on_the_undone_post(client, reasons):
    (sampled,) = sampled_make(1, topic="scams")
    researcher = user_with_role(Role.RESEARCHER)
    decision = screening_decide(sampled=sampled, researcher=researcher, include=True)
    client.force_login(researcher)
    response = client.post(reverse(UNDO), {"decision": decision.pk, "topic": "scams"})
    expected = reverse("questions:screening-decide", args=[sampled.pk]) + "?topic=scams"
    assert response.status_code == 302 and response["Location"] == expected
    page = client.get(expected).content.decode()
    assert "is withdrawn. Decide it again." in page and 'name="include"' in page
    bad = client.post(reverse(UNDO), {"decision": "abc"}, follow=True).content.decode()
    assert "That is not a decision of yours" in bad


@pytest.mark.django_db
def test_once_the_pair_is_complete_the_page_says_the_decision_stands(client, reasons):
    (sampled,) = sampled_make(1)
    researcher, other = user_with_role(Role.RESEARCHER), user_with_role(Role.RESEARCHER)
    mine = screening_decide(sampled=sampled, researcher=researcher, include=True)
    screening_decide(sampled=sampled, researcher=other, include=False, reason=reasons[1])
    client.force_login(researcher)
    page = client.get(reverse("questions:screening")).content.decode()
    assert "stands: the other screener has decided on it too" in page
    assert 'aria-keyshortcuts="u"' not in page
    refused = client.post(reverse(UNDO), {"decision": mine.pk}, **HX).content.decode()
    assert "pair is complete (excluded)" in refused
    assert ScreeningDecision.objects.count() == 2
