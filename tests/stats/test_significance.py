"""The tests of significance equal scipy.stats called directly, a case worked by hand each
where one is short, and every undefined case answers with its reason, never NaN."""

import math

import numpy as np
import pytest
from scipy import stats

from stats import significance
from stats.significance import Undefined


@pytest.fixture
def rng():
    return np.random.default_rng(17)


def test_wilcoxon_equals_scipy_two_sided_with_zero_differences_dropped(rng):
    x = rng.integers(0, 20, size=30) / 20
    y = np.clip(x + rng.integers(-2, 3, size=30) / 20, 0, 1)  # ties and zero differences

    found = significance.wilcoxon(x, y, minimum=3)

    expected = stats.wilcoxon(x, y)
    assert (found.statistic, found.p, found.n) == (
        pytest.approx(expected.statistic),
        pytest.approx(expected.pvalue),
        30,
    )
    assert found.undefined is None


def test_wilcoxon_of_five_pairs_by_hand():
    # Differences 1, 2, 3, 4, -5: ranks 1..5, the negative one ranked 5. W = min(10, 5) = 5;
    # exact two-sided p: 2 * P(W <= 5) over the 32 sign patterns = 2 * 10 / 32 = 0.625.
    found = significance.wilcoxon([1, 2, 3, 4, 0], [0, 0, 0, 0, 5])
    assert (found.statistic, found.p) == (5.0, pytest.approx(0.625))


def test_wilcoxon_is_undefined_under_its_minimum_and_when_every_difference_is_zero():
    assert significance.wilcoxon([0.5, 0.6], [0.4, 0.7], minimum=3) == significance.Outcome(
        2, undefined=Undefined.TOO_FEW
    )
    same = significance.wilcoxon([0.5, 0.6, 0.7], [0.5, 0.6, 0.7])
    assert (same.statistic, same.p, same.undefined) == (None, None, Undefined.NO_DIFFERENCE)
    assert significance.wilcoxon([], []).undefined is Undefined.TOO_FEW


def test_kruskal_equals_scipy_with_the_tie_correction(rng):
    groups = [rng.integers(0, 5, size=n) / 4 for n in (6, 9, 4)]

    found = significance.kruskal(groups)

    expected = stats.kruskal(*groups)
    assert (found.statistic, found.p) == (
        pytest.approx(expected.statistic),
        pytest.approx(expected.pvalue),
    )
    assert found.n == 19


def test_kruskal_is_undefined_with_one_group_or_one_value():
    assert significance.kruskal([[0.1, 0.2]]).undefined is Undefined.TOO_FEW
    assert significance.kruskal([]).undefined is Undefined.TOO_FEW
    assert significance.kruskal([[0.5, 0.5], [0.5]]).undefined is Undefined.CONSTANT


def test_kolmogorov_smirnov_equals_scipy_and_by_hand(rng):
    a, b = rng.random(12), rng.random(7) + 0.2
    found = significance.kolmogorov_smirnov(a, b)
    expected = stats.ks_2samp(a, b)
    assert (found.statistic, found.p, found.n) == (
        pytest.approx(expected.statistic),
        pytest.approx(expected.pvalue),
        19,
    )
    # Samples that do not overlap: D = 1; exact p = 2 / C(4, 2) = 1/3.
    apart = significance.kolmogorov_smirnov([0.6, 0.3], [0.9, 0.975])
    assert (apart.statistic, apart.p) == (1.0, pytest.approx(1 / 3))


def test_kolmogorov_smirnov_says_which_sample_is_empty():
    assert significance.kolmogorov_smirnov([], [0.5]).undefined is Undefined.FIRST_EMPTY
    assert significance.kolmogorov_smirnov([0.5], []).undefined is Undefined.SECOND_EMPTY


def test_spearman_equals_scipy_and_leaves_out_pairs_with_a_nan(rng):
    x, y = rng.random(15), rng.random(15)
    x[3], y[8] = np.nan, np.nan

    found = significance.spearman(x, y)

    both = ~(np.isnan(x) | np.isnan(y))
    expected = stats.spearmanr(x[both], y[both])
    assert (found.statistic, found.p, found.n) == (
        pytest.approx(expected.statistic),
        pytest.approx(expected.pvalue),
        13,
    )


def test_spearman_says_which_side_is_constant_and_when_there_are_too_few_pairs():
    assert significance.spearman([1, 2], [2, 1], minimum=3).undefined is Undefined.TOO_FEW
    assert significance.spearman([1, 1, 1], [1, 2, 3]).undefined is Undefined.FIRST_CONSTANT
    assert significance.spearman([1, 2, 3], [4, 4, 4]).undefined is Undefined.SECOND_CONSTANT
    # Two pairs have a rho and no p (scipy's NaN): None, never NaN.
    two = significance.spearman([1, 2], [2, 1])
    assert two.statistic == pytest.approx(-1.0) and two.p is None


def test_skewness_and_kurtosis_equal_scipy_with_their_tests(rng):
    values = rng.beta(2, 5, size=40)

    skew, kurtosis = significance.skewness(values), significance.kurtosis(values)

    assert skew.value == pytest.approx(stats.skew(values, bias=True))
    assert (skew.z, skew.p) == pytest.approx(tuple(stats.skewtest(values)))
    assert kurtosis.value == pytest.approx(stats.kurtosis(values, fisher=True, bias=True))
    assert (kurtosis.z, kurtosis.p) == pytest.approx(tuple(stats.kurtosistest(values)))
    assert not kurtosis.approximate and skew.undefined is None


def test_skewness_and_kurtosis_by_hand_with_too_few_values_for_their_tests():
    # Mean 1/4; m2 = 3/16, m3 = 3/32: g1 = m3 / m2^1.5 = 2/sqrt(3). m4 = 21/256: excess
    # kurtosis m4 / m2^2 - 3 = 7/3 - 3 = -2/3. Four values: neither test runs.
    values = [0.0, 0.0, 0.0, 1.0]
    skew, kurtosis = significance.skewness(values), significance.kurtosis(values)
    assert skew.value == pytest.approx(2 / math.sqrt(3))
    assert kurtosis.value == pytest.approx(-2 / 3)
    for found in (skew, kurtosis):
        assert (found.z, found.p, found.undefined) == (None, None, Undefined.TOO_FEW)


def test_the_kurtosis_test_is_approximate_under_twenty_values(rng):
    values = rng.random(significance.KURTOSISTEST_APPROXIMATE_UNDER - 1)
    expected = stats.kurtosistest(values)
    found = significance.kurtosis(values)
    assert found.approximate and found.p == pytest.approx(expected.pvalue)
    assert not significance.skewness(values).approximate


def test_the_shape_of_one_value_or_of_equal_values_is_undefined():
    assert significance.skewness([0.5]) == significance.Shape(1, undefined=Undefined.TOO_FEW)
    assert significance.kurtosis([0.5] * 30).undefined is Undefined.CONSTANT
    assert significance.kurtosis([0.5] * 30).value is None


def test_benjamini_hochberg_equals_scipy_over_the_p_values_there_are():
    p_values = [0.01, None, 0.04, 0.03, None, 0.2]

    adjusted = significance.benjamini_hochberg(p_values)

    expected = stats.false_discovery_control([0.01, 0.04, 0.03, 0.2], method="bh")
    assert adjusted[1] is None and adjusted[4] is None
    assert [adjusted[i] for i in (0, 2, 3, 5)] == pytest.approx(list(expected))
    assert significance.benjamini_hochberg([None, None]) == [None, None]
    assert significance.benjamini_hochberg([]) == []
