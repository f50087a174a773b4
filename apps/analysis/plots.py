"""The reports' figures, drawn on the server as SVG with matplotlib.

Each function takes the caller's title and data as keyword arguments and returns the SVG
text. The same data always gives the same bytes (the SVG's ids are hashed with a fixed salt
and the file carries no date), so a figure can be cached and compared in tests.

matplotlib is imported inside the functions: web and worker processes import this module,
and only a request that draws should pay for matplotlib's memory and import time. Figures
are made with `matplotlib.figure.Figure` on the SVG canvas, never through `pyplot`, whose
registry of open figures is global state that threads of a web process would share.

Text stays text in the SVG (readable, searchable, selectable), at 10 pt or more. Colours are
colour-blind safe: Okabe and Ito's palette for series, and a diverging orange-to-purple
scale (ColorBrewer's PuOr) for the points of an ordered answer scale. Labels given by the
caller (model names, item wording) are written literally: matplotlib escapes them for XML,
and mathtext (`$...$`) is off, so "costs $5 and $6" is not typeset as maths.
"""

import functools
import io
import math
import textwrap
import threading
from collections.abc import Sequence
from xml.sax.saxutils import escape

# Okabe & Ito (2008), "Color universal design": distinguishable with every common colour
# vision deficiency. Ordered so that the first colours, used most, have the most contrast
# with a white background; the yellow comes last.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442")
# Past eight series colours repeat, so the repetition is told apart by pattern.
HATCHES = ("", "//", "..", "xx")
LINESTYLES = ("-", "--", "-.", ":")
# ColorBrewer's PuOr, a diverging scale safe for colour-blind readers (Brewer, colorbrewer2.org).
DIVERGING_COLORMAP = "PuOr"
EDGE = "#333333"

WIDTH_IN = 7.0
TITLE_PT = 12
TEXT_PT = 11
SMALL_PT = 10  # the smallest text in a figure: tick labels, legends, values on bars
TITLE_CHARS = 64
LEGEND_CHARS = 48
NO_DATA = "No data"

# Read by matplotlib's SVG writer from the process-wide rcParams when it saves; there is no
# per-figure setting for them. The values never vary, so setting them once per process is
# safe under threads (unlike `rc_context`, which swaps the global values for a moment).
RC_PARAMS = {
    "svg.fonttype": "none",
    "svg.hashsalt": "assay-analysis-plots",
    "text.parse_math": False,
    "font.size": TEXT_PT,
    "axes.titlesize": TEXT_PT,
    "axes.labelsize": TEXT_PT,
    "xtick.labelsize": SMALL_PT,
    "ytick.labelsize": SMALL_PT,
    "legend.fontsize": SMALL_PT,
    "figure.titlesize": TITLE_PT,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


# Two requests of one process may draw their first figures at once (a page's images load
# together): importing matplotlib in two threads at the same time can meet its modules half
# initialised ("cannot import name ... from partially initialized module"), so the first
# import of everything the plots use is made under one lock.
_IMPORTING = threading.Lock()


@functools.cache
def _matplotlib():
    with _IMPORTING:
        import matplotlib

        matplotlib.rcParams.update(RC_PARAMS)
        import matplotlib.colors
        import matplotlib.ticker
        from matplotlib import colormaps  # noqa: F401
        from matplotlib.backends.backend_svg import FigureCanvasSVG
        from matplotlib.figure import Figure

    return Figure, FigureCanvasSVG


def _figure(*, height_in: float, title: str, **subplots):
    Figure, FigureCanvasSVG = _matplotlib()
    fig = Figure(figsize=(WIDTH_IN, height_in), layout="constrained")
    FigureCanvasSVG(fig)
    fig.suptitle(_wrap(title, TITLE_CHARS), fontweight="bold")
    return fig, (fig.subplots(**subplots) if subplots else None)


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_long_words=False)) or text


