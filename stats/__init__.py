"""Assay's statistics: pure functions over numbers, each computed once and called by whoever
shows it.

- `agreement`: Krippendorff's alpha and its cluster bootstrap, Cohen's kappa, percent
  agreement (also per criterion, people's majority against a rater), and the spread of the
  ratings of each unit.
- `bootstrap`: the seeded cluster resamples and the percentile interval every interval uses.
- `correlation`: Pearson's r with its confidence interval, Spearman's rho with its bootstrap.
- `significance`: Wilcoxon, Kruskal-Wallis, Kolmogorov-Smirnov, Spearman, skewness and
  kurtosis with their tests, and the Benjamini-Hochberg correction.
- `calibration`: an auto-rater's labels against the experts' (accuracy, kappa, macro F1).
- `pairs`: Bradley-Terry strengths from pairwise judgments (choix), with their cluster
  bootstrap, and the win rates of each pair of items.
- `regression`: least squares of an outcome on a few predictors (statsmodels), with the
  predictors it cannot estimate and the rows with a missing value left out and reported.
- `descriptive`: groups' mean, median and interquartile range, and the lower median.
- `points`: the fewest points a report shows a statistic over (`MIN_POINTS`).

The package knows nothing of Django, the database or any app: it takes numbers (lists, numpy
arrays, pandas frames) and returns numbers, with undefined values as None or NaN and a
reason, never a sentence. That keeps every statistic checkable against the reference
libraries (scipy, scikit-learn, krippendorff, statsmodels, choix) on plain data, and keeps the
reports to what is theirs: which rows go in, the tables, the figures and the words on them. An
import-linter contract (`stats-standalone` in .importlinter) holds the line.

Its modules import numpy, pandas and scipy at the top: a caller that every web and worker
process loads at start (grading, questions) imports them inside the function that computes.
"""
