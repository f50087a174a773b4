import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.rubrics.errors import ScoringError
from apps.rubrics.scoring import ScoredCriterion, score

criterion_st = st.builds(
    lambda i, polarity, kind, points: ScoredCriterion(i, polarity, kind, points),
    st.integers(),
    st.sampled_from(["positive", "negative"]),
    st.sampled_from(["factual", "presentation"]),
    st.sampled_from([1, 2, 3, 5]),
)
rubric_st = st.lists(criterion_st, min_size=1, max_size=40).map(
    lambda cs: [ScoredCriterion(n, c.polarity, c.kind, c.points) for n, c in enumerate(cs)]
)


def published_rubric():
    """43 points in all: positives 5+5+3+3+2+2+1 = 21, negatives 5+5+3+3+2+2+2 = 22."""
    positives = [5, 5, 3, 3, 2, 2, 1]
    negatives = [5, 5, 3, 3, 2, 2, 2]
    criteria = [ScoredCriterion(f"p{i}", "positive", "factual", p) for i, p in enumerate(positives)]
    criteria += [
        ScoredCriterion(f"n{i}", "negative", "factual", p) for i, p in enumerate(negatives)
    ]
    return criteria


def test_the_published_example_scores_24_of_43_as_55_8_percent():
    criteria = published_rubric()
    # Met positives 5+5+3 = 13; avoided negatives 5+3+3 = 11: 24 points earned.
    met = {"p0", "p1", "p2", "n1", "n4", "n5", "n6"}
    result = score(criteria, {c.id: c.id in met for c in criteria})
    assert (result.earned_points, result.max_points) == (24, 43)
    assert result.percent == 55.8
    assert result.score == pytest.approx(24 / 43)


def test_a_met_negative_earns_nothing_and_an_avoided_one_earns_its_points():
    avoid = ScoredCriterion(1, "negative", "factual", 5)
    assert score([avoid], {1: True}).earned_points == 0
    assert score([avoid], {1: False}).earned_points == 5


def test_breakdown_rates_count_each_group():
    criteria = [
        ScoredCriterion(1, "positive", "factual", 5),
        ScoredCriterion(2, "positive", "factual", 3),
        ScoredCriterion(3, "negative", "factual", 2),
        ScoredCriterion(4, "positive", "presentation", 3),
        ScoredCriterion(5, "negative", "presentation", 2),
    ]
    result = score(criteria, {1: True, 2: False, 3: False, 4: False, 5: True})
    assert (result.positive_factual_met.earned, result.positive_factual_met.total) == (1, 2)
    assert result.positive_factual_met.value == 0.5
    assert result.negative_factual_avoided.value == 1.0
    assert result.positive_presentation_met.value == 0.0
    assert result.negative_presentation_avoided.value == 0.0
    assert result.earned_points == 5 + 2


def test_a_group_without_criteria_has_no_rate_rather_than_zero():
    result = score([ScoredCriterion(1, "positive", "factual", 5)], {1: True})
    assert result.negative_factual_avoided.value is None


def test_a_missing_verdict_is_an_error_not_a_miss():
    with pytest.raises(ScoringError, match="No verdict for criterion 2"):
        score(
            [
                ScoredCriterion(1, "positive", "factual", 5),
                ScoredCriterion(2, "negative", "factual", 3),
            ],
            {1: True},
        )


@pytest.mark.parametrize("points", [0, 4, 6, -5])
def test_points_outside_the_set_are_refused(points):
    with pytest.raises(ScoringError, match="5, 3, 2 or 1"):
        score([ScoredCriterion(1, "positive", "factual", points)], {1: True})


@given(rubric_st, st.data())
def test_score_is_always_between_0_and_1(criteria, data):
    verdicts = {c.id: data.draw(st.booleans()) for c in criteria}
    result = score(criteria, verdicts)
    assert 0 <= result.score <= 1
    assert result.max_points == sum(c.points for c in criteria)


@given(rubric_st)
def test_all_positives_met_and_all_negatives_avoided_scores_1(criteria):
    verdicts = {c.id: c.polarity == "positive" for c in criteria}
    assert score(criteria, verdicts).score == 1


@given(rubric_st)
def test_all_positives_missed_and_all_negatives_met_scores_0(criteria):
    verdicts = {c.id: c.polarity == "negative" for c in criteria}
    assert score(criteria, verdicts).score == 0


@given(rubric_st, st.data())
def test_flipping_every_verdict_earns_the_complement(criteria, data):
    verdicts = {c.id: data.draw(st.booleans()) for c in criteria}
    flipped = {k: not v for k, v in verdicts.items()}
    first, second = score(criteria, verdicts), score(criteria, flipped)
    assert first.earned_points + second.earned_points == first.max_points