def _svg(fig, *, title: str, desc: str) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    svg = out.getvalue()
    # A <title> (and <desc>) as the first children of <svg> name the image for assistive
    # technology and for whoever opens the file alone; matplotlib writes neither.
    start = svg.index("<svg")
    end = svg.index(">", start) + 1
    named = f"\n <title>{escape(title)}</title>\n <desc>{escape(desc)}</desc>"
    return svg[:end] + named + svg[end:]


def _no_data(title: str) -> str:
    fig, _ = _figure(height_in=1.6, title=title)
    fig.text(0.5, 0.4, NO_DATA, ha="center", va="center", fontsize=TEXT_PT, color="#555555")
    return _svg(fig, title=title, desc=f"{NO_DATA}.")


def _series_style(index: int) -> dict:
    return {
        "color": PALETTE[index % len(PALETTE)],
        "hatch": HATCHES[index // len(PALETTE) % len(HATCHES)],
    }


def _line_style(index: int) -> dict:
    # Colour and dash both change from one line to the next, so lines stay apart in grey print.
    return {
        "color": PALETTE[index % len(PALETTE)],
        "linestyle": LINESTYLES[index % len(LINESTYLES)],
    }


def _text_color(fill) -> str:
    """Black or white, whichever contrasts more with `fill` (WCAG relative luminance)."""
    _matplotlib()
    from matplotlib.colors import to_rgb

    def linear(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in to_rgb(fill))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "#ffffff"


def _legend_columns(labels: Sequence[str]) -> int:
    longest = min(LEGEND_CHARS, max(len(label) for label in labels))
    per_label = longest * SMALL_PT * 0.6 + 3 * SMALL_PT
    return max(1, min(len(labels), int(WIDTH_IN * 72 * 0.95 // per_label)))


def _legend_lines(labels: Sequence[str]) -> int:
    """About how many lines of text a legend below the plot takes."""
    columns = _legend_columns(labels)
    lines = max(len(textwrap.wrap(label, LEGEND_CHARS)) or 1 for label in labels)
    return math.ceil(len(labels) / columns) * lines


def _legend_below(fig, ax, labels: Sequence[str], note: str = "") -> None:
    # Below the axes, outside them, so the legend never covers data; as many columns as the
    # labels' estimated width allows (about 0.6 em a character, plus the key). A note (what a
    # mark in the labels means) is the legend's title: said once, and laid out with it.
    columns = _legend_columns(labels)
    handles, names = ax.get_legend_handles_labels()
    names = [_wrap(name, LEGEND_CHARS) for name in names]
    fig.legend(
        handles,
        names,
        loc="outside lower center",
        ncols=columns,
        frameon=False,
        title=_wrap(note, 90) or None,
        title_fontsize=SMALL_PT,
    )


# Ways to set a category axis's labels, tried in turn until no two labels touch: wrapped
# ever narrower across, then turned upright and wrapped; the last one always fits nine
# topics (and many more), since an upright label is one line of text wide.
TICK_LAYOUTS = (
    (0, 16),
    (0, 12),
    (0, 9),
    (90, 28),
    (90, 18),
)  # fmt: skip  (rotation in degrees, characters a line)
TICK_GAP_PX = 2
PLOT_HEIGHT_IN = 2.8


def _overlapping(boxes) -> bool:
    """Whether any two of the boxes (matplotlib Bboxes) overlap, with TICK_GAP_PX between."""
    boxes = [b.padded(TICK_GAP_PX / 2) for b in boxes]
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def tick_label_boxes(fig, axis) -> list:
    """The drawn boxes of an axis's visible tick labels, in display units."""
    fig.draw_without_rendering()
    return [
        label.get_window_extent()
        for label in axis.get_ticklabels()
        if label.get_visible() and label.get_text()
    ]


def _fit_tick_labels(fig, ax, categories: list[str]) -> None:
    """The x axis's category labels, laid out the first of TICK_LAYOUTS ways in which no two
    of them overlap, measured by the renderer (not guessed from their lengths)."""
    for rotation, width in TICK_LAYOUTS:
        ax.set_xticklabels(
            [_wrap(c, width) for c in categories],
            rotation=rotation,
            ha="center" if rotation == 0 else "right" if rotation < 90 else "center",
            rotation_mode="anchor" if 0 < rotation < 90 else "default",
        )
        if not _overlapping(tick_label_boxes(fig, ax.xaxis)):
            break
    _keep_plot_height(fig, ax)


def _keep_plot_height(fig, ax) -> None:
    """Grow the figure until its plot keeps PLOT_HEIGHT_IN inches of height beside long or
    upright labels and a long legend, which constrained layout takes from the plot."""
    for _ in range(4):
        fig.draw_without_rendering()
        height = ax.get_position().height * fig.get_figheight()
        if height >= PLOT_HEIGHT_IN - 0.01:
            return
        fig.set_figheight(fig.get_figheight() + PLOT_HEIGHT_IN - max(height, 0.0))


def _hide_labels_that_do_not_fit(fig, pairs, *, horizontal: bool) -> None:
    """Hide each value label wider (or taller) than its bar: a cramped label is unreadable."""
    fig.draw_without_rendering()
    for text, bar in pairs:
        label, room = text.get_window_extent(), bar.get_window_extent()
        fits = (
            label.width + 4 <= room.width and label.height <= room.height
            if horizontal
            else label.width + 2 * TICK_GAP_PX <= room.width  # neighbours' values stay apart
        )
        text.set_visible(fits)


def stacked_percent_bars(
    *,
    title: str,
    rows: list[tuple[str, list[float]]],
    categories: list[str],
    xlabel: str = "Share of answers (%)",
) -> str:
    """One horizontal bar per row, split into `categories` (lowest scale point first) by percent."""
    if not rows or not categories:
        return _no_data(title)
    for label, values in rows:
        if len(values) != len(categories):
            raise ValueError(
                f"Row {label!r} has {len(values)} values for {len(categories)} categories."
            )
    _matplotlib()
    from matplotlib import colormaps

    fig, ax = _figure(height_in=1.9 + 0.5 * len(rows), title=title, nrows=1, ncols=1)
    colormap = colormaps[DIVERGING_COLORMAP]
    # The scale's ends stop short of the colormap's darkest colours, which would hide the labels.
    colors = [
        colormap(0.12 + 0.76 * i / max(1, len(categories) - 1)) for i in range(len(categories))
    ]
    if len(categories) == 1:
        colors = [PALETTE[0]]
    positions = list(range(len(rows)))
    left = [0.0] * len(rows)
    pairs = []
    for c, (category, color) in enumerate(zip(categories, colors, strict=True)):
        widths = [values[c] for _, values in rows]
        bars = ax.barh(
            positions, widths, left=left, color=color, edgecolor=EDGE, linewidth=0.6, label=category
        )
        for bar, width, start in zip(bars, widths, left, strict=True):
            if width > 0:
                text = ax.text(
                    start + width / 2,
                    bar.get_y() + bar.get_height() / 2,
                    f"{width:.0f}%",
                    ha="center",
                    va="center",
                    fontsize=SMALL_PT,
                    color=_text_color(color),
                )
                pairs.append((text, bar))
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(positions, [_wrap(label, 28) for label, _ in rows])
    ax.invert_yaxis()  # the first row on top, as it reads
    ax.set_xlim(0, max(100.0, *left))
    ax.set_xlabel(xlabel)
    ax.tick_params(axis="y", length=0)
    ax.spines["left"].set_visible(False)
    _legend_below(fig, ax, categories)
    _hide_labels_that_do_not_fit(fig, pairs, horizontal=True)
    desc = (
        f"Horizontal bars, one per row ({'; '.join(label for label, _ in rows)}), each split by "
        f"percent into: {'; '.join(categories)} (lowest first). X axis: {xlabel}."
    )
    return _svg(fig, title=title, desc=desc)


def grouped_bars(
    *,
    title: str,
    categories: list[str],
    series: dict[str, list[float]],
    xlabel: str,
    ylabel: str,
    footnote: str = "",
) -> str:
    """Vertical bars grouped by category, one bar per series in each group."""
    if not categories or not series:
        return _no_data(title)
    fig, desc = _grouped_bars_figure(
        title=title,
        categories=categories,
        series=series,
        xlabel=xlabel,
        ylabel=ylabel,
        footnote=footnote,
    )
    return _svg(fig, title=title, desc=desc)


def _grouped_bars_figure(*, title, categories, series, xlabel, ylabel, footnote=""):
    for name, values in series.items():
        if len(values) != len(categories):
            raise ValueError(
                f"Series {name!r} has {len(values)} values for {len(categories)} categories."
            )
    # A long legend is given room from the start (constrained layout would take it from the
    # plot, down to nothing); _keep_plot_height tops it up once the labels are laid out.
    fig, ax = _figure(
        height_in=4.6 + 0.18 * _legend_lines(list(series)), title=title, nrows=1, ncols=1
    )
    group = 0.8  # the share of each category's slot that its bars fill
    width = group / len(series)
    pairs = []
    for s, (name, values) in enumerate(series.items()):
        positions = [c - group / 2 + width * (s + 0.5) for c in range(len(categories))]
        bars = ax.bar(
            positions, values, width, edgecolor=EDGE, linewidth=0.6, label=name, **_series_style(s)
        )
        for bar, value in zip(bars, values, strict=True):
            up = value >= 0  # the value sits beyond the bar's end, whichever way it points
            text = ax.annotate(
                f"{value:.0f}",
                (bar.get_x() + bar.get_width() / 2, value),
                xytext=(0, 2 if up else -2),
                textcoords="offset points",
                ha="center",
                va="bottom" if up else "top",
                fontsize=SMALL_PT,
            )
            pairs.append((text, bar))
    ax.set_xticks(range(len(categories)))
    ax.margins(y=0.12)  # room above the tallest bar for its value
    if min(min(values) for values in series.values()) >= 0:
        ax.set_ylim(bottom=0)  # bars stand on the axis, not above a margin
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    _legend_below(fig, ax, list(series), note=footnote)
    _fit_tick_labels(fig, ax, categories)
    _hide_labels_that_do_not_fit(fig, pairs, horizontal=False)
    desc = (
        f"Grouped vertical bars. Groups (x axis, {xlabel}): {'; '.join(categories)}. "
        f"Bars in each group: {'; '.join(series)}. Y axis: {ylabel}."
    )
    return fig, desc


def step_lines(
    *,
    title: str,
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    xlabel: str,
    ylabel: str,
) -> str:
    """Step lines, one per series of (x, y) points: cumulative distributions."""
    if not series or all(len(xs) == 0 for xs, _ in series.values()):
        return _no_data(title)
    for name, (xs, ys) in series.items():
        if len(xs) != len(ys):
            raise ValueError(f"Series {name!r} has {len(xs)} x values and {len(ys)} y values.")
    fig, ax = _figure(height_in=4.6, title=title, nrows=1, ncols=1)
    for s, (name, (xs, ys)) in enumerate(series.items()):
        ax.step(list(xs), list(ys), where="post", linewidth=2, label=name, **_line_style(s))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    _legend_below(fig, ax, list(series))
    desc = f"Step lines, one per series: {'; '.join(series)}. X axis: {xlabel}. Y axis: {ylabel}."
    return _svg(fig, title=title, desc=desc)


def histograms(
    *,
    title: str,
    series: dict[str, Sequence[float]],
    bins: int | Sequence[float],
    xlabel: str,
    ylabel: str,
    footnote: str = "",
) -> str:
    """One histogram per series as small multiples on shared axes and the same bins."""
    present = {name: list(values) for name, values in series.items()}
    if not present or not any(present.values()):
        return _no_data(title)
    fig, desc = _histograms_figure(
        title=title, series=present, bins=bins, xlabel=xlabel, ylabel=ylabel, footnote=footnote
    )
    return _svg(fig, title=title, desc=desc)


# Characters a line of a panel's title, tried in turn until no two titles touch.
PANEL_TITLE_CHARS = (80, 40, 32, 24, 16)


def _histograms_figure(*, title, series, bins, xlabel, ylabel, footnote=""):
    import numpy as np

    _matplotlib()
    from matplotlib.ticker import MaxNLocator

    present = series
    everything = [v for values in present.values() for v in values]
    # One set of bin edges for every panel, so that panels compare bar for bar.
    edges = np.histogram_bin_edges(everything, bins=bins)
    columns = 1 if len(present) <= 3 else 2
    panel_rows = math.ceil(len(present) / columns)
    fig, axes = _figure(
        height_in=1.3 + 1.7 * panel_rows,
        title=title,
        nrows=panel_rows,
        ncols=columns,
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    panels = axes.flatten()
    titles = []
    for s, (name, values) in enumerate(present.items()):
        ax = panels[s]
        ax.hist(values, bins=edges, edgecolor=EDGE, linewidth=0.6, **_series_style(s))
        titles.append(ax.set_title(name, loc="left", fontsize=SMALL_PT))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no half answers
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        if not values:
            ax.text(
                0.5, 0.5, NO_DATA, transform=ax.transAxes, ha="center", va="center", color="#555555"
            )
    for s in range(len(present), len(panels)):
        panels[s].set_visible(False)
        # Shared axes show x tick labels on the bottom row only; the panel above an empty
        # slot is the bottom of its column.
        panels[s - columns].tick_params(labelbottom=True)
    fig.supxlabel(xlabel + (f"\n{_wrap(footnote, 90)}" if footnote else ""), fontsize=TEXT_PT)
    fig.supylabel(ylabel, fontsize=TEXT_PT)
    _fit_panel_titles(fig, titles, list(present))
    desc = (
        f"Histograms on the same bins, one panel per series: {'; '.join(present)}. "
        f"X axis: {xlabel}. Y axis: {ylabel}."
    )
    return fig, desc


def _fit_panel_titles(fig, titles, names: list[str]) -> None:
    """Panels' titles wrapped the widest of PANEL_TITLE_CHARS at which none runs into the
    title of the panel beside it, as the renderer measures them."""
    for width in PANEL_TITLE_CHARS:
        for text, name in zip(titles, names, strict=True):
            text.set_text(_wrap(name, width))
        fig.draw_without_rendering()
        if not _overlapping([t.get_window_extent() for t in titles]):
            return


def _panels(*, title: str, count: int, panel_height_in: float, **shared):
    """Small multiples: `count` panels in two columns (one when there are few), the slots
    left over hidden. Returns the figure and the panels, in reading order."""
    columns = 1 if count <= 2 else 2
    panel_rows = math.ceil(count / columns)
    fig, axes = _figure(
        height_in=1.4 + panel_height_in * panel_rows,
        title=title,
        nrows=panel_rows,
        ncols=columns,
        squeeze=False,
        **shared,
    )
    panels = list(axes.flatten())
    for ax in panels[count:]:
        ax.set_visible(False)
    return fig, panels[:count]


def _panel_xlabels(axes, xlabel: str) -> None:
    """The x label under the lowest panel of each column (a figure-wide label would sit
    where the legend goes)."""
    columns = 1 if len(axes) <= 2 else 2
    for column in range(columns):
        lowest = axes[column::columns][-1]
        lowest.set_xlabel(_wrap(xlabel, 90 // columns), fontsize=SMALL_PT)


def _shared_legend(fig, axes, names: list[str]) -> None:
    """One legend below every panel, for the series of all of them (a panel may lack one)."""
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    longest = min(LEGEND_CHARS, max(len(name) for name in names))
    per_label = longest * SMALL_PT * 0.6 + 3 * SMALL_PT
    columns = max(1, min(len(names), int(WIDTH_IN * 72 * 0.95 // per_label)))
    fig.legend(
        [handles[n] for n in names],
        [_wrap(n, LEGEND_CHARS) for n in names],
        loc="outside lower center",
        ncols=columns,
        frameon=False,
    )


def _panel_title(text: str, width: int) -> str:
    lines = textwrap.wrap(text, width, break_long_words=False) or [text]
    return "\n".join(lines[:2]) + ("\u2026" if len(lines) > 2 else "")


def grouped_bar_panels(
    *,
    title: str,
    panels: dict[str, tuple[list[str], dict[str, list[float]]]],
    xlabel: str,
    ylabel: str,
) -> str:
    """Small multiples of `grouped_bars`: per panel title, its categories and its series (the
    same series in every panel, in the same colours, one legend for all)."""
    present = {name: panel for name, panel in panels.items() if panel[0] and panel[1]}
    if not present:
        return _no_data(title)
    for name, (categories, series) in present.items():
        for label, values in series.items():
            if len(values) != len(categories):
                raise ValueError(
                    f"Panel {name!r}, series {label!r}: {len(values)} values for "
                    f"{len(categories)} categories."
                )
    fig, axes = _panels(title=title, count=len(present), panel_height_in=2.3, sharey=True)
    names = list(dict.fromkeys(label for _c, series in present.values() for label in series))
    width_chars = 90 if len(present) <= 2 else 42
    for ax, (name, (categories, series)) in zip(axes, present.items(), strict=True):
        group = 0.8
        width = group / len(names)
        for s, label in enumerate(names):
            values = series.get(label)
            if values is None:
                continue
            positions = [c - group / 2 + width * (s + 0.5) for c in range(len(categories))]
            ax.bar(
                positions,
                values,
                width,
                edgecolor=EDGE,
                linewidth=0.6,
                label=label,
                **_series_style(s),
            )
        ax.set_xticks(range(len(categories)), categories)
        ax.set_ylim(bottom=0)
        ax.set_title(_panel_title(name, width_chars), loc="left", fontsize=SMALL_PT)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
    _panel_xlabels(axes, xlabel)
    fig.supylabel(ylabel, fontsize=TEXT_PT)
    _shared_legend(fig, axes, names)
    desc = (
        f"Grouped vertical bars in {len(present)} panels: {'; '.join(present)}. Bars in each "
        f"group: {'; '.join(names)}. X axis: {xlabel}. Y axis: {ylabel}."
    )
    return _svg(fig, title=title, desc=desc)


def step_line_panels(
    *,
    title: str,
    panels: dict[str, dict[str, tuple[Sequence[float], Sequence[float]]]],
    xlabel: str,
    ylabel: str,
) -> str:
    """Small multiples of `step_lines` on shared axes: per panel title, its series of (x, y)
    points (the same series in every panel, in the same styles, one legend for all)."""
    present = {
        name: series
        for name, series in panels.items()
        if series and any(len(xs) for xs, _ys in series.values())
    }
    if not present:
        return _no_data(title)
    for name, series in present.items():
        for label, (xs, ys) in series.items():
            if len(xs) != len(ys):
                raise ValueError(
                    f"Panel {name!r}, series {label!r}: {len(xs)} x values and {len(ys)} y values."
                )
    fig, axes = _panels(
        title=title, count=len(present), panel_height_in=2.3, sharex=True, sharey=True
    )
    names = list(dict.fromkeys(label for series in present.values() for label in series))
    width_chars = 90 if len(present) <= 2 else 42
    for ax, (name, series) in zip(axes, present.items(), strict=True):
        for s, label in enumerate(names):
            if label in series:
                xs, ys = series[label]
                ax.step(
                    list(xs), list(ys), where="post", linewidth=2, label=label, **_line_style(s)
                )
        ax.set_title(_panel_title(name, width_chars), loc="left", fontsize=SMALL_PT)
        ax.grid(color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.tick_params(labelbottom=True)
    _panel_xlabels(axes, xlabel)
    fig.supylabel(ylabel, fontsize=TEXT_PT)
    _shared_legend(fig, axes, names)
    desc = (
        f"Step lines in {len(present)} panels: {'; '.join(present)}. Lines in each panel: "
        f"{'; '.join(names)}. X axis: {xlabel}. Y axis: {ylabel}."
    )
    return _svg(fig, title=title, desc=desc)


def dot_whiskers(
    *,
    title: str,
    labels: list[str],
    series: dict[str, list[tuple[float | None, float | None, float | None]]],
    xlabel: str,
    reference: float | None = 0.0,
    footnote: str = "",
) -> str:
    """One row per label, a dot per series at its estimate with a whisker from low to high
    (left out where there is no interval; the row left empty where there is no estimate).
    A vertical line marks `reference` (None: no line)."""
    present = {
        name: values
        for name, values in series.items()
        if any(estimate is not None for estimate, _, _ in values)
    }
    if not labels or not present:
        return _no_data(title)
    for name, values in present.items():
        if len(values) != len(labels):
            raise ValueError(f"Series {name!r} has {len(values)} values for {len(labels)} rows.")
    fig, ax = _figure(
        height_in=1.9 + 0.45 * len(labels) + 0.18 * _legend_lines(list(present)),
        title=title,
        nrows=1,
        ncols=1,
    )
    markers = ("o", "s", "D", "^", "v", "P", "X", "*")
    band = 0.6  # the share of each row's height that its series' dots spread over
    step = band / len(present)
    for s, (name, values) in enumerate(present.items()):
        color = PALETTE[s % len(PALETTE)]
        offset = -band / 2 + step * (s + 0.5) if len(present) > 1 else 0.0
        ys, xs, lows, highs = [], [], [], []
        for row, (estimate, low, high) in enumerate(values):
            if estimate is None:
                continue
            ys.append(row + offset)
            xs.append(estimate)
            lows.append(estimate - low if low is not None else 0.0)
            highs.append(high - estimate if high is not None else 0.0)
        ax.errorbar(
            xs,
            ys,
            xerr=[lows, highs],
            fmt=markers[s % len(markers)],
            color=color,
            ecolor=color,
            elinewidth=1.4,
            capsize=3,
            markersize=6,
            label=name,
        )
    if reference is not None:
        ax.axvline(reference, color="#888888", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(labels)), [_wrap(label, 28) for label in labels])
    ax.set_ylim(len(labels) - 0.5, -0.5)  # the first row on top, as it reads
    ax.set_xlabel(xlabel)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    _legend_below(fig, ax, list(present), note=footnote)
    _keep_plot_height(fig, ax)
    desc = (
        f"Dots with whiskers (95% intervals), one row per: {'; '.join(labels)}. "
        f"Series: {'; '.join(present)}. X axis: {xlabel}."
    )
    return _svg(fig, title=title, desc=desc)


def scatter(
    *,
    title: str,
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    xlabel: str,
    ylabel: str,
    footnote: str = "",
) -> str:
    """Points, one colour and marker per series of (xs, ys); nan points left out."""
    points = {
        name: [(x, y) for x, y in zip(xs, ys, strict=True) if not (math.isnan(x) or math.isnan(y))]
        for name, (xs, ys) in series.items()
    }
    points = {name: found for name, found in points.items() if found}
    if not points:
        return _no_data(title)
    fig, ax = _figure(
        height_in=4.6 + 0.18 * _legend_lines(list(points)), title=title, nrows=1, ncols=1
    )
    markers = ("o", "s", "D", "^", "v", "P", "X", "*")
    for s, (name, found) in enumerate(points.items()):
        ax.scatter(
            [x for x, _ in found],
            [y for _, y in found],
            color=PALETTE[s % len(PALETTE)],
            marker=markers[s % len(markers)],
            s=28,
            alpha=0.85,
            edgecolors=EDGE,
            linewidths=0.4,
            label=name,
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    _legend_below(fig, ax, list(points), note=footnote)
    _keep_plot_height(fig, ax)
    desc = (
        f"Scatter plot, one series of points per: {'; '.join(points)}. "
        f"X axis: {xlabel}. Y axis: {ylabel}."
    )
    return _svg(fig, title=title, desc=desc)
