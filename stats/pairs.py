"""Bradley-Terry strengths from pairwise judgments: "which of two answers helps more, or are
they equal", with a cluster bootstrap interval per item.

A judgment is (item_a, item_b, outcome), outcome "a", "b" or "equal". Under the Bradley-Terry
model, item i beats item j with probability exp(s_i) / (exp(s_i) + exp(s_j)); the strengths s
are on the log scale, centred so that their mean over the compared items is 0. An item of
strength s beats an item of strength 0 (the "average" item: the geometric mean of the weights
exp(s)) with probability exp(s) / (1 + exp(s)).

Ties count as half a win each way (the common convention, without Davidson's tie parameter).
To keep the counts whole, every count is doubled: a decisive judgment is two wins of its
winner, a tie one win of each item over the other. Doubling every count leaves the maximum of
the likelihood where it was.

The fit is choix's I-LSR (`choix.ilsr_pairwise_dense`, Maystre & Grossglauser 2015), which
converges to the maximum-likelihood estimate. That estimate exists only when the "beat" graph
of the compared items is strongly connected (Ford 1957; Hunter 2004): otherwise some group of
items never lost to the rest, and its strengths run off to infinity. Only then is the fit
regularised with choix's `alpha` = REGULARISATION (the chain's rates start at alpha between
every two items), and the result says so (`regularised`).

The interval of each strength is the percentile interval over cluster resamples (`bootstrap`):
the caller gives each judgment a cluster (the unit its pair of answers came from) and draws
once with `bootstrap.resample_draws(n_clusters)`. Each resample is fitted by the same rule (the
maximum-likelihood estimate where it exists, else regularised). A resample that holds no
judgment of some item compared in the data is undefined: its strengths would be centred over
other items. It is left out and counted (`Interval.resamples_undefined`).

Whether an item has enough judgments to show is the caller's rule (`points.too_few`); the
result gives each item's count.
"""

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from .bootstrap import Interval, draw_counts, percentile_interval

OUTCOMES = ("a", "b", "equal")
REGULARISATION = 0.01  # choix's alpha, only where no maximum-likelihood estimate exists
MAX_ITERATIONS = 1000  # of I-LSR; choix's default of 100 can run out near a regularised fit
RANK_DECIMALS = 6  # strengths equal to this many decimals share a rank (I-LSR stops at 1e-8)


@dataclass(frozen=True)
class Strength:
    """One item's Bradley-Terry strength (None when it has no judgment) and its counts.

    `rank` is 1 for the strongest; equal strengths share the best of their ranks. `interval`
    is None without a bootstrap or without a strength.
    """

    item: Hashable
    strength: float | None
    beats_average: float | None  # exp(s) / (1 + exp(s)): its chance against strength 0
    wins: int
    losses: int
    ties: int
    judgments: int
    rank: int | None
    interval: Interval | None


@dataclass(frozen=True)
class BradleyTerry:
    """Every item's strength, in the order of the items given."""

    strengths: list[Strength]
    judgments: int
    regularised: bool  # the maximum-likelihood estimate does not exist on these judgments
    resamples_regularised: int  # resamples fitted with REGULARISATION for the same reason


