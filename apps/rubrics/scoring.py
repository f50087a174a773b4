"""Scoring a response against one rubric version: pure, no database, no I/O.

The rule (docs/rubrics.md, "Scoring"; the rubric benchmark's published design): a response earns a
positive criterion's points when the criterion is met, and a negative criterion's points
when it is avoided (not met). Score = earned / the sum of all points, so it lies in [0, 1].
Published worked example: a rubric worth 43 points, a response earning 24 of them: 55.8%.

This is deliberately not HealthBench's formula (met negatives subtract; only positive points
form the maximum). Rubrics imported from HealthBench are converted before they get here.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .errors import ScoringError

POSITIVE, NEGATIVE = "positive", "negative"
FACTUAL, PRESENTATION = "factual", "presentation"
ALLOWED_POINTS = frozenset({1, 2, 3, 5})


@dataclass(frozen=True)
class ScoredCriterion:
    id: object
    polarity: str
    kind: str
    points: int


@dataclass(frozen=True)
class Rate:
    """How many criteria of one group earned their points, of how many."""

    earned: int
    total: int

    @property
    def value(self) -> float | None:
        return self.earned / self.total if self.total else None


@dataclass(frozen=True)
class ScoreBreakdown:
    earned_points: int
    max_points: int
    positive_factual_met: Rate
    negative_factual_avoided: Rate
    positive_presentation_met: Rate
    negative_presentation_avoided: Rate

    @property
    def score(self) -> float:
        return self.earned_points / self.max_points

    @property
    def percent(self) -> float:
        """The score in percent, to one decimal place, as the published example reports it."""
        return round(100 * self.earned_points / self.max_points, 1)


def earns(criterion: ScoredCriterion, met: bool) -> bool:
    """Whether a verdict earns the criterion's points (the published rule)."""
    return met if criterion.polarity == POSITIVE else not met


def score(criteria: Iterable[ScoredCriterion], verdicts: Mapping[object, bool]) -> ScoreBreakdown:
    """Score one response from a verdict ("met": True/False) for every criterion.

    A criterion without a verdict is an error, never silently "not met": a grader that did
    not answer must show up as missing, not as a lower score.
    """
    criteria = list(criteria)
    if not criteria:
        raise ScoringError("A rubric without criteria cannot be scored.")
    earned = maximum = 0
    groups: dict[tuple[str, str], list[int]] = {
        (p, k): [0, 0] for p in (POSITIVE, NEGATIVE) for k in (FACTUAL, PRESENTATION)
    }
    for criterion in criteria:
        _check(criterion)
        if criterion.id not in verdicts:
            raise ScoringError(f"No verdict for criterion {criterion.id!r}.")
        met = verdicts[criterion.id]
        if not isinstance(met, bool):
            raise ScoringError(f"The verdict for criterion {criterion.id!r} must be true or false.")
        maximum += criterion.points
        group = groups[(criterion.polarity, criterion.kind)]
        group[1] += 1
        if earns(criterion, met):
            earned += criterion.points
            group[0] += 1
    return ScoreBreakdown(
        earned_points=earned,
        max_points=maximum,
        positive_factual_met=Rate(*groups[(POSITIVE, FACTUAL)]),
        negative_factual_avoided=Rate(*groups[(NEGATIVE, FACTUAL)]),
        positive_presentation_met=Rate(*groups[(POSITIVE, PRESENTATION)]),
        negative_presentation_avoided=Rate(*groups[(NEGATIVE, PRESENTATION)]),
    )


def _check(criterion: ScoredCriterion) -> None:
    if criterion.polarity not in (POSITIVE, NEGATIVE):
        raise ScoringError(f"Criterion {criterion.id!r}: unknown polarity {criterion.polarity!r}.")
    if criterion.kind not in (FACTUAL, PRESENTATION):
        raise ScoringError(f"Criterion {criterion.id!r}: unknown kind {criterion.kind!r}.")
    if criterion.points not in ALLOWED_POINTS:
        raise ScoringError(
            f"Criterion {criterion.id!r}: points must be 5, 3, 2 or 1, not {criterion.points!r}."
        )
