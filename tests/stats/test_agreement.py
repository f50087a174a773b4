"""Agreement: Krippendorff's alpha and its cluster bootstrap equal the `krippendorff` package
and the published worked example; Cohen's kappa equals scikit-learn; the spread of each
unit's ratings by hand."""

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from stats import agreement
from stats.agreement import LEVELS
from stats.bootstrap import resample_draws

NAN = np.nan

# K. Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), the worked example with
# missing data: observers A-D (rows) by units 1-12 (columns), values 1-5.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def random_ratings(rng, *, raters, units, values=5, missing=0.3):
    matrix = rng.integers(1, values + 1, size=(raters, units)).astype(float)
    matrix[rng.random(matrix.shape) < missing] = NAN
    return matrix


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_reproduces_the_published_worked_example(level):
    assert round(agreement.alpha(KRIPPENDORFF_2011, level=level), 3) == PUBLISHED[level]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    ("raters", "units", "values", "missing"),
    [(2, 10, 2, 0.0), (3, 25, 5, 0.3), (7, 40, 7, 0.5), (30, 12, 5, 0.6), (4, 200, 11, 0.2)],
)
def test_alpha_equals_the_krippendorff_package_on_random_data(
    level, raters, units, values, missing
):
    rng = np.random.default_rng(raters * 1000 + units)
    for _ in range(5):
        data = random_ratings(rng, raters=raters, units=units, values=values, missing=missing)
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert agreement.alpha(data, level=level) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("offset", [0, 1e3, 1e6])
def test_alpha_equals_the_package_on_measurements_with_many_distinct_values(offset):
    # Interval alpha comes from sums of values and of their squares: far from zero, the sums
    # must not swallow the differences between raters.
    rng = np.random.default_rng(9)
    truth = rng.normal(size=300)
    data = np.round(offset + truth + rng.normal(size=(5, 300)) * 0.5, 2)
    data[rng.random(data.shape) < 0.3] = NAN

    for level in ("interval", "ratio"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert agreement.alpha(data, level=level) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("level", LEVELS)
def test_values_of_the_domain_never_observed_change_nothing_as_in_the_package(level):
    # Ordinal distances sum the counts of the values between two values; a value nobody gave
    # counts 0, so the package's result is the same with or without it, and so is ours.
    data = random_ratings(np.random.default_rng(3), raters=4, units=30, values=4)
    domain = [0, 1, 2, 3, 4, 5, 6, 9]
    package = krippendorff.alpha(
        reliability_data=data, level_of_measurement=level, value_domain=domain
    )

    ours = agreement.alpha(data, level=level, value_domain=domain)

    assert ours == pytest.approx(package, abs=1e-9)
    assert ours == pytest.approx(agreement.alpha(data, level=level), abs=1e-9)


def test_alpha_follows_the_order_of_the_value_domain_at_the_ordinal_level():
    data = random_ratings(np.random.default_rng(4), raters=3, units=30, values=4)
    domain = [3, 1, 4, 2]
    package = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=domain
    )

    ours = agreement.alpha(data, level="ordinal", value_domain=domain)

    assert ours == pytest.approx(package, abs=1e-9)
    assert ours != pytest.approx(agreement.alpha(data, level="ordinal"), abs=1e-3)


def test_units_with_one_rating_drop_out():
    with_singles = np.array([[1, 2, 3, 5, NAN], [1, 3, 3, NAN, 4], [2, 2, 3, NAN, NAN]])

    for level in LEVELS:
        assert agreement.alpha(with_singles, level=level) == pytest.approx(
            agreement.alpha(with_singles[:, :3], level=level), abs=1e-12
        )


def test_alpha_refuses_data_with_no_pairable_unit():
    with pytest.raises(ValueError, match="No unit has two or more ratings"):
        agreement.alpha(np.array([[1, NAN], [NAN, 2]]), level="nominal")


def test_alpha_is_undefined_when_every_pairable_rating_is_the_same():
    for level in LEVELS:
        assert np.isnan(agreement.alpha(np.array([[2, 2, 5], [2, 2, NAN]]), level=level))


def test_alpha_refuses_values_outside_the_domain_and_unknown_levels():
    with pytest.raises(ValueError, match="outside the value domain"):
        agreement.alpha(KRIPPENDORFF_2011, level="ordinal", value_domain=[1, 2, 3])
    with pytest.raises(ValueError, match="Unknown level"):
        agreement.alpha(KRIPPENDORFF_2011, level="cardinal")


