import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from apps.analysis import plots

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert(1)</script> & "x"'
DOLLARS = "costs $5 and $6"
SCALE = ["Strongly disagree", "Disagree", "Neither", "Agree", "Strongly agree"]


def stacked(**overrides):
    kwargs = {
        "title": "Q1: the response is helpful",
        "rows": [
            ("People (n=450)", [5.5, 12.25, 20.0, 40.0, 22.25]),
            ("offline-terse", [0, 2, 8, 60, 30]),
        ],
        "categories": SCALE,
    }
    return plots.stacked_percent_bars(**kwargs | overrides)


def grouped(**overrides):
    kwargs = {
        "title": "Spread of ratings per scenario",
        "categories": ["all agree", "1 apart", "2 apart"],
        "series": {"People": [10.0, 60.0, 30.0], "offline-terse": [50.0, 40.0, 10.0]},
        "xlabel": "Spread",
        "ylabel": "Scenarios (%)",
    }
    return plots.grouped_bars(**kwargs | overrides)


def steps(**overrides):
    kwargs = {
        "title": "Per-scenario SD",
        "series": {
            "People": ([0.0, 0.5, 1.2], [0.0, 50.0, 100.0]),
            "offline-terse": ([0.0, 0.3], [0.0, 100.0]),
        },
        "xlabel": "Standard deviation",
        "ylabel": "Cumulative share of scenarios (%)",
    }
    return plots.step_lines(**kwargs | overrides)


def hists(**overrides):
    kwargs = {
        "title": "Scores per model",
        "series": {"model-a": [0.1, 0.4, 0.45, 0.9], "model-b": [0.5, 0.55, 0.6]},
        "bins": 5,
        "xlabel": "Score",
        "ylabel": "Answers",
    }
    return plots.histograms(**kwargs | overrides)


def bar_panels(**overrides):
    kwargs = {
        "title": "Range of ratings, for each item",
        "panels": {
            "H1: done?": (["0", "1"], {"People": [70.0, 30.0], "offline-terse": [100.0, 0.0]}),
            "H2: helpful?": (
                ["0", "1", "2"],
                {"People": [10.0, 60.0, 30.0], "offline-terse": [50.0, 40.0, 10.0]},
            ),
            "P1: sensitive?": (["0", "1", "2"], {"People": [20.0, 20.0, 60.0]}),
        },
        "xlabel": "Range",
        "ylabel": "Scenarios (%)",
    }
    return plots.grouped_bar_panels(**kwargs | overrides)


def line_panels(**overrides):
    kwargs = {
        "title": "Per-scenario SD, for each item",
        "panels": {
            "H2: helpful?": {"People": ([0.0, 0.5], [0.5, 1.0]), "offline-terse": ([0.0], [1.0])},
            "P1: sensitive?": {"People": ([0.2, 0.7], [0.5, 1.0])},
            "P4: own preferences?": {"offline-terse": ([0.1], [1.0])},
        },
        "xlabel": "Standard deviation",
        "ylabel": "Share at or below",
    }
    return plots.step_line_panels(**kwargs | overrides)


PLOTS = [stacked, grouped, steps, hists, bar_panels, line_panels]


def parse(svg: str) -> ET.Element:
    # Our own output, parsed strictly: that it parses as XML is what is checked.
    return ET.fromstring(svg)  # noqa: S314


def texts(svg: str) -> list[str]:
    root = parse(svg)
    return ["".join(element.itertext()) for element in root.iter(f"{SVG}text")]


@pytest.mark.parametrize("draw", PLOTS)
def test_the_same_data_draws_the_same_bytes(draw):
    assert draw() == draw()


@pytest.mark.parametrize("draw", PLOTS)
def test_svg_is_titled_described_and_scales_by_its_viewbox(draw):
    svg = draw()
    root = parse(svg)
    assert re.fullmatch(r"0 0 [\d.]+ [\d.]+", root.get("viewBox"))
    first, second = list(root)[:2]
    assert first.tag == f"{SVG}title" and first.text
    assert second.tag == f"{SVG}desc" and second.text
    assert "Date" not in svg and "<dc:date>" not in svg


def test_title_element_is_the_callers_title():
    root = parse(grouped(title="Agreement among raters"))
    assert root.find(f"{SVG}title").text == "Agreement among raters"


@pytest.mark.parametrize("draw", PLOTS)
def test_text_is_text_at_ten_points_or_more(draw):
    svg = draw()
    sizes = [float(size) for size in re.findall(r"font-size: ([\d.]+)px", svg)]
    assert sizes, "text must be written as <text>, not as paths"
    assert min(sizes) >= 10


def test_stacked_bars_show_every_row_and_category_label():
    shown = texts(stacked())
    for label in [
        "People (n=450)",
        "offline-terse",
        *SCALE,
        "Share of answers (%)",
        "Q1: the response is helpful",
    ]:
        assert label in shown


