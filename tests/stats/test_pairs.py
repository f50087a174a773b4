"""Bradley-Terry strengths equal choix called directly on the judgments expanded as the module
says (a decisive judgment two wins, a tie one win each way), and a direct maximisation of the
likelihood with scipy; counts, ranks, the cluster bootstrap and the win rates by hand."""

import choix
import numpy as np
import pytest
from scipy.optimize import minimize

from stats.bootstrap import resample_draws
from stats.pairs import REGULARISATION, bradley_terry, win_rates

ITEMS = ["m1", "m2", "m3", "m4"]


def expanded(judgments, items):
    """choix's pairwise data: (winner, loser) twice per decisive judgment, once each way per tie."""
    index = {item: k for k, item in enumerate(items)}
    data = []
    for item_a, item_b, outcome in judgments:
        a, b = index[item_a], index[item_b]
        if outcome == "a":
            data += [(a, b), (a, b)]
        elif outcome == "b":
            data += [(b, a), (b, a)]
        else:
            data += [(a, b), (b, a)]
    return data


def random_judgments(rng, *, items, clusters, per_cluster=3, tie_band=0.1):
    truth = rng.normal(size=len(items))
    judgments, cluster_of = [], []
    for cluster in range(clusters):
        for _ in range(per_cluster):
            i, k = rng.choice(len(items), size=2, replace=False)
            p = 1 / (1 + np.exp(truth[k] - truth[i]))
            u = rng.random()
            outcome = "equal" if abs(u - p) < tie_band else ("a" if u < p else "b")
            judgments.append((items[i], items[k], outcome))
            cluster_of.append(cluster)
    return judgments, cluster_of


def strengths(result):
    return np.array([s.strength for s in result.strengths], dtype=float)


def test_strengths_equal_choix_on_the_expanded_judgments():
    judgments, _ = random_judgments(np.random.default_rng(1), items=ITEMS, clusters=40)

    result = bradley_terry(judgments, items=ITEMS)

    data = expanded(judgments, ITEMS)
    assert not result.regularised
    np.testing.assert_allclose(
        strengths(result), choix.ilsr_pairwise(len(ITEMS), data), rtol=0, atol=1e-6
    )
    # The same maximum by another of choix's methods: Newton's, unregularised.
    by_newton = choix.opt_pairwise(len(ITEMS), data, alpha=0, tol=1e-10)
    np.testing.assert_allclose(strengths(result), by_newton - by_newton.mean(), atol=1e-5)
    assert strengths(result).mean() == pytest.approx(0, abs=1e-12)


def test_three_items_maximise_the_likelihood_as_scipy_finds_it():
    # Undoubled counts, a tie half a win each way: x beats y 3 times and ties once (3.5 : 0.5),
    # y beats z twice and loses once (2 : 1), z beats x once and loses twice (1 : 2).
    judgments = (
        [("x", "y", "a")] * 3
        + [("x", "y", "equal")]
        + [("y", "z", "a")] * 2
        + [("z", "y", "a")]
        + [("z", "x", "a")]
        + [("x", "z", "a")] * 2
    )
    wins = np.array([[0, 3.5, 2], [0.5, 0, 2], [1, 1, 0]])

    def negative_log_likelihood(s):
        return -(wins * -np.logaddexp(0, s[None, :] - s[:, None])).sum()

    found = minimize(negative_log_likelihood, np.zeros(3), method="BFGS", options={"gtol": 1e-10})

    result = bradley_terry(judgments, items=["x", "y", "z"])

    np.testing.assert_allclose(strengths(result), found.x - found.x.mean(), atol=1e-5)
    assert [s.rank for s in result.strengths] == [1, 2, 3]


def test_a_tie_counts_half_a_win_each_way():
    # Two items: the estimate is s_a - s_b = log(wins of a / wins of b). Two wins and two ties
    # make 3 : 1, as three wins and a loss do: strengths +- log(3) / 2.
    with_ties = [("a", "b", "a")] * 2 + [("b", "a", "equal")] * 2
    decisive = [("a", "b", "a")] * 3 + [("a", "b", "b")]

    tied = bradley_terry(with_ties, items=["a", "b"])
    plain = bradley_terry(decisive, items=["a", "b"])

    assert strengths(tied) == pytest.approx([np.log(3) / 2, -np.log(3) / 2])
    assert strengths(plain) == pytest.approx(strengths(tied))
    assert tied.strengths[0].beats_average == pytest.approx(np.sqrt(3) / (1 + np.sqrt(3)))
    first, second = tied.strengths
    assert (first.wins, first.losses, first.ties, first.judgments) == (2, 0, 2, 4)
    assert (second.wins, second.losses, second.ties, second.judgments) == (0, 2, 2, 4)


def test_an_item_never_compared_has_no_strength():
    judgments = [("m1", "m2", "a"), ("m2", "m1", "a"), ("m1", "m3", "equal"), ("m3", "m2", "b")]
    draws = resample_draws(4, resamples=30, seed=1)

    result = bradley_terry(judgments, items=ITEMS, clusters=[0, 1, 2, 3], draws=draws)

    never = result.strengths[3]
    assert (never.strength, never.beats_average, never.rank, never.interval) == (None,) * 4
    assert never.judgments == 0
    compared = strengths(result)[:3]
    np.testing.assert_allclose(
        compared, choix.ilsr_pairwise(3, expanded(judgments, ITEMS[:3])), atol=1e-6
    )
    assert compared.sum() == pytest.approx(0, abs=1e-12)  # centred over the compared items