def test_long_to_matrix_puts_each_rating_at_its_rater_and_unit():
    frame = pd.DataFrame(
        {
            "scenario": ["s1", "s1", "s2", "s2", "s3"],
            "who": ["ann", "bob", "bob", "cat", "ann"],
            "score": [1, 2, 3, NAN, 5],
        }
    )

    matrix, units, raters = agreement.long_to_matrix(
        frame, unit="scenario", rater="who", value="score"
    )

    assert units == ["s1", "s2", "s3"]
    assert raters == ["ann", "bob"]  # cat's only row has no value: no rating
    np.testing.assert_array_equal(matrix, [[1, NAN, 5], [2, 3, NAN]])


def test_long_to_matrix_refuses_a_rater_who_rated_a_unit_twice():
    frame = pd.DataFrame({"u": ["a", "a"], "r": ["x", "x"], "v": [1, 2]})

    with pytest.raises(ValueError, match="more than once"):
        agreement.long_to_matrix(frame, unit="u", rater="r", value="v")


def test_resample_draws_are_seeded_and_in_range():
    draws = resample_draws(7, resamples=50, seed=11)

    assert draws.shape == (50, 7)
    assert draws.min() >= 0 and draws.max() <= 6
    np.testing.assert_array_equal(draws, resample_draws(7, resamples=50, seed=11))
    assert not np.array_equal(draws, resample_draws(7, resamples=50, seed=12))


def explicit_resample(data, clusters, drawn):
    """The resampled matrix itself: every unit of each drawn cluster, once per draw."""
    return np.concatenate([data[:, clusters == cluster] for cluster in drawn], axis=1)


@pytest.mark.parametrize("level", LEVELS)
def test_the_vectorised_bootstrap_equals_alpha_on_explicitly_resampled_matrices(level):
    rng = np.random.default_rng(5)
    scenarios, items = 12, 3
    data = random_ratings(rng, raters=6, units=scenarios * items, missing=0.4)
    clusters = np.repeat(np.arange(scenarios), items)
    draws = resample_draws(scenarios, resamples=40, seed=2)

    vectorised = agreement.alpha_resamples(data, level=level, clusters=clusters, draws=draws)

    assert vectorised.shape == (40,)
    for row, drawn in enumerate(draws[:8]):
        explicit = agreement.alpha(explicit_resample(data, clusters, drawn), level=level)
        assert vectorised[row] == pytest.approx(explicit, abs=1e-9)


def test_the_bootstrap_passes_the_value_domain_on():
    data = random_ratings(np.random.default_rng(8), raters=4, units=15, values=3)
    clusters = np.arange(15)
    draws = resample_draws(15, resamples=5, seed=4)

    resampled = agreement.alpha_resamples(
        data, level="ordinal", clusters=clusters, draws=draws, value_domain=[3, 2, 1]
    )

    for row, drawn in enumerate(draws):
        explicit = agreement.alpha(
            explicit_resample(data, clusters, drawn), level="ordinal", value_domain=[3, 2, 1]
        )
        assert resampled[row] == pytest.approx(explicit, abs=1e-9)


def test_the_bootstrap_interval_is_the_percentiles_of_the_resampled_alphas():
    rng = np.random.default_rng(6)
    data = random_ratings(rng, raters=5, units=20, missing=0.2)
    clusters = np.arange(20)
    draws = resample_draws(20, resamples=200, seed=1)
    resampled = [
        agreement.alpha(explicit_resample(data, clusters, drawn), level="interval")
        for drawn in draws
    ]

    interval = agreement.alpha_bootstrap(data, level="interval", clusters=clusters, draws=draws)

    assert interval.estimate == pytest.approx(agreement.alpha(data, level="interval"))
    assert interval.low == pytest.approx(np.percentile(resampled, 2.5), abs=1e-9)
    assert interval.high == pytest.approx(np.percentile(resampled, 97.5), abs=1e-9)
    assert (interval.resamples_used, interval.resamples_undefined) == (200, 0)


def test_resamples_without_expected_disagreement_are_left_out_and_counted():
    # Units 0 and 1 (cluster 0) agree on 1; unit 2 (cluster 1) is rated 1 and 3. A resample that
    # draws cluster 0 twice holds only 1s: no expected disagreement, alpha undefined.
    data = np.array([[1, 1, 1], [1, 1, 3]])
    clusters = np.array([0, 0, 1])
    draws = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])

    interval = agreement.alpha_bootstrap(data, level="nominal", clusters=clusters, draws=draws)

    assert (interval.resamples_used, interval.resamples_undefined) == (3, 1)
    resampled = agreement.alpha_resamples(data, level="nominal", clusters=clusters, draws=draws)
    assert np.isnan(resampled[0]) and not np.isnan(resampled[1:]).any()


