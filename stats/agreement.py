"""Agreement between raters: Krippendorff's alpha with its cluster bootstrap, Cohen's kappa,
percent agreement (also criterion by criterion, people's majority against a rater), and the
spread of the ratings of each unit (unit by unit, and summed up to set beside another's).

A reliability matrix is raters x units, np.nan where a rater did not rate a unit (the layout of
the `krippendorff` package).

Alpha is computed from coincidence matrices as in K. Krippendorff, "Computing Krippendorff's
Alpha-Reliability" (2011): unit u contributes (n_uc n_uk - [c = k] n_uc) / (m_u - 1) to the
coincidence of values c and k, where n_uc counts the raters who gave u the value c and m_u the
ratings of u. A unit with fewer than two ratings is not pairable and contributes nothing. Then

    alpha = 1 - D_o / D_e = 1 - (n - 1) * sum_ck o_ck d_ck / sum_ck n_c n_k d_ck

with n_c the pairable values c and n their total. Because coincidences add over units, a
bootstrap resample's coincidences are a weighted sum of per-cluster coincidences: one matrix
product gives every resample's, with no resampled matrix ever built.
"""

import math
import warnings
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .bootstrap import Interval, draw_counts, percentile_interval

LEVELS = ("nominal", "ordinal", "interval", "ratio")


# --- Krippendorff's alpha ------------------------------------------------------------------


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"Unknown level of measurement {level!r}: one of {', '.join(LEVELS)}.")


def _as_matrix(data) -> np.ndarray:
    matrix = np.asarray(data, dtype=float)
    if matrix.ndim != 2:
        raise ValueError("A reliability matrix has two dimensions: raters x units.")
    return matrix


def _domain(matrix: np.ndarray, value_domain) -> np.ndarray:
    """The values in their order: the observed ones sorted, or `value_domain` as given (its order
    is the ordinal order, as in the `krippendorff` package)."""
    observed = np.unique(matrix[~np.isnan(matrix)])
    if value_domain is None:
        return observed
    domain = np.asarray(value_domain, dtype=float)
    if not np.isin(observed, domain).all():
        raise ValueError("The data hold values outside the value domain.")
    return domain


