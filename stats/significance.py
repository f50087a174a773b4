"""Tests of significance, each scipy.stats on data checked first, and the correction of a
family of p-values.

- Wilcoxon signed-rank of paired samples (scipy.stats.wilcoxon, two-sided, zero differences
  dropped: Wilcoxon's method; exact p for up to 50 pairs without ties, else the normal
  approximation).
- Kruskal-Wallis across groups (scipy.stats.kruskal, with the tie correction).
- Two-sample Kolmogorov-Smirnov (scipy.stats.ks_2samp, two-sided, exact where it can be).
- Spearman's rho with its two-sided p (scipy.stats.spearmanr), pairs with a nan left out.
- Skewness (Fisher-Pearson g1, scipy.stats.skew with bias=True) with D'Agostino's test
  (scipy.stats.skewtest), and excess kurtosis (scipy.stats.kurtosis, fisher=True, bias=True)
  with the Anscombe-Glynn test (scipy.stats.kurtosistest).
- Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control, method "bh").

A test that is undefined on its data (too few observations, every difference zero, a
constant sample) answers with the reason (`Undefined`) instead of a number, and never with
NaN: the caller words the reason for its readers.
"""

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats

MIN_SKEWTEST = 8  # scipy.stats.skewtest needs 8 observations
MIN_KURTOSISTEST = 5  # scipy.stats.kurtosistest needs 5 ...
KURTOSISTEST_APPROXIMATE_UNDER = 20  # ... and is approximate under 20


class Undefined(StrEnum):
    """Why a test has no value on its data."""

    TOO_FEW = "too few"  # fewer observations (or groups) than the test needs
    NO_DIFFERENCE = "no difference"  # every paired difference is zero
    CONSTANT = "constant"  # every value is the same
    FIRST_EMPTY = "first empty"  # the first of two samples has no value
    SECOND_EMPTY = "second empty"
    FIRST_CONSTANT = "first constant"  # every value of the first variable is the same
    SECOND_CONSTANT = "second constant"


@dataclass(frozen=True)
class Outcome:
    """A test's statistic and p over n observations (pairs, or values in all), or the reason
    it has none. p is None where scipy gives none (NaN), as with rho over two pairs."""

    n: int
    statistic: float | None = None
    p: float | None = None
    undefined: Undefined | None = None


@dataclass(frozen=True)
class Shape:
    """Skewness or excess kurtosis (`value`) with the z and p of its test of normality.

    `undefined` says why `value` is None (too few values, or every value the same), or, with a
    value, why the test has no z and p (fewer values than it needs). `approximate`: the test
    holds fewer values than it is accurate for.
    """

    n: int
    value: float | None = None
    z: float | None = None
    p: float | None = None
    undefined: Undefined | None = None
    approximate: bool = False


def _number(value) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def wilcoxon(x, y, *, minimum: int = 1) -> Outcome:
    """Wilcoxon signed-rank test of the pairs (x[i], y[i]), two-sided; undefined under
    `minimum` pairs or where every difference is zero."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    if n < max(minimum, 1):
        return Outcome(n, undefined=Undefined.TOO_FEW)
    if np.all(x == y):
        return Outcome(n, undefined=Undefined.NO_DIFFERENCE)
    with warnings.catch_warnings():
        # scipy warns of ties and small samples, where it switches method as documented.
        warnings.simplefilter("ignore")
        result = stats.wilcoxon(x, y)
    return Outcome(n, float(result.statistic), _number(result.pvalue))


def kruskal(groups: Sequence) -> Outcome:
    """Kruskal-Wallis H test across `groups` (each a sequence of values); undefined with
    fewer than two groups or where every value is the same. n counts the values in all."""
    groups = [np.asarray(g, dtype=float) for g in groups]
    n = sum(len(g) for g in groups)
    if len(groups) < 2:
        return Outcome(n, undefined=Undefined.TOO_FEW)
    if np.ptp(np.concatenate(groups)) == 0:
        return Outcome(n, undefined=Undefined.CONSTANT)
    result = stats.kruskal(*groups)
    return Outcome(n, float(result.statistic), _number(result.pvalue))


def kolmogorov_smirnov(first, second) -> Outcome:
    """Two-sample Kolmogorov-Smirnov test (D), two-sided; undefined where a sample is empty.
    n counts the values of both."""
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    n = len(first) + len(second)
    if len(first) == 0:
        return Outcome(n, undefined=Undefined.FIRST_EMPTY)
    if len(second) == 0:
        return Outcome(n, undefined=Undefined.SECOND_EMPTY)
    result = stats.ks_2samp(first, second)
    return Outcome(n, float(result.statistic), _number(result.pvalue))


def spearman(x, y, *, minimum: int = 2) -> Outcome:
    """Spearman's rho of the pairs (x[i], y[i]) with its two-sided p, pairs with a nan left
    out; undefined under `minimum` pairs or where a side is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    both = ~(np.isnan(x) | np.isnan(y))
    x, y, n = x[both], y[both], int(both.sum())
    if n < max(minimum, 2):
        return Outcome(n, undefined=Undefined.TOO_FEW)
    # A constant side has no rho: scipy says so with nan and a warning in every request's log.
    if np.ptp(x) == 0:
        return Outcome(n, undefined=Undefined.FIRST_CONSTANT)
    if np.ptp(y) == 0:
        return Outcome(n, undefined=Undefined.SECOND_CONSTANT)
    result = stats.spearmanr(x, y)
    return Outcome(n, float(result.statistic), _number(result.pvalue))


def _shape(values, measure, minimum: int, test) -> Shape:
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n < 2:
        return Shape(n, undefined=Undefined.TOO_FEW)
    if np.ptp(values) == 0:
        return Shape(n, undefined=Undefined.CONSTANT)
    with warnings.catch_warnings():
        # scipy warns that kurtosistest is approximate under 20 values: `approximate` says so.
        warnings.simplefilter("ignore")
        value = float(measure(values))
        if n < minimum:
            return Shape(n, value, undefined=Undefined.TOO_FEW)
        result = test(values)
    return Shape(n, value, float(result.statistic), _number(result.pvalue))


def skewness(values) -> Shape:
    """The Fisher-Pearson skewness g1 of `values` with D'Agostino's test (from 8 values)."""
    return _shape(values, lambda v: stats.skew(v, bias=True), MIN_SKEWTEST, stats.skewtest)


def kurtosis(values) -> Shape:
    """The excess kurtosis of `values` (0 for a normal distribution) with the Anscombe-Glynn
    test (from 5 values; approximate under 20)."""
    found = _shape(
        values,
        lambda v: stats.kurtosis(v, fisher=True, bias=True),
        MIN_KURTOSISTEST,
        stats.kurtosistest,
    )
    if found.z is None or found.n >= KURTOSISTEST_APPROXIMATE_UNDER:
        return found
    return Shape(found.n, found.value, found.z, found.p, approximate=True)


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """The Benjamini-Hochberg adjusted p of each p-value, over those that are not None (one
    family of tests); None stays None."""
    found = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if found:
        values = stats.false_discovery_control([p_values[i] for i in found], method="bh")
        for i, value in zip(found, values, strict=True):
            adjusted[i] = float(value)
    return adjusted