def test_the_bootstrap_refuses_clusters_that_do_not_match_the_draws():
    draws = resample_draws(3, resamples=5)

    with pytest.raises(ValueError, match="one cluster index per unit"):
        agreement.alpha_bootstrap(KRIPPENDORFF_2011, level="nominal", clusters=[0, 1], draws=draws)
    with pytest.raises(ValueError, match=r"must lie in 0\.\.2"):
        agreement.alpha_bootstrap(
            KRIPPENDORFF_2011, level="nominal", clusters=np.arange(12) % 4, draws=draws
        )


def test_rating_ranges_count_units_by_the_spread_of_their_ratings():
    data = np.array(
        [
            [1, 3, 5, 2, 4, 1],
            [1, 4, 1, 2, NAN, NAN],
            [1, 3, 3, NAN, 4, NAN],
        ]
    )
    # units: [1,1,1] -> 0; [3,4,3] -> 1; [5,1,3] -> 4; [2,2] -> 0; [4,4] -> 0; [1] has one rating
    assert agreement.rating_ranges(data) == {0: 3, 1: 1, 2: 0, 3: 0, 4: 1}


def test_rating_ranges_need_whole_numbers():
    with pytest.raises(ValueError, match="whole-number"):
        agreement.rating_ranges(np.array([[0.5, 1], [1, 1]]))


def test_unit_sds_are_population_sds_of_units_with_two_ratings_or_more():
    data = np.array([[-1, 0, 1, 1], [1, 0, NAN, NAN], [0, 0.5, NAN, NAN]])
    # unit 0: -1, 1, 0: mean 0, squares 1 + 1 + 0 = 2, / 3 -> sqrt(2/3) = 0.8165
    # unit 1: 0, 0, 0.5: mean 1/6, squares 1/36 + 1/36 + 4/36 = 6/36, / 3 -> sqrt(1/18) = 0.2357
    # unit 2, unit 3: one rating each -> nan
    sds = agreement.unit_sds(data)

    np.testing.assert_allclose(sds[:2], [np.sqrt(2 / 3), np.sqrt(1 / 18)])
    assert np.isnan(sds[2:]).all()


def test_unit_sds_take_the_ddof_they_are_given():
    data = np.array([[-1, 0, 1, 1], [1, 0, NAN, NAN], [0, 0.5, NAN, NAN]])
    # The same sums of squares over n - 1 = 2: sqrt(2/2) = 1 and sqrt((6/36)/2) = sqrt(1/12).
    sds = agreement.unit_sds(data, ddof=1)

    np.testing.assert_allclose(sds[:2], [1.0, np.sqrt(1 / 12)])
    np.testing.assert_allclose(sds[:2], np.std(data[:, :2], axis=0, ddof=1))
    assert np.isnan(sds[2:]).all()


def test_ecdf_gives_the_share_of_values_at_or_below_each_value():
    # 5 values (nan left out): 0 once, 0.5 three times, 1 once -> 1/5, 4/5, 5/5
    x, y = agreement.ecdf([0.5, 0, NAN, 1, 0.5, 0.5])

    np.testing.assert_array_equal(x, [0, 0.5, 1])
    np.testing.assert_allclose(y, [0.2, 0.8, 1.0])


def test_cohen_kappa_equals_scikit_learn_and_by_hand():
    # first against second: 4 both yes, 2 yes/no, 1 no/yes, 3 both no. p_o = 0.7,
    # p_e = (6/10)(5/10) + (4/10)(5/10) = 0.5, kappa = (0.7 - 0.5) / 0.5 = 0.4.
    first = [True] * 6 + [False] * 4
    second = [True] * 4 + [False] * 2 + [True] + [False] * 3
    assert agreement.cohen_kappa(first, second) == pytest.approx(0.4)
    rng = np.random.default_rng(9)
    a = rng.integers(0, 3, size=80)
    b = np.where(rng.random(80) < 0.7, a, rng.integers(0, 3, size=80))
    assert agreement.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert agreement.cohen_kappa(a, b, labels=[2, 1, 0]) == pytest.approx(
        cohen_kappa_score(a, b, labels=[0, 1, 2])
    )


def test_cohen_kappa_is_none_where_chance_agreement_is_certain():
    assert agreement.cohen_kappa([True, True, True], [True, True, True]) is None
    assert agreement.cohen_kappa([1, 1], [1, 1], labels=[True, False]) is None


