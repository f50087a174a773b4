"""Ordinary least squares of a continuous outcome (people's mean helpfulness per answer) on a
few predictors (presentation criteria met or not met per answer), with an intercept:
statsmodels' OLS, its 95% confidence intervals and two-sided p-values.

The standard errors are the classical ones by default (`covariance="nonrobust"`, as textbooks
give them); `covariance="HC3"` gives MacKinnon & White's heteroscedasticity-robust ones.

Before fitting, predictors that cannot be estimated are dropped, each with its reason
(`DropReason`): one with no value at all, one with the same value for every answer used (its
effect is the intercept's), one that the intercept and the predictors before it already
determine (collinear: two criteria met by the same answers). Rows with a missing value in the
outcome or in any predictor kept are left out (listwise), and counted.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from .points import MIN_POINTS

CONFIDENCE = 0.95
COVARIANCES = ("nonrobust", "HC3")  # statsmodels' names


class DropReason(StrEnum):
    NO_VALUE = "no value"  # missing for every answer
    CONSTANT = "constant"  # the same for every answer used
    COLLINEAR = "collinear"  # determined by the intercept and the predictors before it


@dataclass(frozen=True)
class Coefficient:
    """An estimate with its CONFIDENCE interval and two-sided p; None where undefined (a
    perfect fit leaves no residual to estimate the error from)."""

    name: str
    estimate: float
    low: float | None
    high: float | None
    p: float | None


@dataclass(frozen=True)
class Dropped:
    name: str
    reason: DropReason


@dataclass(frozen=True)
class Regression:
    """The fit over `n` rows, or, when `too_few`, no numbers (intercept None, no coefficients)."""

    n: int  # rows used
    rows_missing: int  # rows left out for a missing value
    dropped: list[Dropped]
    too_few: bool
    intercept: Coefficient | None
    coefficients: list[Coefficient]  # in the order of the predictors given, the dropped left out
    r_squared: float | None  # None where the outcome does not vary
    covariance: str


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def _column(values: Sequence) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def _constant(column: np.ndarray) -> bool:
    present = column[~np.isnan(column)]
    return bool(present.size) and bool((present == present[0]).all())


def ols(
    outcome: Sequence[float | None],
    predictors: Mapping[str, Sequence[float | bool | None]],
    *,
    covariance: str = "nonrobust",
) -> Regression:
    """OLS of `outcome` on `predictors` (name -> one value per row, True/False as 1/0, None or
    nan missing) with an intercept, as `statsmodels.api.OLS(...).fit(cov_type=covariance)`.

    Too few rows: under MIN_POINTS residual degrees of freedom (rows beyond one per coefficient,
    the intercept's included), the result holds no numbers. Each coefficient's test and
    interval rest on the residual's spread, and with fewer rows left over than a correlation
    is ever shown on (`points`), that spread is a guess.
    """
    if covariance not in COVARIANCES:
        raise ValueError(f"Unknown covariance {covariance!r}: one of {', '.join(COVARIANCES)}.")
    y = _column(outcome)
    columns = {name: _column(values) for name, values in predictors.items()}
    if any(column.shape != y.shape for column in columns.values()):
        raise ValueError("Every predictor needs one value per row of the outcome.")

    dropped = []
    for name, column in list(columns.items()):
        present = column[~np.isnan(y)]
        if np.isnan(present).all():
            dropped.append(Dropped(name, DropReason.NO_VALUE))
        elif _constant(present):
            dropped.append(Dropped(name, DropReason.CONSTANT))
        else:
            continue
        del columns[name]

    complete = ~np.isnan(y)
    for column in columns.values():
        complete &= ~np.isnan(column)
    y = y[complete]
    kept = {}
    design = np.ones((y.size, 1))
    for name, column in columns.items():
        column = column[complete]
        widened = np.column_stack([design, column])
        if _constant(column):
            dropped.append(Dropped(name, DropReason.CONSTANT))
        elif y.size and np.linalg.matrix_rank(widened) < widened.shape[1]:
            dropped.append(Dropped(name, DropReason.COLLINEAR))
        else:
            design, kept[name] = widened, column

    n = int(y.size)
    found = dict(
        n=n,
        rows_missing=int((~complete).sum()),
        dropped=dropped,
        covariance=covariance,
    )
    if n - design.shape[1] < MIN_POINTS:
        return Regression(**found, too_few=True, intercept=None, coefficients=[], r_squared=None)

    # Imported here: statsmodels takes a second to load, and one report needs it.
    import statsmodels.api as sm

    fit = sm.OLS(y, design).fit(cov_type=covariance)
    low, high = fit.conf_int(alpha=1 - CONFIDENCE).T
    fitted = [
        Coefficient(
            name=name,
            estimate=float(fit.params[k]),
            low=_number(low[k]),
            high=_number(high[k]),
            p=_number(fit.pvalues[k]),
        )
        for k, name in enumerate(["intercept", *kept])
    ]
    return Regression(
        **found,
        too_few=False,
        intercept=fitted[0],
        coefficients=fitted[1:],
        r_squared=_number(fit.rsquared) if np.ptp(y) > 0 else None,
    )