def test_stacked_bars_label_wide_segments_with_their_percent_and_leave_narrow_ones_bare():
    shown = texts(stacked(rows=[("People", [1.0, 0.0, 0.0, 0.0, 99.0])]))
    assert "99%" in shown
    assert "1%" not in shown


def test_grouped_bars_show_every_category_series_and_axis_label():
    shown = texts(grouped())
    for label in [
        "all agree",
        "1 apart",
        "2 apart",
        "People",
        "offline-terse",
        "Spread",
        "Scenarios (%)",
    ]:
        assert label in shown


def test_grouped_bars_write_each_value_beyond_its_bar_end():
    shown = texts(grouped(series={"People": [10.0, 60.0, -30.0]}))
    assert {"10", "60", "-30"} <= set(shown)


def test_step_lines_show_every_series_and_axis_label():
    shown = texts(steps())
    for label in [
        "People",
        "offline-terse",
        "Standard deviation",
        "Cumulative share of scenarios (%)",
    ]:
        assert label in shown


def test_histograms_show_a_panel_per_series_and_the_axis_labels():
    shown = texts(hists(series={f"model-{i}": [0.1 * i, 0.5] for i in range(5)}))
    for label in [*(f"model-{i}" for i in range(5)), "Score", "Answers", "Scores per model"]:
        assert label in shown


@pytest.mark.parametrize("draw", [bar_panels, line_panels])
def test_panels_show_each_panels_title_one_legend_and_the_axis_labels(draw):
    shown = texts(draw())
    panels = (
        ["H1: done?", "H2: helpful?", "P1: sensitive?"]
        if draw is bar_panels
        else ["H2: helpful?", "P1: sensitive?", "P4: own preferences?"]
    )
    for label in panels:
        assert shown.count(label) == 1, label
    # One legend for every panel, even where a panel lacks a series.
    assert shown.count("People") == 1 and shown.count("offline-terse") == 1
    # The x label under the lowest panel of each of the two columns; the y label once.
    assert shown.count("Range" if draw is bar_panels else "Standard deviation") == 2
    assert shown.count("Scenarios (%)" if draw is bar_panels else "Share at or below") == 1


def test_a_panel_with_too_few_values_is_refused():
    with pytest.raises(ValueError, match="H2"):
        bar_panels(panels={"H2": (["0", "1"], {"People": [100.0]})})
    with pytest.raises(ValueError, match="H2"):
        line_panels(panels={"H2": {"People": ([0.0, 1.0], [1.0])}})


@pytest.mark.parametrize(
    "draw",
    [
        lambda label: bar_panels(title=label, panels={label: (["0", "1"], {label: [50.0, 50.0]})}),
        lambda label: line_panels(title=label, panels={label: {label: ([0.0, 1.0], [0.5, 1.0])}}),
        lambda label: stacked(
            title=label, rows=[(label, [20.0] * 5)], categories=[label, *SCALE[1:]]
        ),
        lambda label: grouped(
            title=label, categories=[label, "b"], series={label: [1.0, 2.0]}, xlabel=label
        ),
        lambda label: steps(title=label, series={label: ([0.0, 1.0], [0.0, 1.0])}, ylabel=label),
        lambda label: hists(title=label, series={label: [1.0, 2.0]}, xlabel=label),
    ],
)
def test_hostile_labels_are_escaped_and_written_literally(draw):
    for label in [HOSTILE, DOLLARS]:
        svg = draw(label)
        assert "<script" not in svg
        shown = texts(svg)  # parses as XML
        assert shown.count(label) >= 2, "in the title and in the data labels, as given"
        assert parse(svg).find(f"{SVG}title").text == label


@pytest.mark.parametrize(
    "draw",
    [
        lambda: stacked(rows=[]),
        lambda: stacked(rows=[("People", [])], categories=[]),
        lambda: grouped(categories=[], series={}),
        lambda: grouped(series={}),
        lambda: steps(series={}),
        lambda: steps(series={"People": ([], [])}),
        lambda: hists(series={}),
        lambda: hists(series={"model-a": [], "model-b": []}),
        lambda: bar_panels(panels={}),
        lambda: bar_panels(panels={"H2": ([], {})}),
        lambda: line_panels(panels={}),
        lambda: line_panels(panels={"H2": {"People": ([], [])}}),
    ],
)
def test_empty_input_draws_a_small_svg_that_says_no_data(draw):
    svg = draw()
    assert "No data" in texts(svg)
    root = parse(svg)
    assert root.find(f"{SVG}desc").text == "No data."


def test_a_row_with_too_few_values_is_refused():
    with pytest.raises(ValueError, match="offline-terse"):
        stacked(rows=[("offline-terse", [50.0, 50.0])])