def test_no_judgment_at_all_gives_no_strength():
    result = bradley_terry([], items=ITEMS)

    assert [s.strength for s in result.strengths] == [None] * 4
    assert result.judgments == 0


def test_an_item_that_never_lost_is_fitted_with_the_regularisation_and_said_so():
    # m1 beats everyone and is never beaten: no maximum-likelihood estimate exists.
    judgments = [("m1", "m2", "a"), ("m3", "m1", "b"), ("m2", "m3", "a"), ("m3", "m2", "equal")]

    result = bradley_terry(judgments, items=ITEMS[:3])

    assert result.regularised
    expected = choix.ilsr_pairwise(3, expanded(judgments, ITEMS), alpha=REGULARISATION)
    np.testing.assert_allclose(strengths(result), expected, atol=1e-6)
    assert result.strengths[0].rank == 1


def explicit_resample(judgments, clusters, drawn):
    """The resampled judgments themselves: every judgment of each drawn cluster, once per draw."""
    pairs = list(zip(judgments, clusters, strict=True))
    return [judgment for cluster in drawn for judgment, c in pairs if c == cluster]


def test_the_bootstrap_equals_fits_of_explicitly_resampled_judgments():
    judgments, clusters = random_judgments(np.random.default_rng(2), items=ITEMS, clusters=25)
    draws = resample_draws(25, resamples=60, seed=5)

    result = bradley_terry(judgments, items=ITEMS, clusters=clusters, draws=draws)

    refits = np.array(
        [
            strengths(bradley_terry(explicit_resample(judgments, clusters, drawn), items=ITEMS))
            for drawn in draws
        ]
    )
    for k, item in enumerate(result.strengths):
        assert item.interval.estimate == item.strength
        assert item.interval.low == pytest.approx(np.percentile(refits[:, k], 2.5), abs=1e-6)
        assert item.interval.high == pytest.approx(np.percentile(refits[:, k], 97.5), abs=1e-6)
        assert item.interval.low < item.strength < item.interval.high
        assert (item.interval.resamples_used, item.interval.resamples_undefined) == (60, 0)


def test_the_bootstrap_is_reproducible_from_its_seed():
    judgments, clusters = random_judgments(np.random.default_rng(3), items=ITEMS, clusters=20)

    def intervals(seed):
        draws = resample_draws(20, resamples=100, seed=seed)
        found = bradley_terry(judgments, items=ITEMS, clusters=clusters, draws=draws)
        return [(s.interval.low, s.interval.high) for s in found.strengths]

    assert intervals(7) == intervals(7)
    assert intervals(7) != intervals(8)


def test_a_resample_without_some_item_is_undefined_and_counted():
    # m3 is judged only in cluster 1: a resample that never draws cluster 1 has no m3.
    judgments = [("m1", "m2", "a"), ("m2", "m1", "a"), ("m1", "m3", "equal"), ("m3", "m2", "b")]
    clusters = [0, 0, 1, 1]
    draws = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])

    result = bradley_terry(judgments, items=ITEMS[:3], clusters=clusters, draws=draws)

    for item in result.strengths:
        assert (item.interval.resamples_used, item.interval.resamples_undefined) == (3, 1)
    # [1, 1] holds only cluster 1, where m2 beat m3 and never lost: no maximum-likelihood
    # estimate, so that resample is regularised.
    assert result.resamples_regularised == 1


def test_the_bootstrap_refuses_clusters_that_do_not_match_the_draws():
    judgments = [("m1", "m2", "a"), ("m2", "m1", "b")]
    draws = resample_draws(2, resamples=5)

    with pytest.raises(ValueError, match="one cluster index per judgment"):
        bradley_terry(judgments, items=ITEMS, clusters=[0], draws=draws)
    with pytest.raises(ValueError, match=r"must lie in 0\.\.1"):
        bradley_terry(judgments, items=ITEMS, clusters=[0, 2], draws=draws)
    with pytest.raises(ValueError, match="both"):
        bradley_terry(judgments, items=ITEMS, clusters=[0, 1])


def test_judgments_must_name_listed_items_and_known_outcomes():
    with pytest.raises(ValueError, match="not listed"):
        bradley_terry([("m1", "m9", "a")], items=ITEMS)
    with pytest.raises(ValueError, match="with itself"):
        bradley_terry([("m1", "m1", "a")], items=ITEMS)
    with pytest.raises(ValueError, match="Unknown outcome"):
        bradley_terry([("m1", "m2", "tie")], items=ITEMS)


def test_equal_strengths_share_a_rank():
    # m1 and m2 tie, and each beats m3 twice and loses to it once: the same strength.
    judgments = [("m1", "m2", "equal")]
    for item in ("m1", "m2"):
        judgments += [(item, "m3", "a"), ("m3", item, "b"), (item, "m3", "b")]

    result = bradley_terry(judgments, items=ITEMS[:3])

    assert [s.rank for s in result.strengths] == [1, 1, 3]


def test_win_rates_count_a_tie_as_half():
    judgments = [("m1", "m2", "a"), ("m2", "m1", "equal"), ("m1", "m2", "b"), ("m3", "m1", "a")]
    # m1 against m2: a win, a tie, a loss -> 1.5 / 3; m3 against m1: one win; m2 and m3 never met.
    rates = win_rates(judgments, items=ITEMS[:3])

    np.testing.assert_allclose(
        rates, [[np.nan, 0.5, 0.0], [0.5, np.nan, np.nan], [1.0, np.nan, np.nan]]
    )
