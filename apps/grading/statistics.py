"""The calibration statistics: pure functions over plain lists, no database.

How the published protocol measures an auto-rater against expert labels: the Pearson
correlation of response scores (with its p-value and a 95% confidence interval, Fisher's z,
as scipy computes it), and per-criterion label agreement: accuracy, Cohen's kappa and
HealthBench's meta-evaluation F1, the macro average of the F1 of "met" and the F1 of "not
met" (the expert label is the truth, the rater's the prediction).

Where a statistic is undefined (fewer than three pairs, a constant series, a kappa with one
class only) the answer is None, which the pages show as "not enough data", never NaN.
"""

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

# scipy and scikit-learn are imported where they are used: this module is loaded wherever
# the grading app is (every worker process), and the two weigh about 100 MB of memory in
# each process that never computes a statistic.

MIN_N = 3  # below this, neither r nor an agreement says anything
MIN_N_INTERVAL = 4  # Fisher's z interval needs n - 3 > 0
LABELS = [True, False]


@dataclass(frozen=True)
class Correlation:
    r: float
    p: float
    n: int
    low: float | None  # the 95% interval; None under four pairs, where it is undefined
    high: float | None


@dataclass(frozen=True)
class Agreement:
    n: int
    accuracy: float
    kappa: float | None  # undefined when both sides use one class only
    f1_macro: float | None  # undefined when a class appears on neither side


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def score_correlation(xs: Sequence[float], ys: Sequence[float]) -> Correlation | None:
    """Pearson's r of paired scores with p, n and the 95% confidence interval; None when
    there are fewer than three pairs or either side does not vary."""
    if len(xs) != len(ys):
        raise ValueError("Scores must come in pairs.")
    n = len(xs)
    if n < MIN_N or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    from scipy import stats

    result = stats.pearsonr(xs, ys)
    r, p = _number(result.statistic), _number(result.pvalue)
    if r is None or p is None:
        return None
    low = high = None
    if n >= MIN_N_INTERVAL:
        interval = result.confidence_interval(0.95)
        low, high = _number(interval.low), _number(interval.high)
    return Correlation(r=r, p=p, n=n, low=low, high=high)


def label_agreement(rater: Sequence[bool], expert: Sequence[bool]) -> Agreement | None:
    """Agreement of the rater's labels with the experts' (the truth); None under three."""
    if len(rater) != len(expert):
        raise ValueError("Labels must come in pairs.")
    n = len(rater)
    if n < MIN_N:
        return None
    from sklearn.metrics import cohen_kappa_score, f1_score

    rater, expert = [bool(v) for v in rater], [bool(v) for v in expert]
    accuracy = sum(a == b for a, b in zip(rater, expert, strict=True)) / n
    with warnings.catch_warnings():
        # sklearn warns where the value is undefined; that case is answered with None.
        warnings.simplefilter("ignore")
        kappa = _number(cohen_kappa_score(expert, rater, labels=LABELS))
        present = set(rater) | set(expert)
        f1 = None
        if present == set(LABELS):
            f1 = float(f1_score(expert, rater, labels=LABELS, average="macro", zero_division=0.0))
    return Agreement(n=n, accuracy=accuracy, kappa=kappa, f1_macro=f1)
