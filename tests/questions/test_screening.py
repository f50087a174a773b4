"""Screening in pairs: the pair rule, the refusals, the queue, and the agreement statistics."""

import pytest

from apps.accounts.roles import Role
from apps.questions.errors import QuestionError
from apps.questions.models import LabelStatus, Question, ScreeningDecision, ScreeningOutcome
from apps.questions.selectors.screening import (
    agreement,
    screening_dashboard,
    screening_left,
    screening_next,
)
from apps.questions.services import screening_decide
from tests.factories import exclusion_reasons_seeded, sampled_make, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def reasons():
    return exclusion_reasons_seeded()


@pytest.fixture
def pair():
    return [user_with_role(Role.RESEARCHER, username=n) for n in ("ana", "ben")]


def include(sampled, researcher):
    return screening_decide(sampled=sampled, researcher=researcher, include=True)


def exclude(sampled, researcher, reason, note=""):
    return screening_decide(
        sampled=sampled, researcher=researcher, include=False, reason=reason, note=note
    )


def test_nine_reasons_are_seeded_in_the_published_order(reasons):
    assert [r.text for r in reasons] == [
        "No clear question",
        "Only relationship or therapeutic support",
        "Outdated technology",
        "Asks for inappropriate help",
        "Only asks others to report",
        "Needs several turns",
        "Needs images or other non-text content",
        "Not English",
        "Longer than 1,000 characters",
    ]


def test_two_includes_make_the_post_a_question_in_the_samples_topic(pair):
    (sampled,) = sampled_make(1, topic="scams", body="Is this text from my bank a scam?")
    first = include(sampled, pair[0])
    assert first.sampled.outcome == ScreeningOutcome.OPEN and not Question.objects.exists()
    second = include(sampled, pair[1])
    sampled.refresh_from_db()
    assert (sampled.outcome, sampled.decisions_count) == (ScreeningOutcome.INCLUDED, 2)
    assert second.sampled.outcome == ScreeningOutcome.INCLUDED
    question = Question.objects.get()
    post = sampled.post
    assert question.external_id == post.external_id and question.source_post == post
    assert question.topic.name == "scams"
    assert question.text == question.original_text == "Is this text from my bank a scam?"
    assert question.length_bucket == "short" and question.label_status == LabelStatus.UNLABELLED


def test_an_include_and_an_exclude_exclude_the_post_and_make_no_question(pair, reasons):
    (sampled,) = sampled_make(1)
    exclude(sampled, pair[0], reasons[2], note="Asks about Windows XP")
    include(sampled, pair[1])
    sampled.refresh_from_db()
    assert sampled.outcome == ScreeningOutcome.EXCLUDED and sampled.decisions_count == 2
    assert not Question.objects.exists()
    assert ScreeningDecision.objects.get(include=False).note == "Asks about Windows XP"


def test_a_third_decision_is_refused(pair, reasons):
    (sampled,) = sampled_make(1)
    include(sampled, pair[0])
    exclude(sampled, pair[1], reasons[0])
    third = user_with_role(Role.RESEARCHER)
    with pytest.raises(QuestionError, match="already has its two decisions"):
        include(sampled, third)
    sampled.refresh_from_db()
    assert sampled.decisions_count == 2 and sampled.decisions.count() == 2


def test_the_same_researcher_cannot_decide_twice_nor_change_a_decision(pair, reasons):
    (sampled,) = sampled_make(1)
    include(sampled, pair[0])
    with pytest.raises(QuestionError, match=r"already screened this post.*cannot be changed"):
        exclude(sampled, pair[0], reasons[0])
    sampled.refresh_from_db()
    assert sampled.decisions_count == 1 and sampled.outcome == ScreeningOutcome.OPEN
    assert list(sampled.decisions.values_list("include", flat=True)) == [True]


@pytest.mark.parametrize("chars,outcome", [(999, "included"), (1000, "excluded")])
def test_a_post_of_1000_characters_or_more_is_excluded_by_the_length_rule(pair, chars, outcome):
    (sampled,) = sampled_make(1, body="x" * chars)
    include(sampled, pair[0])
    include(sampled, pair[1])
    sampled.refresh_from_db()
    assert sampled.outcome == outcome
    assert Question.objects.filter(source_post=sampled.post).exists() == (outcome == "included")
    if outcome == "included":
        assert Question.objects.get().length_bucket == "long"
    else:
        (row,) = [r for r in screening_dashboard()["rows"] if r["name"] == "accounts"]
        assert (row["excluded"], row["length_rule"]) == (1, 1)


def test_an_exclusion_needs_an_active_reason_and_an_inclusion_none(pair, reasons):
    (sampled,) = sampled_make(1)
    with pytest.raises(QuestionError, match="Choose the reason"):
        screening_decide(sampled=sampled, researcher=pair[0], include=False)
    with pytest.raises(QuestionError, match="An included post has no exclusion reason"):
        screening_decide(sampled=sampled, researcher=pair[0], include=True, reason=reasons[0])
    reasons[0].active = False
    reasons[0].save(update_fields=["active"])
    with pytest.raises(QuestionError, match="no longer offered"):
        exclude(sampled, pair[0], reasons[0])
    assert not ScreeningDecision.objects.exists()


def test_only_researchers_screen(reasons):
    (sampled,) = sampled_make(1)
    for role in (Role.EXPERT, Role.REVIEWER, None):
        with pytest.raises(QuestionError, match="Only researchers screen posts"):
            include(sampled, user_with_role(role))
    assert not ScreeningDecision.objects.exists()