def test_percent_agreement_counts_the_pairs_that_agree():
    assert agreement.agreed([1, 2, 3, 4], [1, 2, 0, 4]) == 3
    assert agreement.percent_agreement([1, 2, 3, 4], [1, 2, 0, 4]) == 75.0
    assert agreement.percent_agreement([], []) is None
    with pytest.raises(ValueError):
        agreement.agreed([1, 2], [1])


def test_criterion_agreement_equals_scikit_learn_criterion_by_criterion():
    rng = np.random.default_rng(12)
    rows, truth = [], {}
    for criterion in ("cites", "warns", "plain"):
        people = rng.random(40) < 0.6
        rater = np.where(rng.random(40) < 0.75, people, ~people)
        truth[criterion] = (people, rater)
        rows += [(criterion, bool(p), bool(r)) for p, r in zip(people, rater, strict=True)]

    found = {c.criterion: c for c in agreement.criterion_agreement(rows)}

    for criterion, (people, rater) in truth.items():
        assert found[criterion].n == 40
        assert found[criterion].kappa == pytest.approx(cohen_kappa_score(people, rater))
        assert found[criterion].percent == pytest.approx(100 * np.mean(people == rater))


def test_criterion_agreement_takes_shares_and_orders_by_disagreement():
    rows = [
        # "cites": people's shares 0.8, 0.3, 0.5 (no majority), None (no verdict) against the
        # rater's yes, yes, no, yes: yes/yes agrees, no/yes is the rater's alone -> 50%.
        ("cites", 0.8, True),
        ("cites", 0.3, True),
        ("cites", 0.5, False),
        ("cites", None, True),
        # "warns": 3 of 4 agree -> 75%; people yes, the rater no once.
        ("warns", True, True),
        ("warns", False, False),
        ("warns", True, False),
        ("warns", 1.0, True),
        # "plain": the same 50% as "cites", but a kappa of -1/3 below cites' 0 ranks it first:
        # p_o = 2/4, p_e = (3/4)(3/4) + (1/4)(1/4) = 10/16, kappa = (8/16 - 10/16) / (6/16).
        ("plain", 1.0, True),
        ("plain", 1.0, True),
        ("plain", 0.9, False),
        ("plain", 0.0, True),
        ("tone", None, None),
    ]

    found = agreement.criterion_agreement(rows)

    assert [c.criterion for c in found] == ["plain", "cites", "warns", "tone"]
    plain, cites, warns, tone = found
    assert (plain.percent, plain.kappa) == (50.0, pytest.approx(-1 / 3))
    assert (plain.people_only, plain.rater_only) == (1, 1)
    assert (cites.n, cites.undecided, cites.agreed, cites.people_only, cites.rater_only) == (
        2,
        1,
        1,
        0,
        1,
    )
    assert cites.percent == 50.0
    # The rater says yes to both: p_o = p_e = 1/2, kappa 0.
    assert cites.kappa == pytest.approx(0.0)
    assert cites.kappa == pytest.approx(cohen_kappa_score([True, False], [True, True]))
    assert (warns.percent, warns.people_only, warns.rater_only) == (75.0, 1, 0)
    assert warns.kappa == pytest.approx(
        cohen_kappa_score([True, False, True, True], [True, False, False, True])
    )
    assert (tone.n, tone.percent, tone.kappa) == (0, None, None)


def test_unit_spread_sorts_the_sds_and_counts_unanimous_units():
    data = np.array(
        [
            [1, 0.5, -1, 0, 1],
            [1, 0.5, 1, 0, NAN],
            [1, 0.0, 0, NAN, NAN],
        ]
    )
    # units: [1, 1, 1] SD 0; [.5, .5, 0] SD sqrt(1/18); [-1, 1, 0] SD sqrt(2/3); [0, 0] SD 0;
    # [1] one rating, left out. Range 0: units 0 and 3, of 4.
    spread = agreement.unit_spread(data)

    assert spread.units == 4
    np.testing.assert_allclose(spread.sds, [0, 0, np.sqrt(1 / 18), np.sqrt(2 / 3)])
    assert spread.unanimous == 0.5
    whole = np.array([[1, 3, 5, 2, 4], [1, 4, 1, 2, NAN], [1, 3, 3, NAN, 4]])
    ranges = agreement.rating_ranges(whole)
    assert agreement.unit_spread(whole).unanimous == ranges[0] / sum(ranges.values())
    np.testing.assert_allclose(
        agreement.unit_spread(whole, ddof=1).sds, np.sort(agreement.unit_sds(whole, ddof=1))
    )


def test_unit_spread_of_no_unit_with_two_ratings_is_empty():
    spread = agreement.unit_spread(np.array([[1, NAN], [NAN, 2]]))

    assert (spread.units, spread.sds.size, spread.unanimous) == (0, 0, None)
