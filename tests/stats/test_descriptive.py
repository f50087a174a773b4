"""Summaries of groups: the spread equals numpy's mean, median and percentiles (linear
interpolation) group by group, and the lower median is a value given, worked by hand."""

import numpy as np
import pandas as pd
import pytest

from stats.descriptive import lower_median, spread


def test_the_spread_of_each_group_equals_numpy():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {"g": rng.integers(0, 4, size=60), "h": rng.integers(0, 2, size=60), "v": rng.random(60)}
    )

    found = spread(frame, by=["g", "h"], value="v")

    for (g, h), row in found.iterrows():
        values = frame.loc[(frame["g"] == g) & (frame["h"] == h), "v"].to_numpy()
        q1, q3 = np.percentile(values, [25, 75])
        assert (row["mean"], row["median"], row["iqr"]) == pytest.approx(
            (values.mean(), np.median(values), q3 - q1)
        )
        assert row["count"] == len(values)


def test_the_spread_of_one_value_is_that_value_with_no_range():
    # .6 and .9: median .75, IQR .825 - .675 = .15 (linear); a single .975: IQR 0.
    frame = pd.DataFrame({"t": ["a", "a", "b"], "v": [0.6, 0.9, 0.975]})
    found = spread(frame, by=["t"], value="v")
    assert found.loc["a", "iqr"] == pytest.approx(0.15)
    assert found.loc["a", "median"] == pytest.approx(0.75)
    assert (found.loc["b", "mean"], found.loc["b", "iqr"], found.loc["b", "count"]) == (
        0.975,
        0.0,
        1,
    )


def test_the_lower_median_takes_the_lower_middle_value_of_an_even_count():
    frame = pd.DataFrame(
        {
            "unit": [1, 1, 2, 2, 2, 3, 3, 3, 3],
            "value": [4.0, 2.0, 5.0, 1.0, 3.0, 1.0, 0.0, 1.0, 0.0],
            "other": list("abcdefghi"),
        }
    )
    # unit 1: 2, 4 -> 2; unit 2: 1, 3, 5 -> 3; unit 3: 0, 0, 1, 1 -> 0 (a tie goes low)
    found = lower_median(frame, by=["unit"], value="value")
    assert list(found.columns) == ["unit", "value"]
    assert found.values.tolist() == [[1, 2.0], [2, 3.0], [3, 0.0]]
