"""The fewest points a report reads a statistic over.

Below MIN_POINTS points (pairs of a correlation, units of an agreement, questions of a paired
test) a report shows "too few points (n = ...)" instead of the number: over four points a
rank correlation is a perfect 1 or -1 by chance one time in twelve, and no two-sided exact
p-value of a rank test can fall below 0.05 (Spearman over four points: 1/12; Wilcoxon over
five pairs: 1/16). A statistic may need more for its own sake (a test's own minimum); it is
never shown over fewer. docs/reports.md#few-points says the same to the reader.
"""

MIN_POINTS = 5


def too_few(n: int) -> bool:
    """Whether a statistic over n points is too few to show."""
    return n < MIN_POINTS
