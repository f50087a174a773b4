"""Correlation: Pearson's r with its confidence interval, and Spearman's rho with its cluster
bootstrap interval.

- Pearson's r of paired values with its two-sided p and the 95% confidence interval from
  Fisher's z, as scipy.stats.pearsonr computes them.
- Spearman's rho (scipy.stats.spearmanr, through `significance.spearman`), and rho of every
  bootstrap resample at once, for its percentile interval (`bootstrap`).
"""

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from . import significance

MIN_PAIRS = 3  # below this, r says nothing
MIN_PAIRS_INTERVAL = 4  # Fisher's z interval needs n - 3 > 0


@dataclass(frozen=True)
class Correlation:
    r: float
    p: float
    n: int
    low: float | None  # the 95% interval; None under four pairs, where it is undefined
    high: float | None


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


# --- Pearson's r -----------------------------------------------------------------------------


def pearson(xs: Sequence[float], ys: Sequence[float]) -> Correlation | None:
    """Pearson's r of paired values with p, n and the 95% confidence interval; None when there
    are fewer than MIN_PAIRS pairs or either side does not vary."""
    if len(xs) != len(ys):
        raise ValueError("Values must come in pairs.")
    n = len(xs)
    if n < MIN_PAIRS or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    result = stats.pearsonr(xs, ys)
    r, p = _number(result.statistic), _number(result.pvalue)
    if r is None or p is None:
        return None
    low = high = None
    if n >= MIN_PAIRS_INTERVAL:
        interval = result.confidence_interval(0.95)
        low, high = _number(interval.low), _number(interval.high)
    return Correlation(r=r, p=p, n=n, low=low, high=high)


# --- Spearman's rho --------------------------------------------------------------------------


def spearman(x, y) -> tuple[float, float, int]:
    """(rho, two-sided p, pairs used), pairs with a nan left out; rho and p are nan where rho
    is undefined (under two pairs, a constant side), p alone where scipy gives none."""
    found = significance.spearman(x, y)
    if found.undefined is not None:
        return np.nan, np.nan, found.n
    return found.statistic, np.nan if found.p is None else found.p, found.n


def spearman_resamples(x, y, *, draws) -> np.ndarray:
    """Rho of every resample of the pairs in `draws` ((x[i], y[i]) is cluster i); nan where a
    side is constant.

    Every resample is ranked at once (average ranks for ties, as spearmanr does) and rho is the
    Pearson correlation of the ranks, row by row. Pairs with a nan are left out of each resample.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    draws = np.asarray(draws, dtype=int)
    if x.shape != y.shape or draws.shape[1] != x.size:
        raise ValueError("x and y need one value per cluster of the draws.")
    missing = np.isnan(x) | np.isnan(y)
    xs = np.where(missing, np.nan, x)[draws]
    ys = np.where(missing, np.nan, y)[draws]
    x_ranks = stats.rankdata(xs, axis=1, nan_policy="omit")
    y_ranks = stats.rankdata(ys, axis=1, nan_policy="omit")
    with warnings.catch_warnings():
        # A resample with no complete pair has no mean (nan, as its rho will be).
        warnings.simplefilter("ignore", RuntimeWarning)
        x_dev = x_ranks - np.nanmean(x_ranks, axis=1, keepdims=True)
        y_dev = y_ranks - np.nanmean(y_ranks, axis=1, keepdims=True)
    x_ss, y_ss = np.nansum(x_dev**2, axis=1), np.nansum(y_dev**2, axis=1)
    # Ranks are multiples of 1/2, so a side with any spread has a sum of squares >= 1/2.
    defined = (x_ss > 1e-9) & (y_ss > 1e-9)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(defined, np.nansum(x_dev * y_dev, axis=1) / np.sqrt(x_ss * y_ss), np.nan)