def test_the_queue_offers_posts_with_fewer_than_two_decisions_and_none_by_the_screener(
    pair, reasons
):
    a, b, c = sampled_make(3)
    ana, ben = pair
    cy = user_with_role(Role.RESEARCHER, username="cy")
    assert screening_next(researcher=ana) == a and screening_left(researcher=ana) == 3
    include(a, ana)
    assert screening_next(researcher=ana) == b and screening_left(researcher=ana) == 2
    # Ben still gets A (one decision, not his), then B.
    assert screening_next(researcher=ben) == a
    include(a, ben)
    # A is complete: Cy never gets it.
    assert screening_next(researcher=cy) == b and screening_left(researcher=cy) == 2
    # Skipping B moves on to C, and past the last back to the first.
    assert screening_next(researcher=cy, after=b.pk) == c
    assert screening_next(researcher=cy, after=c.pk) == b


def test_the_queue_filters_by_topic(pair):
    (accounts,) = sampled_make(1, topic="accounts")
    (scams,) = sampled_make(1, topic="scams")
    from apps.questions.models import Topic

    assert screening_next(researcher=pair[0], topic=Topic.objects.get(name="scams")) == scams
    assert screening_left(researcher=pair[0], topic=Topic.objects.get(name="accounts")) == 1
    assert screening_next(researcher=pair[0]) == accounts


def test_agreement_and_kappa_against_a_hand_computed_table():
    # Ten completed pairs, first decision against second (I include, E exclude):
    #
    #                 second I   second E
    #     first I        4          2        | 6
    #     first E        1          3        | 4
    #                    5          5          10
    #
    # observed agreement p_o = (4 + 3) / 10 = 0.7
    # chance agreement   p_e = (6/10)(5/10) + (4/10)(5/10) = 0.30 + 0.20 = 0.5
    # kappa = (p_o - p_e) / (1 - p_e) = (0.7 - 0.5) / 0.5 = 0.4
    first = [True] * 4 + [True] * 2 + [False] * 1 + [False] * 3
    second = [True] * 4 + [False] * 2 + [True] * 1 + [False] * 3
    result = agreement(first, second)
    assert (result.pairs, result.agreed) == (10, 7)
    assert result.percent == pytest.approx(70.0)
    assert result.kappa == pytest.approx(0.4)


def test_kappa_is_undefined_when_every_decision_is_one_class_and_says_why():
    result = agreement([True, True, True], [True, True, True])
    assert result.kappa is None and result.percent == 100.0
    assert result.kappa_note == "every decision is “include”"
    empty = agreement([], [])
    assert empty.kappa is None and empty.percent is None
    assert empty.kappa_note == "no pair of decisions is complete yet"


def test_the_dashboard_counts_progress_and_reads_pairs_first_against_second_by_time(reasons):
    people = [user_with_role(Role.RESEARCHER) for _ in range(4)]
    posts = sampled_make(6, topic="harassment")
    # Four completed pairs, by different pairs of people, giving the 2x2 table
    #   first I / second I: 1, first I / second E: 1, first E / second I: 1, first E / E: 1
    # p_o = 2/4 = 0.5; p_e = (2/4)(2/4) + (2/4)(2/4) = 0.5; kappa = 0.
    include(posts[0], people[0]), include(posts[0], people[1])
    include(posts[1], people[2]), exclude(posts[1], people[3], reasons[1])
    exclude(posts[2], people[1], reasons[1]), include(posts[2], people[0])
    exclude(posts[3], people[3], reasons[0]), exclude(posts[3], people[2], reasons[1])
    include(posts[4], people[0])  # one decision only: counted as "by one", not in a pair
    board = screening_dashboard()
    (row,) = [r for r in board["rows"] if r["name"] == "harassment"]
    assert {k: row[k] for k in ("sampled", "none", "one", "both", "included", "excluded")} == {
        "sampled": 6,
        "none": 1,
        "one": 1,
        "both": 4,
        "included": 1,
        "excluded": 3,
    }
    assert (row["agreement"].pairs, row["agreement"].agreed) == (4, 2)
    assert row["agreement"].kappa == pytest.approx(0.0)
    assert board["total"]["sampled"] == 6 and board["total"]["agreement"].pairs == 4
    given = {r["reason__text"]: r["count"] for r in board["reasons"]}
    assert given == {reasons[0].text: 1, reasons[1].text: 3}


def test_the_dashboard_never_counts_a_reason_given_on_a_post_still_open(pair, reasons):
    (sampled,) = sampled_make(1)
    exclude(sampled, pair[0], reasons[7])
    assert screening_dashboard()["reasons"] == []


@pytest.mark.django_db(transaction=True)
def test_three_researchers_deciding_at_once_leave_exactly_two_decisions():
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connection

    (sampled,) = sampled_make(1)
    people = [user_with_role(Role.RESEARCHER) for _ in range(3)]
    barrier = Barrier(3)

    def decide(person) -> str:
        barrier.wait()
        try:
            include(sampled, person)
            return "saved"
        except QuestionError as exc:
            return str(exc)
        finally:
            connection.close()

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(decide, people))
    assert results.count("saved") == 2
    assert any("already has its two decisions" in r for r in results)
    sampled.refresh_from_db()
    assert (sampled.decisions_count, sampled.decisions.count()) == (2, 2)
    assert sampled.outcome == ScreeningOutcome.INCLUDED and Question.objects.count() == 1