def _indexed(judgments, items) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(index of a, index of b, outcome code 0 "a" / 1 "b" / 2 "equal") of each judgment."""
    index = {item: k for k, item in enumerate(items)}
    if len(index) != len(items):
        raise ValueError("Each item is listed once.")
    a, b, codes = [], [], []
    for item_a, item_b, outcome in judgments:
        if item_a not in index or item_b not in index:
            raise ValueError(f"A judgment names an item not listed: {item_a!r} or {item_b!r}.")
        if item_a == item_b:
            raise ValueError(f"A judgment compares {item_a!r} with itself.")
        if outcome not in OUTCOMES:
            raise ValueError(f"Unknown outcome {outcome!r}: one of {', '.join(OUTCOMES)}.")
        a.append(index[item_a])
        b.append(index[item_b])
        codes.append(OUTCOMES.index(outcome))
    return np.array(a, dtype=int), np.array(b, dtype=int), np.array(codes, dtype=int)


def _doubled_wins(a, b, codes, clusters, n_clusters: int, n_items: int) -> np.ndarray:
    """n_clusters x items x items: [c, i, j] is twice the wins of i over j in cluster c, a tie
    counting as one win each way."""
    tie = codes == 2
    winner = np.concatenate([np.where(codes == 1, b, a), b[tie]])
    loser = np.concatenate([np.where(codes == 1, a, b), a[tie]])
    weight = np.concatenate([np.where(tie, 1.0, 2.0), np.ones(tie.sum())])
    cluster = np.concatenate([clusters, clusters[tie]])
    wins = np.zeros((n_clusters, n_items, n_items))
    np.add.at(wins, (cluster, winner, loser), weight)
    return wins


def _strongly_connected(wins: np.ndarray) -> bool:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    found, _ = connected_components(csr_matrix(wins > 0), directed=True, connection="strong")
    return found == 1


def _fit(wins: np.ndarray) -> tuple[np.ndarray, bool]:
    """(centred strengths, whether regularised) from doubled win counts, every item compared."""
    # Imported here: choix is needed by one report only.
    import choix

    regularised = not _strongly_connected(wins)
    alpha = REGULARISATION if regularised else 0.0
    return choix.ilsr_pairwise_dense(wins, alpha=alpha, max_iter=MAX_ITERATIONS), regularised


def bradley_terry(
    judgments: Sequence[tuple[Hashable, Hashable, str]],
    *,
    items: Sequence[Hashable],
    clusters: Sequence[int] | None = None,
    draws: np.ndarray | None = None,
) -> BradleyTerry:
    """Bradley-Terry strengths of `items` from `judgments` (item_a, item_b, "a" | "b" | "equal").

    With `clusters` (a cluster index 0 .. n_clusters - 1 per judgment) and `draws` (from
    `bootstrap.resample_draws(n_clusters)`), each strength has its percentile interval over
    the cluster resamples. An item with no judgment has strength None.
    """
    a, b, codes = _indexed(judgments, items)
    n_items = len(items)
    bootstrap = clusters is not None or draws is not None
    if bootstrap:
        if clusters is None or draws is None:
            raise ValueError("A bootstrap needs both `clusters` and `draws`.")
        clusters = np.asarray(clusters, dtype=int)
        draws = np.asarray(draws, dtype=int)
        n_clusters = draws.shape[1]
        if clusters.shape != a.shape:
            raise ValueError("`clusters` needs one cluster index per judgment.")
        if clusters.size and (clusters.min() < 0 or clusters.max() >= n_clusters):
            raise ValueError(f"Cluster indices must lie in 0..{n_clusters - 1}, as in the draws.")
    else:
        clusters, n_clusters = np.zeros(a.size, dtype=int), 1
    per_cluster = _doubled_wins(a, b, codes, clusters, n_clusters, n_items)
    wins = per_cluster.sum(axis=0)
    compared = np.flatnonzero(wins.sum(axis=0) + wins.sum(axis=1))

    estimate = np.full(n_items, np.nan)
    regularised = False
    if compared.size:
        estimate[compared], regularised = _fit(wins[np.ix_(compared, compared)])

    resampled, resamples_regularised = None, 0
    if bootstrap and compared.size:
        drawn = draw_counts(draws) @ per_cluster.reshape(n_clusters, -1)
        resampled = np.full((len(drawn), n_items), np.nan)
        for row, flat in enumerate(drawn):
            sample = flat.reshape(n_items, n_items)[np.ix_(compared, compared)]
            if (sample.sum(axis=0) + sample.sum(axis=1) == 0).any():
                continue  # an item has no judgment in this resample: undefined
            resampled[row, compared], was_regularised = _fit(sample)
            resamples_regularised += was_regularised

    ranks = _ranks(estimate)
    strengths = []
    for k, item in enumerate(items):
        mine = (a == k) | (b == k)
        won = ((a == k) & (codes == 0)) | ((b == k) & (codes == 1))
        tied = mine & (codes == 2)
        defined = not np.isnan(estimate[k])
        strengths.append(
            Strength(
                item=item,
                strength=float(estimate[k]) if defined else None,
                beats_average=float(1 / (1 + np.exp(-estimate[k]))) if defined else None,
                wins=int(won.sum()),
                losses=int(mine.sum() - won.sum() - tied.sum()),
                ties=int(tied.sum()),
                judgments=int(mine.sum()),
                rank=ranks[k],
                interval=(
                    percentile_interval(float(estimate[k]), resampled[:, k])
                    if defined and resampled is not None
                    else None
                ),
            )
        )
    return BradleyTerry(
        strengths=strengths,
        judgments=int(a.size),
        regularised=bool(regularised),
        resamples_regularised=int(resamples_regularised),
    )


def _ranks(estimate: np.ndarray) -> list[int | None]:
    from scipy.stats import rankdata

    ranks: list[int | None] = [None] * estimate.size
    defined = np.flatnonzero(~np.isnan(estimate))
    ordered = rankdata(-np.round(estimate[defined], RANK_DECIMALS), method="min")
    for k, rank in zip(defined, ordered, strict=True):
        ranks[k] = int(rank)
    return ranks


def win_rates(
    judgments: Sequence[tuple[Hashable, Hashable, str]], *, items: Sequence[Hashable]
) -> np.ndarray:
    """items x items: [i, j] is the share of the judgments between i and j that i won, a tie
    counting half; nan where the two were never compared (and on the diagonal)."""
    a, b, codes = _indexed(judgments, items)
    wins = _doubled_wins(a, b, codes, np.zeros(a.size, dtype=int), 1, len(items))[0]
    total = wins + wins.T
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, wins / total, np.nan)