def _value_counts(matrix: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """units x V: how many raters gave each unit each value."""
    units = matrix.shape[1]
    rated = ~np.isnan(matrix)
    sorter = np.argsort(domain, kind="stable")
    codes = sorter[np.searchsorted(domain[sorter], matrix[rated])]
    unit_of = np.broadcast_to(np.arange(units), matrix.shape)[rated]
    counts = np.bincount(unit_of * len(domain) + codes, minlength=units * len(domain))
    return counts.reshape(units, len(domain)).astype(float)


def _pairable(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The value counts of pairable units (others zeroed) and each unit's weight 1 / (m_u - 1)."""
    m = counts.sum(axis=1)
    weight = np.divide(1.0, m - 1, out=np.zeros_like(m), where=m >= 2)
    return counts * (m >= 2)[:, None], weight


def _ratio_distances(domain: np.ndarray) -> np.ndarray:
    """V x V: ((c - k) / (c + k))^2, and 0 where c + k = 0, as in the package."""
    c, k = domain[:, None], domain[None, :]
    total = c + k
    return np.divide(c - k, total, out=np.zeros_like(total), where=total != 0) ** 2


def _unit_coincidences(counts: np.ndarray, weight: np.ndarray, clusters, n_clusters: int):
    """n_clusters x V x V: the coincidence matrices of each cluster's units, summed."""
    values = counts.shape[1]
    summed = np.zeros((n_clusters, values, values))
    for c in range(values):  # one value at a time keeps memory at units x V
        np.add.at(summed[:, c, :], clusters, (counts[:, c] * weight)[:, None] * counts)
        np.add.at(summed[:, c, c], clusters, -counts[:, c] * weight)
    return summed


def _unit_statistics(counts: np.ndarray, weight: np.ndarray, domain: np.ndarray, level: str):
    """units x S, additive over units: column 0 is the unit's sum_ck o_ck d_ck, the others
    what the expected disagreement needs. At the levels whose distances are fixed this is all
    alpha needs of the coincidences, and it avoids V x V work where a closed form exists:
    nominal sum_{c != k} n_c n_k = n^2 - sum_c n_c^2, interval
    sum_ck n_c n_k (v_c - v_k)^2 = 2 n sum_c n_c v_c^2 - 2 (sum_c n_c v_c)^2 (so interval data
    with thousands of distinct values cost no more than Likert answers)."""
    m = counts.sum(axis=1)
    if level == "interval":
        centred = domain - domain.mean()  # distances are unchanged; the sums stay small
        s1, s2 = counts @ centred, counts @ centred**2
        observed = weight * np.maximum(2 * m * s2 - 2 * s1**2, 0)
        return np.column_stack([observed, m, s1, s2])
    if level == "nominal":
        observed = weight * (m**2 - (counts**2).sum(axis=1))
    else:
        observed = weight * ((counts @ _ratio_distances(domain)) * counts).sum(axis=1)
    return np.column_stack([observed, counts])


def _alpha_fixed(totals: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """Alpha of each row of summed `_unit_statistics`; nan where expected disagreement is 0."""
    observed = totals[:, 0]
    if level == "interval":
        n, s1, s2 = totals[:, 1], totals[:, 2], totals[:, 3]
        expected = 2 * n * s2 - 2 * s1**2
    else:
        n_v = totals[:, 1:]
        n = n_v.sum(axis=1)
        if level == "nominal":
            expected = n**2 - (n_v**2).sum(axis=1)
        else:
            expected = ((n_v @ _ratio_distances(domain)) * n_v).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def _alpha_ordinal(coincidences: np.ndarray) -> np.ndarray:
    """Alpha for each R x V x V coincidence matrix at the ordinal level.

    Krippendorff's ordinal distance, (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2, depends on the
    marginals; it is the squared difference of the mid-ranks m_c = N_c - n_c / 2 (N the
    cumulative counts in the domain's order). A value never observed has n_c = 0 and adds
    nothing to any distance, so listing it in the value domain changes nothing, as in the package.
    """
    n_v = coincidences.sum(axis=1)
    n = n_v.sum(axis=1)
    mid = np.cumsum(n_v, axis=1) - n_v / 2
    distances = (mid[:, None, :] - mid[:, :, None]) ** 2
    observed = (coincidences * distances).sum(axis=(1, 2))
    # sum_ck n_c n_k (m_k - m_c)^2 = 2 n sum_c n_c m_c^2 - 2 (sum_c n_c m_c)^2
    expected = 2 * n * (n_v * mid**2).sum(axis=1) - 2 * (n_v * mid).sum(axis=1) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def _prepared(data, level: str, value_domain):
    _check_level(level)
    matrix = _as_matrix(data)
    domain = _domain(matrix, value_domain)
    counts, weight = _pairable(_value_counts(matrix, domain))
    if not counts.any():
        raise ValueError("No unit has two or more ratings: there is nothing to compare.")
    return matrix, domain, counts, weight


def _alphas(counts, weight, domain, level: str, clusters: np.ndarray, drawn: np.ndarray):
    """Alpha of each resample: `drawn[r, k]` is how often resample r holds cluster k.

    Coincidences add over units, so each cluster's are computed once and a resample's are their
    sum weighted by the draw counts: one matrix product for all resamples.
    """
    n_clusters = drawn.shape[1]
    # Alpha is undefined where no two different values are paired: no expected disagreement.
    # Decided on the values present, since rounding can leave a sum of zero slightly above it.
    present = counts > 0
    lowest = np.where(present.any(axis=1), present.argmax(axis=1), domain.size)
    highest = np.where(present.any(axis=1), domain.size - 1 - present[:, ::-1].argmax(axis=1), -1)
    cluster_lowest = np.full(n_clusters, domain.size)
    cluster_highest = np.full(n_clusters, -1)
    np.minimum.at(cluster_lowest, clusters, lowest)
    np.maximum.at(cluster_highest, clusters, highest)
    included = drawn > 0
    spread = np.where(included, cluster_highest, -1).max(axis=1) > np.where(
        included, cluster_lowest, domain.size
    ).min(axis=1)
    if level == "ordinal":
        per_cluster = _unit_coincidences(counts, weight, clusters, n_clusters)
        values = domain.size
        resampled = (drawn @ per_cluster.reshape(n_clusters, -1)).reshape(-1, values, values)
        alphas = _alpha_ordinal(resampled)
    else:
        per_unit = _unit_statistics(counts, weight, domain, level)
        per_cluster = np.zeros((n_clusters, per_unit.shape[1]))
        np.add.at(per_cluster, clusters, per_unit)
        alphas = _alpha_fixed(drawn @ per_cluster, domain, level)
    return np.where(spread, alphas, np.nan)


def alpha(data, *, level: str, value_domain=None) -> float:
    """Krippendorff's alpha of a raters x units matrix (np.nan = missing) at `level`.

    Equals `krippendorff.alpha(reliability_data=data, level_of_measurement=level,
    value_domain=value_domain)`. Units with fewer than two ratings drop out. Returns nan when
    there is no expected disagreement (every pairable rating has the same value), where the
    statistic is undefined; raises ValueError when no unit has two ratings.
    """
    matrix, domain, counts, weight = _prepared(data, level, value_domain)
    one_cluster = np.zeros(matrix.shape[1], dtype=int)
    return float(_alphas(counts, weight, domain, level, one_cluster, np.ones((1, 1)))[0])


def alpha_resamples(data, *, level: str, clusters, draws, value_domain=None) -> np.ndarray:
    """Alpha of every cluster resample in `draws` (nan where it is undefined).

    `clusters[u]` is the cluster (0 .. n_clusters - 1) of unit u, the column u of `data`;
    `draws` come from `bootstrap.resample_draws(n_clusters)`. A resample holds every unit of
    each drawn cluster, as often as the cluster was drawn; no resampled matrix is ever built.
    """
    matrix, domain, counts, weight = _prepared(data, level, value_domain)
    clusters = np.asarray(clusters, dtype=int)
    draws = np.asarray(draws, dtype=int)
    n_clusters = draws.shape[1]
    if clusters.shape != (matrix.shape[1],):
        raise ValueError("`clusters` needs one cluster index per unit.")
    if clusters.min() < 0 or clusters.max() >= n_clusters:
        raise ValueError(f"Cluster indices must lie in 0..{n_clusters - 1}, as in the draws.")
    return _alphas(counts, weight, domain, level, clusters, draw_counts(draws))


def alpha_bootstrap(data, *, level: str, clusters, draws, value_domain=None) -> Interval:
    """Alpha with its percentile interval over the cluster resamples of `alpha_resamples`."""
    alphas = alpha_resamples(
        data, level=level, clusters=clusters, draws=draws, value_domain=value_domain
    )
    return percentile_interval(alpha(data, level=level, value_domain=value_domain), alphas)


def long_to_matrix(frame: pd.DataFrame, *, unit: str, rater: str, value: str):
    """(raters x units matrix, unit labels, rater labels) from one rating per row.

    Labels keep the order in which they first appear. Rows with a missing value are no rating.
    Values must be numbers; a rater who rated a unit twice is a ValueError.
    """
    rows = frame[[unit, rater, value]].dropna(subset=[value])
    if rows.duplicated(subset=[unit, rater]).any():
        raise ValueError("A rater rated a unit more than once.")
    unit_codes, unit_labels = pd.factorize(rows[unit])
    rater_codes, rater_labels = pd.factorize(rows[rater])
    matrix = np.full((len(rater_labels), len(unit_labels)), np.nan)
    matrix[rater_codes, unit_codes] = pd.to_numeric(rows[value]).to_numpy(dtype=float)
    return matrix, list(unit_labels), list(rater_labels)


# --- Two raters' labels -----------------------------------------------------------------------


def agreed(first: Sequence, second: Sequence) -> int:
    """How many pairs (first[i], second[i]) hold the same label."""
    return sum(a == b for a, b in zip(first, second, strict=True))


def percent_agreement(first: Sequence, second: Sequence) -> float | None:
    """The percent of pairs that hold the same label; None when there is no pair."""
    return 100 * agreed(first, second) / len(first) if len(first) else None


def cohen_kappa(first: Sequence, second: Sequence, *, labels=None) -> float | None:
    """Cohen's kappa of two raters' labels, pair by pair (scikit-learn's cohen_kappa_score,
    over `labels` when given); None where it is undefined: chance agreement is certain, as
    when both raters use one and the same class only."""
    # Imported here: scikit-learn takes a second to load, and few pages need it.
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        # scikit-learn warns where kappa is undefined; that case is answered with None.
        warnings.simplefilter("ignore")
        kappa = float(cohen_kappa_score(first, second, labels=labels))
    return None if math.isnan(kappa) else kappa


# --- People against a rater, criterion by criterion -------------------------------------------


@dataclass(frozen=True)
class CriterionAgreement:
    """How often people's majority and a rater gave an answer the same verdict on a criterion.

    `n` counts the answers with both verdicts; answers where people split evenly have no
    majority and are left out, counted in `undecided`. `people_only` and `rater_only` split the
    disagreements by who said yes.
    """

    criterion: Hashable
    n: int
    undecided: int
    agreed: int
    people_only: int
    rater_only: int
    percent: float | None
    kappa: float | None


def criterion_agreement(
    verdicts: Iterable[tuple[Hashable, float | bool | None, bool | None]],
) -> list[CriterionAgreement]:
    """Per criterion, the percent agreement and Cohen's kappa of people's majority verdict and
    a rater's, from (criterion, people, rater) per answer, most disagreement first.

    `people` is the majority verdict (True / False) or the share of people who said yes: more
    than half is yes, less than half no, exactly half no majority. None (or nan) on either
    side leaves the answer out. The order: lowest percent agreement first, then lowest kappa
    (undefined kappa after), then the criteria in the order they first appear. Whether a
    criterion has enough answers to show is the caller's rule (`points.too_few(n)`).
    """
    pairs: dict[Hashable, list[tuple[bool, bool]]] = {}
    undecided: dict[Hashable, int] = {}
    for criterion, people, rater in verdicts:
        pairs.setdefault(criterion, [])
        undecided.setdefault(criterion, 0)
        if people is None or rater is None or math.isnan(people):
            continue
        if people == 0.5:
            undecided[criterion] += 1
            continue
        pairs[criterion].append((bool(people > 0.5), bool(rater)))
    found = []
    for criterion, verdict_pairs in pairs.items():
        people = [p for p, _ in verdict_pairs]
        rater = [r for _, r in verdict_pairs]
        found.append(
            CriterionAgreement(
                criterion=criterion,
                n=len(verdict_pairs),
                undecided=undecided[criterion],
                agreed=agreed(people, rater),
                people_only=sum(p and not r for p, r in verdict_pairs),
                rater_only=sum(r and not p for p, r in verdict_pairs),
                percent=percent_agreement(people, rater),
                kappa=cohen_kappa(people, rater, labels=[False, True]) if verdict_pairs else None,
            )
        )
    order = {criterion: k for k, criterion in enumerate(pairs)}
    return sorted(
        found,
        key=lambda c: (
            math.inf if c.percent is None else c.percent,
            math.inf if c.kappa is None else c.kappa,
            order[c.criterion],
        ),
    )


# --- Spread of the ratings of each unit ------------------------------------------------------


def rating_ranges(data) -> dict[int, int]:
    """How many units have each range of ratings (max - min), over units with 2+ ratings.

    0 means every rater agreed, 1 one point apart, and so on; every range from 0 to the largest
    is listed, with 0 units where none has it. The ratings must be whole numbers.
    """
    matrix = _as_matrix(data)
    rated = (~np.isnan(matrix)).sum(axis=0) >= 2
    columns = matrix[:, rated]
    if (columns[~np.isnan(columns)] % 1).any():
        raise ValueError("Rating ranges need whole-number ratings.")
    if not rated.any():
        return {}
    spans = (np.nanmax(columns, axis=0) - np.nanmin(columns, axis=0)).astype(int)
    counts = np.bincount(spans)
    return {span: int(count) for span, count in enumerate(counts)}


def unit_sds(data, *, ddof: int = 0) -> np.ndarray:
    """The standard deviation of each unit's ratings (numpy's, with `ddof`: 0 the population
    SD, 1 the sample SD); nan for a unit with fewer than two ratings.

    The paper's Figure 5 maps the answers to -1..1 first (the caller does that:
    apps/analysis/survey_data.py) and does not say which SD it plots: the caller chooses,
    and says so.
    """
    matrix = _as_matrix(data)
    rated = (~np.isnan(matrix)).sum(axis=0)
    sds = np.full(matrix.shape[1], np.nan)
    sds[rated >= 2] = np.nanstd(matrix[:, rated >= 2], axis=0, ddof=ddof)
    return sds


@dataclass(frozen=True)
class Spread:
    """The spread of one set of ratings over its units with two ratings or more (`units`):
    their SDs in ascending order (an SD curve), and the share of them where every rating is
    the same (range 0; None without such a unit)."""

    units: int
    sds: np.ndarray
    unanimous: float | None


def unit_spread(data, *, ddof: int = 0) -> Spread:
    """The Spread of a raters x units matrix, to set beside another's (people against a proxy,
    one proxy variant against another): `unit_sds` sorted, and the units of range 0. Unlike
    `rating_ranges`, the ratings need not be whole numbers (answers mapped to -1..1)."""
    matrix = _as_matrix(data)
    sds = unit_sds(matrix, ddof=ddof)
    rated = ~np.isnan(sds)
    columns = matrix[:, rated]
    same = np.nanmax(columns, axis=0) == np.nanmin(columns, axis=0) if rated.any() else []
    return Spread(
        units=int(rated.sum()),
        sds=np.sort(sds[rated]),
        unanimous=float(np.mean(same)) if rated.any() else None,
    )


def ecdf(values) -> tuple[np.ndarray, np.ndarray]:
    """The empirical cumulative distribution: (distinct values sorted, share of values <= each).
    nan values are left out."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    x, counts = np.unique(values, return_counts=True)
    return x, np.cumsum(counts) / values.size
