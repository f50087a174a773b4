"""The cluster bootstrap every interval of a report shares: seeded draws of clusters with
replacement, and the percentile interval of a statistic over its resamples.

One report draws once (`resample_draws`) and passes the same draws to every statistic, so
that all of its intervals rest on the same resamples.
"""

from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A statistic with its percentile bootstrap interval (CONFIDENCE).

    `resamples_undefined` counts the resamples where the statistic has no value (alpha with no
    expected disagreement, rho with a constant side); they are left out of the percentiles.
    """

    estimate: float
    low: float
    high: float
    resamples_used: int
    resamples_undefined: int


def resample_draws(n_clusters: int, *, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """resamples x n_clusters cluster indices drawn with replacement, from a seeded generator."""
    if n_clusters < 1 or resamples < 1:
        raise ValueError("A bootstrap needs at least one cluster and one resample.")
    return np.random.default_rng(seed).integers(0, n_clusters, size=(resamples, n_clusters))


def draw_counts(draws: np.ndarray) -> np.ndarray:
    """resamples x n_clusters: how often each resample drew each cluster."""
    resamples, n_clusters = draws.shape
    offsets = np.arange(resamples)[:, None] * n_clusters
    flat = np.bincount((draws + offsets).ravel(), minlength=resamples * n_clusters)
    return flat.reshape(resamples, n_clusters).astype(float)


def percentile_interval(estimate: float, values: np.ndarray) -> Interval:
    """The CONFIDENCE percentile interval of the resamples' `values`, nan values left out."""
    defined = values[~np.isnan(values)]
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail]) if defined.size else (np.nan, np.nan)
    return Interval(
        estimate=estimate,
        low=float(low),
        high=float(high),
        resamples_used=int(defined.size),
        resamples_undefined=int(values.size - defined.size),
    )
