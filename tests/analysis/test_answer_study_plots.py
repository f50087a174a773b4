"""The answer-study report's own figures: Bradley-Terry strengths as dots with whiskers, and
people's helpfulness against the rubric score as a scatter (apps/analysis/plots.py)."""

import xml.etree.ElementTree as ET

import pytest

from apps.analysis import plots

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert(1)</script> & "x"'


def whiskers(**overrides):
    kwargs = {
        "title": "Bradley-Terry strengths",
        "labels": ["Alpha", "Beta", "Gamma (offline)"],
        "series": {
            "People": [(0.8, 0.2, 1.3), (0.1, None, None), (-0.9, -1.5, -0.2)],
            "Proxy (temperature 1.0)": [(0.5, 0.1, 0.9), (None, None, None), (-0.5, -1.0, 0.1)],
        },
        "xlabel": "Strength (log scale)",
    }
    return plots.dot_whiskers(**kwargs | overrides)


def points(**overrides):
    kwargs = {
        "title": "Helpfulness against score",
        "series": {"Alpha": ([50.0, 75.0, float("nan")], [3.2, 4.0, 2.0]), "Beta": ([25.0], [2.2])},
        "xlabel": "Rubric score (%)",
        "ylabel": "People's helpfulness",
    }
    return plots.scatter(**kwargs | overrides)


def texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)  # noqa: S314 (our own output, parsed strictly)
    return ["".join(element.itertext()) for element in root.iter(f"{SVG}text")]


@pytest.mark.parametrize("draw", [whiskers, points])
def test_the_same_data_draws_the_same_bytes(draw):
    assert draw() == draw()


def test_whiskers_show_every_row_series_and_axis_label():
    shown = texts(whiskers())
    for label in ["Alpha", "Beta", "Gamma (offline)", "People", "Proxy (temperature 1.0)"]:
        assert label in shown
    assert "Strength (log scale)" in shown


def test_scatter_shows_every_series_and_both_axes():
    shown = texts(points())
    for label in ["Alpha", "Beta", "Rubric score (%)", "People's helpfulness"]:
        assert label in shown


@pytest.mark.parametrize(
    "draw",
    [
        lambda label: whiskers(title=label, labels=[label], series={label: [(0.0, -1.0, 1.0)]}),
        lambda label: points(title=label, series={label: ([1.0], [2.0])}),
    ],
)
def test_hostile_labels_are_written_literally(draw):
    svg = draw(HOSTILE)
    assert "<script" not in svg
    assert texts(svg).count(HOSTILE) >= 2


@pytest.mark.parametrize(
    "draw",
    [
        lambda: whiskers(labels=[]),
        lambda: whiskers(series={"People": [(None, None, None)] * 3}),
        lambda: points(series={}),
        lambda: points(series={"Alpha": ([float("nan")], [1.0])}),
    ],
)
def test_empty_input_says_no_data(draw):
    assert "No data" in texts(draw())


def test_a_series_with_too_few_values_is_refused():
    with pytest.raises(ValueError, match="People"):
        whiskers(series={"People": [(0.1, 0.0, 0.2)]})
