"""The calibration statistics equal scipy and scikit-learn called directly, and a case
computed by hand; undefined values are None, never NaN."""

import random

import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, f1_score

from apps.grading.statistics import label_agreement, score_correlation


def test_correlation_of_four_pairs_computed_by_hand():
    # xs = 1, 2, 3, 4 and ys = 2, 1, 4, 3 both have mean 2.5; the deviations are
    # (-1.5, -0.5, 0.5, 1.5) and (-0.5, -1.5, 1.5, 0.5): their products sum to
    # 0.75 * 4 = 3, and each side's squares sum to 5, so r = 3 / sqrt(5 * 5) = 0.6.
    # Fisher's z: atanh(0.6) = 0.6931, se = 1 / sqrt(4 - 3) = 1, so the 95% interval is
    # tanh(0.6931 -+ 1.96) = (-0.8529, 0.9901).
    found = score_correlation([1, 2, 3, 4], [2, 1, 4, 3])
    assert found.r == pytest.approx(0.6)
    assert found.n == 4
    assert (found.low, found.high) == (
        pytest.approx(-0.8529, abs=1e-4),
        pytest.approx(0.9901, abs=1e-4),
    )
    # Two-sided p for r = 0.6, n = 4: t = r * sqrt(2 / (1 - r^2)) = 1.0607 on 2 degrees of
    # freedom, p = 1 - t / sqrt(t^2 + 2) = 0.4.
    assert found.p == pytest.approx(0.4)


def test_three_pairs_have_an_r_but_no_interval():
    # Fisher's interval has a standard error of 1 / sqrt(n - 3): undefined for n = 3.
    found = score_correlation([1, 2, 3], [1, 3, 2])
    assert found.r == pytest.approx(0.5)
    assert (found.low, found.high) == (None, None)


def test_correlation_equals_scipy_on_the_same_data():
    rng = random.Random(3)
    xs = [rng.random() for _ in range(40)]
    ys = [x * 0.7 + rng.random() * 0.3 for x in xs]
    expected = stats.pearsonr(xs, ys)
    interval = expected.confidence_interval(0.95)
    found = score_correlation(xs, ys)
    assert (found.r, found.p, found.n) == (
        pytest.approx(expected.statistic),
        pytest.approx(expected.pvalue),
        40,
    )
    assert (found.low, found.high) == (pytest.approx(interval.low), pytest.approx(interval.high))


@pytest.mark.parametrize(
    "xs,ys",
    [
        ([0.5, 0.7], [0.4, 0.9]),
        ([], []),
        ([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]),
        ([0.1, 0.2, 0.3], [1.0, 1.0, 1.0]),
    ],
    ids=["two pairs", "none", "constant rater", "constant expert"],
)
def test_correlation_is_none_when_undefined(xs, ys):
    assert score_correlation(xs, ys) is None


def test_agreement_of_a_two_by_two_table_computed_by_hand():
    # Expert (truth) against rater: 4 both met, 1 rater met / expert not, 2 rater not /
    # expert met, 3 both not met; n = 10.
    # accuracy = (4 + 3) / 10 = 0.7. Chance agreement: rater says met 5/10, expert 6/10,
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, so kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    # F1(met) = 2*4 / (2*4 + 1 + 2) = 8/11; F1(not met) = 2*3 / (2*3 + 2 + 1) = 2/3;
    # macro F1 = (8/11 + 2/3) / 2 = 23/33.
    rater = [True] * 4 + [True] + [False] * 2 + [False] * 3
    expert = [True] * 4 + [False] + [True] * 2 + [False] * 3
    found = label_agreement(rater, expert)
    assert found.n == 10
    assert found.accuracy == pytest.approx(0.7)
    assert found.kappa == pytest.approx(0.4)
    assert found.f1_macro == pytest.approx(23 / 33)


def test_agreement_equals_scikit_learn_on_the_same_data():
    rng = random.Random(11)
    expert = [rng.random() < 0.6 for _ in range(200)]
    rater = [e if rng.random() < 0.8 else not e for e in expert]
    found = label_agreement(rater, expert)
    assert found.kappa == pytest.approx(cohen_kappa_score(expert, rater))
    assert found.f1_macro == pytest.approx(f1_score(expert, rater, average="macro"))
    assert found.accuracy == pytest.approx(
        sum(a == b for a, b in zip(rater, expert, strict=True)) / 200
    )


def test_agreement_with_one_class_only_has_no_kappa_or_f1_and_under_three_is_none():
    found = label_agreement([True, True, True], [True, True, True])
    assert (found.accuracy, found.kappa, found.f1_macro) == (1.0, None, None)
    assert label_agreement([True, False], [True, False]) is None
