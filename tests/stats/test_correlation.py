"""Correlation: Pearson's r (with its Fisher interval) and Spearman's rho (with its
bootstrap) equal scipy called directly, and cases computed by hand; Pearson's undefined
values are None, never NaN."""

import random

import numpy as np
import pytest
from scipy import stats

from stats.bootstrap import percentile_interval, resample_draws
from stats.correlation import pearson, spearman, spearman_resamples

NAN = np.nan


def spearman_bootstrap(x, y, *, draws):
    """Rho with its percentile interval, composed as the survey report composes it."""
    return percentile_interval(spearman(x, y)[0], spearman_resamples(x, y, draws=draws))


def test_correlation_of_four_pairs_computed_by_hand():
    # xs = 1, 2, 3, 4 and ys = 2, 1, 4, 3 both have mean 2.5; the deviations are
    # (-1.5, -0.5, 0.5, 1.5) and (-0.5, -1.5, 1.5, 0.5): their products sum to
    # 0.75 * 4 = 3, and each side's squares sum to 5, so r = 3 / sqrt(5 * 5) = 0.6.
    # Fisher's z: atanh(0.6) = 0.6931, se = 1 / sqrt(4 - 3) = 1, so the 95% interval is
    # tanh(0.6931 -+ 1.96) = (-0.8529, 0.9901).
    found = pearson([1, 2, 3, 4], [2, 1, 4, 3])
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
    found = pearson([1, 2, 3], [1, 3, 2])
    assert found.r == pytest.approx(0.5)
    assert (found.low, found.high) == (None, None)


def test_correlation_equals_scipy_on_the_same_data():
    rng = random.Random(3)
    xs = [rng.random() for _ in range(40)]
    ys = [x * 0.7 + rng.random() * 0.3 for x in xs]
    expected = stats.pearsonr(xs, ys)
    interval = expected.confidence_interval(0.95)
    found = pearson(xs, ys)
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
    assert pearson(xs, ys) is None


def test_spearman_drops_pairs_with_a_missing_side():
    x = [1, 2, NAN, 4, 5, 6]
    y = [2, 1, 3, 5, NAN, 7]

    rho, p, n = spearman(x, y)

    expected = stats.spearmanr([1, 2, 4, 6], [2, 1, 5, 7])
    assert n == 4
    assert (rho, p) == pytest.approx((expected.statistic, expected.pvalue))


def test_the_spearman_bootstrap_equals_spearmanr_on_explicit_resamples_with_ties():
    rng = np.random.default_rng(7)
    x = rng.integers(1, 5, size=30).astype(float)  # few values: many ties
    y = x + rng.integers(-1, 2, size=30)
    draws = resample_draws(30, resamples=300, seed=3)
    explicit = [stats.spearmanr(x[d], y[d]).statistic for d in draws]

    interval = spearman_bootstrap(x, y, draws=draws)

    assert interval.estimate == pytest.approx(stats.spearmanr(x, y).statistic)
    assert interval.low == pytest.approx(np.percentile(explicit, 2.5), abs=1e-9)
    assert interval.high == pytest.approx(np.percentile(explicit, 97.5), abs=1e-9)
    np.testing.assert_allclose(spearman_resamples(x, y, draws=draws), explicit, rtol=0, atol=1e-9)


def test_the_spearman_bootstrap_leaves_out_missing_pairs_and_constant_resamples():
    x = np.array([1.0, 2.0, 3.0, NAN, 5.0])
    y = np.array([1.0, 3.0, 2.0, 4.0, 4.0])
    draws = np.array([[0, 1, 2, 3, 4], [0, 0, 0, 3, 3], [4, 2, 1, 1, 3]])

    interval = spearman_bootstrap(x, y, draws=draws)

    # Row 1 holds only x = 1 once the pair with nan is out: constant, rho undefined.
    assert (interval.resamples_used, interval.resamples_undefined) == (2, 1)
    first = stats.spearmanr([1, 2, 3, 5], [1, 3, 2, 4]).statistic
    third = stats.spearmanr([5, 3, 2, 2], [4, 2, 3, 3]).statistic
    assert interval.low == pytest.approx(np.percentile([first, third], 2.5))
