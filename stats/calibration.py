"""How far an auto-rater's labels agree with the experts' (the published calibration
protocol): accuracy, Cohen's kappa and HealthBench's meta-evaluation F1, the macro average of
the F1 of "met" and the F1 of "not met", the expert label being the truth and the rater's the
prediction. The scores' agreement is Pearson's r (`correlation.pearson`).

Where a measure is undefined (fewer than three pairs, a kappa with one class only) the answer
is None, never NaN.
"""

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from sklearn.metrics import f1_score

from .agreement import agreed, cohen_kappa

MIN_PAIRS = 3  # below this, an agreement says nothing
LABELS = [True, False]


@dataclass(frozen=True)
class Agreement:
    n: int
    accuracy: float
    kappa: float | None  # undefined when both sides use one class only
    f1_macro: float | None  # undefined when a class appears on neither side


def label_agreement(rater: Sequence[bool], expert: Sequence[bool]) -> Agreement | None:
    """Agreement of the rater's labels with the experts' (the truth); None under three pairs."""
    if len(rater) != len(expert):
        raise ValueError("Labels must come in pairs.")
    n = len(rater)
    if n < MIN_PAIRS:
        return None
    rater, expert = [bool(v) for v in rater], [bool(v) for v in expert]
    f1 = None
    if set(rater) | set(expert) == set(LABELS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn warns of a class one side lacks
            f1 = float(f1_score(expert, rater, labels=LABELS, average="macro", zero_division=0.0))
    return Agreement(
        n=n,
        accuracy=agreed(rater, expert) / n,
        kappa=cohen_kappa(expert, rater, labels=LABELS),
        f1_macro=f1,
    )
