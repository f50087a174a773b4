"""Score bands: the ranges of an answer's score that the benchmark report counts and the
answer viewer filters by, named once here so that a report's cell and the answers behind it
are the same answers. Reports import them; nothing here imports a report.

- `below-65` and `65-or-more`: the published benchmark's line, an answer "below 65%" scores
  under 0.65 (not equal to it).
- `0.60-0.65` and the like: the report's histogram bins of 0.05; a bin holds its lower edge,
  the last bin (`0.95-1.00`) both.
- `scored`: every answer with a score (the report's counts of scored answers).
- `unscored`: answers with no score in the grading run (an error judgment, not graded yet, or
  not answered by the sampling run).
"""

from dataclasses import dataclass

from django.db.models import Q

THRESHOLD = 0.65
# i / 20 is the double nearest each edge, as a score of 13/20 is: an answer on an edge falls
# in the bin above it, in SQL as in pandas.
SCORE_BINS = [i / 20 for i in range(21)]
UNSCORED = "unscored"


@dataclass(frozen=True)
class Band:
    key: str
    label: str
    low: float | None  # held; None: no score
    high: float | None  # held only when `closed`
    closed: bool = False

    def holds(self, score: float | None) -> bool:
        if self.low is None or score is None:
            return self.low is None and score is None
        return self.low <= score and (score <= self.high if self.closed else score < self.high)

    def q(self, field: str = "score") -> Q:
        """The band as a filter on a score column (`field`)."""
        if self.low is None:
            return Q(**{f"{field}__isnull": True})
        top = f"{field}__lte" if self.closed else f"{field}__lt"
        return Q(**{f"{field}__gte": self.low, top: self.high})


BELOW = Band("below-65", "Below 65%", 0.0, THRESHOLD)
AT_OR_ABOVE = Band("65-or-more", "65% or more", THRESHOLD, 1.0, closed=True)
NO_SCORE = Band(UNSCORED, "No score", None, None)
# Every answer with a score: what the report's counts of scored answers count.
SCORED = Band("scored", "Any score", 0.0, 1.0, closed=True)


def bin_band(low: float) -> Band:
    """The histogram bin that starts at `low` (one of SCORE_BINS but the last)."""
    index = SCORE_BINS.index(low)
    high = SCORE_BINS[index + 1]
    last = index + 2 == len(SCORE_BINS)
    return Band(f"{low:.2f}-{high:.2f}", f"{low:.0%} to {high:.0%}", low, high, closed=last)


BINS = [bin_band(low) for low in SCORE_BINS[:-1]]
BANDS = {band.key: band for band in (BELOW, AT_OR_ABOVE, SCORED, NO_SCORE, *BINS)}
# What the answer viewer's filter offers by name; the bins are reached from a histogram's cells.
NAMED = (BELOW, AT_OR_ABOVE, SCORED, NO_SCORE)


def band_get(key: str) -> Band | None:
    return BANDS.get(key)
