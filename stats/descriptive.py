"""Summaries of groups of values in a frame: their mean, median and interquartile range, and
the lower median, which is always one of the values given."""

import pandas as pd


def spread(frame: pd.DataFrame, *, by: list[str], value: str) -> pd.DataFrame:
    """Per group of `by`, the `value` column's mean, median, interquartile range (75th minus
    25th percentile, linear interpolation) and count, indexed by the groups."""
    grouped = frame.groupby(by)[value]
    return pd.DataFrame(
        {
            "mean": grouped.mean(),
            "median": grouped.median(),
            "iqr": grouped.quantile(0.75) - grouped.quantile(0.25),
            "count": grouped.size(),
        }
    )


def lower_median(frame: pd.DataFrame, *, by: list[str], value: str) -> pd.DataFrame:
    """One row per group of `by`: its columns `by` and `value`, with the lower median of the
    group's values (of an even count, the lower of the two middle values: a rating someone
    gave, never a mean of two). Groups keep the order of their sorted keys."""
    ordered = frame.sort_values([*by, value], kind="stable")
    grouped = ordered.groupby(by, sort=False)
    middle = grouped.cumcount() == (grouped[value].transform("size") - 1) // 2
    return ordered.loc[middle, [*by, value]].reset_index(drop=True)