def test_importing_the_module_does_not_import_matplotlib():
    code = "import sys, apps.analysis.plots; print('matplotlib' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_figures_drawn_at_once_on_several_threads_are_each_correct():
    from concurrent.futures import ThreadPoolExecutor

    expected = {draw: draw() for draw in PLOTS}
    with ThreadPoolExecutor(max_workers=4) as pool:
        drawn = list(pool.map(lambda draw: (draw, draw()), PLOTS * 4))
    for draw, svg in drawn:
        assert svg == expected[draw]


DRAW_AT_ONCE = """
import threading
from apps.analysis import plots

errors, start = [], threading.Barrier(6)

def draw(i):
    start.wait()
    try:
        if i % 3 == 0:
            plots.histograms(title="t", series={"a": [0.1, 0.7]}, bins=[0, 0.5, 1],
                             xlabel="x", ylabel="y")
        elif i % 3 == 1:
            plots.stacked_percent_bars(title="t", rows=[("a", [50.0, 50.0])],
                                       categories=["x", "y"])
        else:
            plots.grouped_bars(title="t", categories=["x"], series={"a": [1.0]},
                               xlabel="x", ylabel="y")
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=draw, args=(i,)) for i in range(6)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(errors)
"""


def test_a_fresh_process_draws_its_first_figures_in_several_threads_at_once():
    """A page's images are asked for together: the first figures of a process are drawn in
    several threads at once, while matplotlib is first imported."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", DRAW_AT_ONCE], cwd=root, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


# --- labels never collide ------------------------------------------------------------------

# The nine topics of the published benchmark, and longer ones than any it has.
TOPICS = [
    "accounts",
    "moderation tools",
    "security tools",
    "privacy tools",
    "compromise",
    "platform actions",
    "scams",
    "harassment",
    "data concerns",
]
LONG_TOPICS = [f"{topic} and everything around {topic}" for topic in TOPICS]


def long_models(count: int) -> list[str]:
    return [
        f"Provider {i} Extremely Long Model Name Version 2025-{i:02d} Preview (offline)"
        for i in range(count)
    ]


def assert_apart(boxes, what):
    """No two boxes overlap or touch: a pixel at least between any two."""
    assert len(boxes) > 1, what
    boxes = [box.padded(0.5) for box in boxes]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), f"{what}: {a} overlaps {b}"


# constrained layout warns when it gives up (the plot squeezed to nothing): an error here.
@pytest.mark.filterwarnings("error::UserWarning")
@pytest.mark.parametrize("topics", [TOPICS, LONG_TOPICS], ids=["topics", "long topics"])
@pytest.mark.parametrize("count", [2, 3, 5, 12])
def test_the_topic_figures_labels_never_collide_at_any_count_of_models(topics, count):
    models = long_models(count)
    fig, _desc = plots._grouped_bars_figure(
        title="Mean score per topic per model (Figure 5)",
        categories=topics,
        series={m: [40.0 + 5 * (k % 9) for k in range(len(topics))] for m in models},
        xlabel="Topic",
        ylabel="Mean score (%)",
        footnote="(offline): an offline demo model",
    )
    (ax,) = fig.axes
    boxes = plots.tick_label_boxes(fig, ax.xaxis)
    assert len(boxes) == len(topics)
    assert_apart(boxes, "topic labels")
    # The values on the bars, where shown, never run into each other either.
    values = [t.get_window_extent() for t in ax.texts if t.get_visible()]
    if len(values) > 1:
        assert_apart(values, "values on bars")
    (legend,) = fig.legends
    entries = [t.get_window_extent() for t in legend.get_texts()]
    assert_apart(entries, "legend entries")
    assert ax.get_position().height * fig.get_figheight() >= plots.PLOT_HEIGHT_IN - 0.01
    # Every label and the legend stay inside the figure.
    inside = fig.bbox.padded(1)
    for box in [*boxes, *entries]:
        assert inside.containsx(box.x0) and inside.containsx(box.x1), box


@pytest.mark.filterwarnings("error::UserWarning")
@pytest.mark.parametrize("count", [2, 4, 7, 12])
def test_the_histograms_panel_titles_never_collide_at_any_count_of_models(count):
    models = long_models(count)
    fig, _desc = plots._histograms_figure(
        title="Distribution of answer scores per model (Figure 3)",
        series={m: [0.1 * (k % 10) for k in range(20 + i)] for i, m in enumerate(models)},
        bins=[i / 20 for i in range(21)],
        xlabel="Score",
        ylabel="Answers",
        footnote="(offline): an offline demo model",
    )
    fig.draw_without_rendering()
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == count
    titles = [ax.title.get_window_extent() for ax in panels]
    assert_apart(titles, "panel titles")
    for ax in panels:
        ticks = plots.tick_label_boxes(fig, ax.xaxis)
        if len(ticks) > 1:
            assert_apart(ticks, "score ticks")
