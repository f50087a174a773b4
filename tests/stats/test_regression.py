"""OLS equals statsmodels called directly and, on a small case, the normal equations by hand;
predictors that cannot be estimated and rows with a missing value are left out and reported."""

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from stats.points import MIN_POINTS
from stats.regression import Dropped, DropReason, ols


def random_study(rng, *, rows, criteria=3):
    met = rng.random((rows, criteria)) < 0.5
    helpfulness = 3 + met @ rng.normal(size=criteria) + rng.normal(size=rows) * (1 + met[:, 0])
    return helpfulness, {f"c{k}": met[:, k] for k in range(criteria)}


def as_rows(result):
    fitted = [result.intercept, *result.coefficients]
    return [(c.name, c.estimate, c.low, c.high, c.p) for c in fitted]


def numbers(result):
    return np.array([row[1:] for row in as_rows(result)], dtype=float)


@pytest.mark.parametrize("covariance", ["nonrobust", "HC3"])
def test_ols_equals_statsmodels(covariance):
    y, predictors = random_study(np.random.default_rng(1), rows=60)
    design = sm.add_constant(np.column_stack(list(predictors.values())).astype(float))
    expected = sm.OLS(y, design).fit(cov_type=covariance)
    low, high = expected.conf_int(alpha=0.05).T

    result = ols(y, predictors, covariance=covariance)

    assert (result.n, result.rows_missing, result.dropped, result.too_few) == (60, 0, [], False)
    assert [name for name, *_ in as_rows(result)] == ["intercept", "c0", "c1", "c2"]
    np.testing.assert_allclose(
        numbers(result),
        np.column_stack([expected.params, low, high, expected.pvalues]),
    )
    assert result.r_squared == pytest.approx(expected.rsquared)
    assert result.covariance == covariance


def test_robust_errors_differ_from_the_classical_ones():
    y, predictors = random_study(np.random.default_rng(1), rows=60)

    classical, robust = ols(y, predictors), ols(y, predictors, covariance="HC3")

    assert classical.coefficients[0].estimate == pytest.approx(robust.coefficients[0].estimate)
    assert classical.coefficients[0].low != pytest.approx(robust.coefficients[0].low)


def test_a_small_case_equals_the_normal_equations():
    y = np.array([2.0, 3.5, 3.0, 5.0, 4.5, 6.0, 2.5, 4.0, 5.5])
    first = np.array([0, 1, 0, 1, 1, 1, 0, 0, 1])
    second = np.array([0, 0, 1, 1, 0, 1, 0, 1, 1])
    x = np.column_stack([np.ones(9), first, second])
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    residuals = y - x @ beta
    df = 9 - 3
    se = np.sqrt(residuals @ residuals / df * np.diag(np.linalg.inv(x.T @ x)))
    t = stats.t.ppf(0.975, df)
    p = 2 * stats.t.sf(np.abs(beta / se), df)
    r_squared = 1 - residuals @ residuals / ((y - y.mean()) @ (y - y.mean()))

    result = ols(y, {"first": first, "second": second})

    np.testing.assert_allclose(
        numbers(result),
        np.column_stack([beta, beta - t * se, beta + t * se, p]),
    )
    assert result.r_squared == pytest.approx(r_squared)


def test_predictors_that_cannot_be_estimated_are_dropped_with_their_reason():
    y, predictors = random_study(np.random.default_rng(2), rows=30, criteria=2)
    predictors = {
        "always": [True] * 30,
        "c0": predictors["c0"],
        "never": [False] * 29 + [None],
        "nothing": [None] * 30,
        "c1": predictors["c1"],
        "c0 again": predictors["c0"],
        "c0 reversed": ~predictors["c0"],
    }

    result = ols(y, predictors)

    assert result.dropped == [
        Dropped("always", DropReason.CONSTANT),
        Dropped("never", DropReason.CONSTANT),
        Dropped("nothing", DropReason.NO_VALUE),
        Dropped("c0 again", DropReason.COLLINEAR),
        Dropped("c0 reversed", DropReason.COLLINEAR),
    ]
    assert [c.name for c in result.coefficients] == ["c0", "c1"]
    # Dropped before the rows are chosen: "never" has a missing value, and costs no row.
    assert (result.n, result.rows_missing) == (30, 0)
    assert as_rows(result) == as_rows(ols(y, {"c0": predictors["c0"], "c1": predictors["c1"]}))


def test_a_predictor_constant_over_the_rows_used_is_dropped():
    y, predictors = random_study(np.random.default_rng(3), rows=30, criteria=2)
    # c1 varies only on the rows where c0 is missing: over the rows used it is always met.
    c0 = [None] * 5 + list(predictors["c0"][5:])
    c1 = [False] * 5 + [True] * 25

    result = ols(y, {"c0": c0, "c1": c1})

    assert result.dropped == [Dropped("c1", DropReason.CONSTANT)]
    assert (result.n, result.rows_missing) == (25, 5)


def test_rows_with_a_missing_value_are_left_out():
    y, predictors = random_study(np.random.default_rng(4), rows=40)
    y_missing = y.copy()
    y_missing[3] = np.nan
    with_gaps = {name: list(values) for name, values in predictors.items()}
    with_gaps["c0"][7] = None
    with_gaps["c2"][11] = np.nan
    complete = np.setdiff1d(np.arange(40), [3, 7, 11])

    result = ols(y_missing, with_gaps)

    assert (result.n, result.rows_missing) == (37, 3)
    expected = ols(y[complete], {name: values[complete] for name, values in predictors.items()})
    assert [row[0] for row in as_rows(result)] == [row[0] for row in as_rows(expected)]
    np.testing.assert_allclose(numbers(result), numbers(expected))


def test_too_few_rows_give_no_numbers():
    # Two predictors and the intercept take three rows; MIN_POINTS more are needed.
    y, predictors = random_study(np.random.default_rng(5), rows=3 + MIN_POINTS, criteria=2)

    enough = ols(y, predictors)
    too_few = ols(y[:-1], {name: values[:-1] for name, values in predictors.items()})

    assert not enough.too_few and enough.intercept is not None
    assert too_few.too_few
    assert (too_few.intercept, too_few.coefficients, too_few.r_squared) == (None, [], None)
    assert too_few.n == 2 + MIN_POINTS


def test_a_constant_outcome_has_no_r_squared():
    result = ols([4.0] * 10, {"c": [True, False] * 5})

    assert result.r_squared is None
    assert result.coefficients[0].estimate == pytest.approx(0)


def test_unknown_covariance_and_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="Unknown covariance"):
        ols([1.0, 2.0], {"c": [True, False]}, covariance="HC1")
    with pytest.raises(ValueError, match="one value per row"):
        ols([1.0, 2.0], {"c": [True]})
