"""The survey report of a user-perception study: people (after exclusions) and each proxy
model apart, as the published PrivacyLens user study reported them.

- Krippendorff's alpha (stats/agreement.py, equal to the `krippendorff` package):
  ordinal for the labelled scales, nominal for yes/no. Between people; within each proxy
  across its runs; across proxies. Units are (scenario, item) pairs: per item, and pooled over
  the scale items as one reliability matrix (the paper's pooled figure).
- Across proxies, every run of every proxy is a coder, as the paper computed it ("across the 5
  LLMs (between 25 evaluations)"). Beside it, as Assay's addition, each proxy as one coder
  whose rating of a unit is the median of its runs (the lower median when the runs are even;
  for yes/no, the majority with ties to "no").
- Spearman's rho (scipy.stats.spearmanr) between a proxy's per-scenario mean (over its runs)
  and the people's per-scenario mean: per item, and per group of scale items (the items'
  `group`, as the paper grouped them: helpfulness H2, H3; privacy P1-P4 by default) over the
  group's (scenario, item) pairs.
- Ranges of ratings per (scenario, item) (Figure 4), the cumulative distribution of their
  standard deviation with answers mapped to -1..1 (Figure 5), the answers' distribution per
  item (Figures 2 and 3) and the people's demographics (Table 3).
- Bootstrap 95% intervals of every alpha and rho resample scenarios (every unit of a drawn
  scenario comes along), 1,000 resamples from a fixed seed, all statistics on the same
  resamples (`survey_intervals`, run by a background task: workers/analysis.py).
"""

import dataclasses
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from apps.surveys.models import AgeBand, Education, Gender, Income
from stats import agreement, bootstrap, correlation, descriptive
from stats.points import MIN_POINTS, too_few

from .figures import Figure
from .method import METHOD_TABLE, NOT_REPORTED, Fidelity, Method, method_table, report_entries
from .models import RESAMPLES, SEED
from .survey_data import PEOPLE, Group, Item, SurveyData
from .tables import Column, Table, TooFew

RANGE_AXIS = "Range of a scenario's ratings: highest minus lowest (0: all agree)"
SD_AXIS = "Standard deviation (answers on -1..1)"
# The paper does not say which SD its Figure 5 plots; the population SD is Assay's choice.
SD_DDOF = 0
SD_DECIMALS = 12
RANGE_LABELS = ["All agree", "1 point apart", "2 points apart", "3 points apart", "4 points apart"]
ACROSS_PROXIES = "Across proxies"
ACROSS_PROXY_MEDIANS = "Across proxies, each the median of its runs (Assay's addition)"


# --- the statistics ---------------------------------------------------------------------------


@dataclass
class AlphaSpec:
    key: str
    who: str
    items: str
    level: str
    matrix: np.ndarray  # raters x units, units scenario-major
    clusters: np.ndarray  # the scenario of each unit
    domain: list[float] | None

    @property
    def units(self) -> int:
        return int(((~np.isnan(self.matrix)).sum(axis=0) >= 2).sum())

    @property
    def raters(self) -> int:
        return int((~np.isnan(self.matrix)).any(axis=1).sum())

    @property
    def ratings(self) -> int:
        return int((~np.isnan(self.matrix)).sum())

    def estimate(self) -> float:
        try:
            return agreement.alpha(self.matrix, level=self.level, value_domain=self.domain)
        except ValueError:  # no unit rated twice
            return np.nan

    def resamples(self, draws: np.ndarray) -> np.ndarray:
        return agreement.alpha_resamples(
            self.matrix,
            level=self.level,
            clusters=self.clusters,
            draws=draws,
            value_domain=self.domain,
        )


@dataclass
class RhoSpec:
    key: str
    proxy: Group
    items: str
    x: np.ndarray  # the proxy's means, scenario-major, `per_scenario` pairs for each scenario
    y: np.ndarray  # the people's
    per_scenario: int

    def estimate(self) -> tuple[float, float, int]:
        return correlation.spearman(self.x, self.y)

    @property
    def scenarios(self) -> int:
        both = ~(np.isnan(self.x) | np.isnan(self.y))
        return int(both.reshape(-1, self.per_scenario).any(axis=1).sum())

    def resamples(self, draws: np.ndarray) -> np.ndarray:
        k = self.per_scenario
        pairs = (draws[:, :, None] * k + np.arange(k)).reshape(draws.shape[0], -1)
        return correlation.spearman_resamples(self.x, self.y, draws=pairs)


def _matrix(
    frame: pd.DataFrame, items: list[Item], scenarios: int, rater: str, column: str = "value"
) -> np.ndarray:
    """raters x (scenario, item) units, scenario-major: unit s * len(items) + k."""
    # Each row's item as its position in `items` (-1: another item), by one hash lookup of
    # the column rather than a map, and the three columns read as arrays, not the frame
    # copied: a report builds some hundreds of these matrices.
    found = pd.Index([item.code for item in items]).get_indexer(frame["item"])
    keep = found >= 0
    codes, _labels = pd.factorize(frame[rater].to_numpy()[keep])
    matrix = np.full((max(len(_labels), 1), scenarios * len(items)), np.nan)
    units = frame["scenario"].to_numpy(dtype=int)[keep] * len(items) + found[keep]
    matrix[codes, units] = frame[column].to_numpy(dtype=float)[keep]
    return matrix


def _alpha(key, who, items: list[Item], frame, scenarios: int, rater: str) -> AlphaSpec:
    level = items[0].level
    domain = None
    if level == "ordinal":
        domain = [float(v) for v in range(1, max(item.points for item in items) + 1)]
    else:
        domain = [0.0, 1.0]
    return AlphaSpec(
        key=key,
        who=who,
        items=pooled_label(items) if len(items) > 1 else items[0].code,
        level=level,
        matrix=_matrix(frame, items, scenarios, rater),
        clusters=np.repeat(np.arange(scenarios), len(items)),
        domain=domain,
    )


def pooled_label(items: list[Item]) -> str:
    return "Pooled: " + ", ".join(item.code for item in items)


def _item_sets(items: list[Item]) -> list[tuple[str, list[Item]]]:
    """Each item alone, then the scale items pooled (when there are two or more)."""
    sets = [(item.code, [item]) for item in items]
    scales = [item for item in items if item.ordinal]
    if len(scales) > 1:
        sets.append(("pooled", scales))
    return sets


GROUP_ORDER = ("helpfulness", "privacy")


def _group_order(name: str) -> tuple[int, str]:
    return (GROUP_ORDER.index(name) if name in GROUP_ORDER else len(GROUP_ORDER), name)


def item_groups(items: list[Item]) -> dict[str, list[str]]:
    """Each group's scale items by code, as the rho per group takes them."""
    groups: dict[str, list[str]] = {}
    for item in items:
        if item.group:
            groups.setdefault(item.group, []).append(item.code)
    return {name: groups[name] for name in sorted(groups, key=_group_order)}


def proxy_consensus(frame: pd.DataFrame) -> pd.DataFrame:
    """One rating per (proxy, scenario, item): the lower median of the proxy's runs."""
    lower = descriptive.lower_median(frame, by=["group", "scenario", "item"], value="value")
    return lower.assign(rater=lower["group"])


def _scenario_means(frame: pd.DataFrame, items: list[Item], scenarios: int) -> np.ndarray:
    """scenarios x items: the mean answer (yes = 1, no = 0), nan where nobody answered."""
    position = {item.code: k for k, item in enumerate(items)}
    means = frame.groupby(["scenario", "item"])["value"].mean()
    out = np.full((scenarios, len(items)), np.nan)
    for (s, code), mean in means.items():
        if code in position:
            out[s, position[code]] = mean
    return out


def survey_statistics(data: SurveyData) -> list[AlphaSpec | RhoSpec]:
    """Every alpha and rho of the report, in the order the report shows them."""
    answers, items, scenarios = data.answers, data.items, len(data.scenarios)
    specs: list[AlphaSpec | RhoSpec] = []
    if not items:
        return specs
    people = data.answers_of(PEOPLE)
    for label, chosen in _item_sets(items):
        specs.append(
            _alpha(f"alpha:people:{label}", "Between people", chosen, people, scenarios, "rater")
        )
    for proxy in data.proxies:
        rows = data.answers_of(proxy.key)
        for label, chosen in _item_sets(items):
            specs.append(
                _alpha(
                    f"alpha:{proxy.key}:{label}",
                    f"Within {proxy.label}, across its runs",
                    chosen,
                    rows,
                    scenarios,
                    "rater",
                )
            )
    if len(data.proxies) > 1:
        # The published row: every run of every proxy is a coder (5 proxies x 5 runs: "between
        # 25 evaluations"). The median of each proxy's runs is Assay's addition beside it.
        runs = answers[answers["group"] != PEOPLE]
        for label, chosen in _item_sets(items):
            specs.append(
                _alpha(f"alpha:proxies:{label}", ACROSS_PROXIES, chosen, runs, scenarios, "rater")
            )
        consensus = proxy_consensus(runs)
        for label, chosen in _item_sets(items):
            specs.append(
                _alpha(
                    f"alpha:proxies-median:{label}",
                    ACROSS_PROXY_MEDIANS,
                    chosen,
                    consensus,
                    scenarios,
                    "rater",
                )
            )
    people_means = _scenario_means(people, items, scenarios)
    groups: dict[str, list[int]] = {}
    for k, item in enumerate(items):
        if item.group:
            groups.setdefault(item.group, []).append(k)
    # helpfulness before privacy, as published, whatever order the items come in
    groups = {name: groups[name] for name in sorted(groups, key=_group_order)}
    for proxy in data.proxies:
        means = _scenario_means(data.answers_of(proxy.key), items, scenarios)
        for k, item in enumerate(items):
            specs.append(
                RhoSpec(
                    f"rho:{proxy.key}:{item.code}",
                    proxy,
                    item.code,
                    means[:, k],
                    people_means[:, k],
                    1,
                )
            )
        for name, columns in groups.items():
            specs.append(
                RhoSpec(
                    f"rho:{proxy.key}:{name}",
                    proxy,
                    f"{name} ({', '.join(items[k].code for k in columns)})",
                    means[:, columns].ravel(),
                    people_means[:, columns].ravel(),
                    len(columns),
                )
            )
    return specs


def survey_intervals(
    data: SurveyData,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, list]:
    """key -> [low, high, resamples used, resamples undefined] for every alpha and rho, from
    one set of scenario resamples. `progress(done, total)` is told as statistics finish."""
    specs = survey_statistics(data)
    if not data.scenarios or not specs:
        return {}
    draws = bootstrap.resample_draws(len(data.scenarios), resamples=resamples, seed=seed)
    out = {}
    for done, spec in enumerate(specs, start=1):
        if isinstance(spec, AlphaSpec) and spec.units == 0:
            # No unit rated twice (a proxy that answers none of the item, say): no alpha, in
            # any resample.
            out[spec.key] = [np.nan, np.nan, 0, resamples]
            if progress is not None:
                progress(done, len(specs))
            continue
        estimate = spec.estimate()
        interval = bootstrap.percentile_interval(
            estimate if isinstance(spec, AlphaSpec) else estimate[0], spec.resamples(draws)
        )
        out[spec.key] = [
            interval.low,
            interval.high,
            interval.resamples_used,
            interval.resamples_undefined,
        ]
        if progress is not None:
            progress(done, len(specs))
    return out


# --- the report ---------------------------------------------------------------------------------


@dataclass
class SurveyReport:
    data_n: str
    methods: dict[str, Method] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    distributions: list[str] = field(default_factory=list)  # figure names, one per item
    spread: list[str] = field(default_factory=list)  # Figures 4 and 5, each item apart
    spread_extras: list[str] = field(default_factory=list)  # the same, pooled (our addition)
    people: int = 0
    proxies: int = 0
    answers: int = 0
    scenarios: int = 0
    simulated: bool = False
    offline: bool = False
    excluded: dict[str, int] = field(default_factory=dict)
    intervals_missing: int = 0
    fidelity_notes: list[str] = field(default_factory=list)  # where the proxies depart


def _who(data: SurveyData, group: Group) -> str:
    if group.key == PEOPLE:
        return "People (simulated)" if group.simulated else "People"
    return group.label + (" (offline demo model)" if group.offline else "")


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


WHO = {"people": ("person", "people"), "raters": ("rater", "raters")}


def _n(scenarios: int, raters: int, answers: int, who: str = "people") -> str:
    return ", ".join(
        (
            _count(scenarios, "scenario", "scenarios"),
            _count(raters, *WHO[who]),
            _count(answers, "answer", "answers"),
        )
    )


def _units_rated(data: SurveyData) -> int:
    return len(data.scenarios) if data.units_rated is None else data.units_rated


def _everyone_n(data: SurveyData) -> str:
    """What the whole report rests on, people and proxies apart."""
    people = data.answers_of(PEOPLE)
    text = _n(_units_rated(data), people["rater"].nunique(), len(people))
    proxies = data.answers[data.answers["group"] != PEOPLE]
    if data.proxies:
        models = len(data.proxies)
        text += (
            f"; {_count(models, 'proxy model', 'proxy models')} in "
            f"{_count(proxies['rater'].nunique(), 'run', 'runs')}, "
            f"{_count(len(proxies), 'answer', 'answers')}"
        )
    return text


def _ci(intervals: dict, key: str) -> tuple:
    found = intervals.get(key)
    return (found[0], found[1]) if found else (None, None)


def alpha_shown(spec: AlphaSpec) -> tuple[object, str]:
    """An alpha as the report shows it, and, where it shows none, why: computed from the
    ratings, in the order the reasons are checked."""
    if spec.raters < 2:
        return None, f"No alpha: fewer than two raters ({spec.raters:,})."
    if spec.units == 0:
        return None, "No alpha: no (scenario, item) was rated by two raters or more."
    if too_few(spec.units):
        return TooFew(spec.units), (
            f"Too few points: {_count(spec.units, 'unit', 'units')} rated twice or more "
            f"(at least {MIN_POINTS} needed)."
        )
    value = spec.estimate()
    if np.isnan(value):
        return None, (
            "No alpha: no variation, every rating of the units rated twice is the same, so no "
            "disagreement is expected and alpha is undefined."
        )
    return value, ""


def _alpha_table(data, specs, intervals) -> Table:
    rows = []
    for spec in specs:
        if not isinstance(spec, AlphaSpec):
            continue
        value, note = alpha_shown(spec)
        low, high = _ci(intervals, spec.key) if value is not None else (None, None)
        if isinstance(value, TooFew):
            low = high = None
        rows.append(
            {
                "who": spec.who,
                "items": spec.items,
                "level": spec.level,
                "alpha": value,
                "low": low,
                "high": high,
                "units": spec.units,
                "raters": spec.raters,
                "ratings": spec.ratings,
                "note": note,
            }
        )
    return Table(
        name="alpha",
        title="Krippendorff's alpha",
        columns=[
            Column("who", "Agreement"),
            Column("items", "Items"),
            Column("level", "Level"),
            Column("alpha", "Alpha", "float"),
            Column("low", "95% CI low", "float"),
            Column("high", "95% CI high", "float"),
            Column("units", "Units", "int"),
            Column("raters", "Raters", "int"),
            Column("ratings", "Ratings", "int"),
            Column("note", "Why no alpha"),
        ],
        rows=rows,
        notes=[
            "Units are (scenario, item) pairs; a unit counts when two or more raters rated it. "
            f"An alpha over fewer than {MIN_POINTS} units is not shown: too few points. "
            "Ordinal for the labelled scales, nominal for yes/no; 'pooled' holds every scale "
            "item in one reliability matrix.",
            "Within a proxy, each of its runs is a rater. Across proxies, every run of every "
            "proxy is a rater, as the published study computed it (across its 5 models, "
            "between 25 evaluations: 5 runs of each).",
            "Assay's addition, not in the published study: alpha across proxies with each proxy "
            "one rater whose rating of a unit is the median of its runs (the lower median when "
            "they are even; for yes/no the majority, ties to no).",
            "95% intervals: percentile bootstrap over scenarios (1,000 resamples, seed 0); the "
            "published study gave none.",
        ],
        n=_n(_units_rated(data), data.answers["rater"].nunique(), len(data.answers), "raters"),
    )


def _alpha_methods(data: SurveyData, specs) -> dict[str, Method]:
    alphas = [s for s in specs if isinstance(s, AlphaSpec)]
    levels = {item.code: item.level for item in data.items}
    common = {"unit": "(scenario, item)", "levels": levels, "pooled": "the scale items"}
    described = (
        "Units are (scenario, item) pairs; ordinal for the labelled scales, nominal for yes/no "
        "(the krippendorff package's computation); per item and the scale items pooled."
    )

    def coders(who: str) -> int:
        return max((s.raters for s in alphas if s.who == who), default=0)

    methods = {
        "alpha-people": Method(
            "Krippendorff's alpha between people",
            "Krippendorff's alpha among the participants who rated the same scenario, per "
            "item: ordinal for the scales, nominal for yes/no.",
            f"{described} Coders: people, after exclusions.",
            Fidelity.PAPER,
            common | {"coders": "people"},
        ),
        "alpha-within-proxy": Method(
            "Krippendorff's alpha within each proxy",
            "Within each proxy LLM, between its runs of the same survey.",
            f"{described} Coders: each run of the proxy.",
            Fidelity.PAPER,
            common | {"coders": "each run of the proxy"},
        ),
    }
    if len(data.proxies) > 1:
        n = coders(ACROSS_PROXIES)
        methods["alpha-across-proxies"] = Method(
            "Krippendorff's alpha across proxies",
            "Across the 5 LLMs, between 25 evaluations: every run of every proxy a coder.",
            f"{described} Coders: every run of every proxy ({n:,} coders).",
            Fidelity.PAPER,
            common | {"coders": "every run of every proxy", "n_coders": n},
        )
        methods["alpha-across-proxy-medians"] = Method(
            "Krippendorff's alpha across proxies, each the median of its runs",
            NOT_REPORTED,
            "Each proxy one coder, whose rating of a unit is the lower median of its runs "
            f"(for yes/no the majority, ties to no): {coders(ACROSS_PROXY_MEDIANS):,} coders.",
            Fidelity.OURS,
            common
            | {
                "coders": "each proxy, the lower median of its runs",
                "n_coders": coders(ACROSS_PROXY_MEDIANS),
            },
        )
    methods["intervals"] = Method(
        "95% intervals of every alpha and rho",
        "No intervals.",
        f"Percentile bootstrap over scenarios (every unit of a drawn scenario comes along), "
        f"{RESAMPLES:,} resamples from seed {SEED}, every statistic on the same resamples.",
        Fidelity.OURS,
        {"bootstrap": "percentile", "resampled": "scenarios", "resamples": RESAMPLES, "seed": SEED},
    )
    return methods


def _groups_note(data: SurveyData) -> str:
    groups = item_groups(data.items)
    if not groups:
        return (
            "No item is in a group (helpfulness, privacy): set each item's group in the "
            "console to see a rho per group."
        )
    held = "; ".join(f"{name}: {', '.join(codes)}" for name, codes in groups.items())
    return (
        f"The groups, as the published study grouped its items, hold their scale items: {held} "
        "(yes/no items are in none)."
    )


def _rho_table(data, specs, intervals) -> Table:
    rows = []
    for spec in specs:
        if not isinstance(spec, RhoSpec):
            continue
        rho, p, pairs = spec.estimate()
        low, high = _ci(intervals, spec.key)
        note = ""
        if too_few(pairs):
            rho, p, low, high = TooFew(pairs), None, None, None
            note = (
                f"Too few points: {_count(pairs, 'pair', 'pairs')} of means "
                f"(at least {MIN_POINTS} needed)."
            )
        elif np.isnan(rho):
            note = "No rho: one side's means do not vary."
        rows.append(
            {
                "proxy": _who(data, spec.proxy),
                "items": spec.items,
                "rho": rho,
                "p": p,
                "low": low,
                "high": high,
                "scenarios": spec.scenarios,
                "pairs": pairs,
                "note": note,
            }
        )
    people = data.answers_of(PEOPLE)
    return Table(
        name="rho",
        title="Spearman's rho: each proxy against people, per-scenario means",
        columns=[
            Column("proxy", "Proxy"),
            Column("items", "Items"),
            Column("rho", "Rho", "float"),
            Column("p", "p", "float", 4),
            Column("low", "95% CI low", "float"),
            Column("high", "95% CI high", "float"),
            Column("scenarios", "Scenarios", "int"),
            Column("pairs", "Pairs", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            f"A rho over fewer than {MIN_POINTS} pairs is not shown: too few points. "
            "A scenario's mean is over its people (after exclusions) and over the proxy's runs; "
            "yes counts 1 and no 0. A group's rho is over its (scenario, item) pairs.",
            _groups_note(data),
            "Two-sided p from scipy.stats.spearmanr; no correction for the many tests shown.",
        ],
        n=_n(_units_rated(data), people["rater"].nunique(), len(people)),
    )


def _distribution(data: SurveyData, item: Item) -> Table:
    rows = []
    offset = 1 if item.ordinal else 0
    for group in data.groups:
        frame = data.answers_of(group.key)
        values = frame.loc[frame["item"] == item.code, "value"].to_numpy()
        row = {"who": f"{_who(data, group)} (n={len(values):,})", "answers": len(values)}
        counts = np.bincount((values - offset).astype(int), minlength=item.points)
        for point in range(item.points):
            row[f"p{point}"] = 100 * counts[point] / len(values) if len(values) else np.nan
        rows.append(row)
    return Table(
        name=f"distribution-{item.code}",
        title=f"{item.code}: {item.wording}",
        columns=[
            Column("who", "Who"),
            *[Column(f"p{p}", label, "percent", 1) for p, label in enumerate(item.labels)],
            Column("answers", "Answers", "int"),
        ],
        rows=rows,
        n=_n(
            _units_rated(data),
            data.answers["rater"].nunique(),
            int(sum(r["answers"] for r in rows)),
            "raters",
        ),
    )


def _range_label(span: int) -> str:
    return RANGE_LABELS[span] if span < len(RANGE_LABELS) else f"{span} points apart"


def _range_row(matrix: np.ndarray, width: int, points: int) -> dict:
    """Percent of the units (rated twice or more) at each range; nan past the item's scale."""
    counts = agreement.rating_ranges(matrix)
    total = sum(counts.values())
    row: dict = {"units": total}
    for span in range(width):
        share = 100 * counts.get(span, 0) / total if total else np.nan
        row[f"r{span}"] = share if span < points else np.nan
    return row


def _ranges(data: SurveyData) -> Table:
    """Figure 4 as published: per item, the share of its (scenario, item) units at each range."""
    width = max((item.points for item in data.items), default=5)
    rows = []
    for item in data.items:
        for group in data.groups:
            matrix = _matrix(data.answers_of(group.key), [item], len(data.scenarios), "rater")
            rows.append(
                {"item": item.code, "who": _who(data, group)}
                | _range_row(matrix, width, item.points)
            )
    return Table(
        name="ranges",
        title="Range of ratings per scenario, for each item (Figure 4)",
        columns=[
            Column("item", "Item"),
            Column("who", "Who"),
            *[Column(f"r{s}", _range_label(s), "percent", 1) for s in range(width)],
            Column("units", "Units", "int"),
        ],
        rows=rows,
        notes=[
            "Each item apart, as the published Figure 4: for each scenario, the highest rating "
            "of the item minus the lowest, among people, or among a proxy's runs; percent of "
            "the item's scenarios rated twice or more. 'All agree' is every rater giving the "
            "same answer.",
            "For a yes/no item the range is 0 (all agree) or 1 (both answers given).",
        ],
        n=_n(_units_rated(data), data.answers["rater"].nunique(), len(data.answers), "raters"),
    )


def _ranges_pooled(data: SurveyData) -> Table:
    scales = [item for item in data.items if item.ordinal]
    width = max((item.points for item in scales), default=5)
    rows = []
    for group in data.groups:
        matrix = _matrix(data.answers_of(group.key), scales, len(data.scenarios), "rater")
        row = _range_row(matrix, width, width) if scales else {"units": 0}
        rows.append({"who": _who(data, group), **{f"r{s}": np.nan for s in range(width)}, **row})
    return Table(
        name="ranges-pooled",
        title="Range of ratings per scenario and item, the scale items pooled (Assay's addition)",
        columns=[
            Column("who", "Who"),
            *[Column(f"r{s}", _range_label(s), "percent", 1) for s in range(width)],
            Column("units", "Units", "int"),
        ],
        rows=rows,
        notes=[
            "Assay's addition, not in the published study, which shows each item apart "
            "(Figure 4 above): every (scenario, scale item) pooled, percent of units.",
        ],
        n=_n(_units_rated(data), data.answers["rater"].nunique(), len(data.answers), "raters"),
    )


SD_NOTE = (
    "The published study does not say which standard deviation it plots: this is the "
    "population SD (ddof=0), Assay's choice."
)


def _sd_curve(data: SurveyData, group: Group, items: list[Item]) -> tuple[np.ndarray, np.ndarray]:
    frame = data.answers_of(group.key)
    matrix = _matrix(frame, items, len(data.scenarios), "rater", column="unit")
    sds = agreement.unit_sds(matrix, ddof=SD_DDOF)
    # The same answers in another order can differ in the last bit (0.2 and
    # 0.20000000000000004): one SD is one step of the curve, not two.
    return agreement.ecdf(np.round(sds, SD_DECIMALS))


def _sd_cdf(data: SurveyData) -> Table:
    """Figure 5 as published: per Likert item, the cumulative distribution of the SDs."""
    rows = []
    for item in data.items:
        if not item.ordinal:
            continue
        for group in data.groups:
            xs, ys = _sd_curve(data, group, [item])
            who = _who(data, group)
            rows += [
                {"item": item.code, "who": who, "sd": x, "share": y}
                for x, y in zip(xs, ys, strict=True)
            ]
    return Table(
        name="sd-cdf",
        title="Cumulative distribution of the standard deviation per scenario, for each "
        "Likert item (Figure 5)",
        columns=[
            Column("item", "Item"),
            Column("who", "Who"),
            Column("sd", "Standard deviation", "float"),
            Column("share", "Share of scenarios at or below", "float"),
        ],
        rows=rows,
        notes=[
            "Each Likert (scale) item apart, as the published Figure 5; yes/no items are not "
            "on it. Answers mapped to -1..1 (a 5-point scale to -1, -0.5, 0, 0.5, 1), then the "
            "standard deviation of each scenario's answers to the item, among people, or among "
            "a proxy's runs.",
            SD_NOTE,
        ],
        n=_n(_units_rated(data), data.answers["rater"].nunique(), len(data.answers), "raters"),
    )


def _sd_cdf_pooled(data: SurveyData) -> Table:
    scales = [item for item in data.items if item.ordinal]
    rows = []
    for group in data.groups:
        xs, ys = _sd_curve(data, group, scales) if scales else ([], [])
        who = _who(data, group)
        rows += [{"who": who, "sd": x, "share": y} for x, y in zip(xs, ys, strict=True)]
    return Table(
        name="sd-cdf-pooled",
        title="Cumulative distribution of the standard deviation per scenario and item, the "
        "Likert items pooled (Assay's addition)",
        columns=[
            Column("who", "Who"),
            Column("sd", "Standard deviation", "float"),
            Column("share", "Share of units at or below", "float"),
        ],
        rows=rows,
        notes=[
            "Assay's addition, not in the published study, which shows each Likert item apart "
            "(Figure 5 above): every (scenario, scale item) pooled, answers on -1..1.",
            SD_NOTE,
        ],
        n=_n(_units_rated(data), data.answers["rater"].nunique(), len(data.answers), "raters"),
    )


def _proxies_table(data: SurveyData) -> Table:
    """How each proxy was asked: per proxy model and proxy run, the prompt version, the
    parameters sent beyond the provider's defaults, and where that departs."""
    rows = []
    for setting in sorted(
        data.proxy_settings, key=lambda s: (data.group(s.group).label, s.run or 0)
    ):
        rows.append(
            {
                "who": _who(data, data.group(setting.group)),
                "run": f"Proxy run {setting.run}" if setting.run else "Not recorded",
                "raters": setting.raters,
                "prompt": setting.prompt or "Not recorded",
                "parameters": _parameters_text(setting.parameters)
                if setting.run
                else "Not recorded",
                "departures": " ".join(setting.departures) or "None: as published",
            }
        )
    return Table(
        name="proxies",
        title="How the proxies were asked",
        columns=[
            Column("who", "Proxy"),
            Column("run", "Run"),
            Column("raters", "Runs of the model", "int"),
            Column("prompt", "Prompt version"),
            Column("parameters", "Parameters"),
            Column("departures", "Departs from the published method"),
        ],
        rows=rows,
        notes=[
            "The published study gave its proxies the same survey people saw, and nothing more, "
            "with each provider's default parameters, five runs each. A prompt version that adds "
            "to the survey (a persona, say) or parameters sent with every call depart from it; "
            "each seed, sent to make a call repeatable, is not counted.",
        ],
        n=f"{len(data.proxies):,} proxy models, {sum(r['raters'] for r in rows):,} runs",
    )


def _parameters_text(parameters: dict) -> str:
    if not parameters:
        return "The provider's defaults"
    return ", ".join(f"{key}={value!r}" for key, value in sorted(parameters.items()))


DEMOGRAPHICS = (
    ("age", "Age", AgeBand),
    ("gender", "Gender", Gender),
    ("education", "Education", Education),
    ("income", "Household income", Income),
)


def _demographics(data: SurveyData) -> Table:
    people = data.people
    rows = []
    for column, title, choices in DEMOGRAPHICS:
        values = people[column].fillna("") if len(people) else pd.Series(dtype=str)
        for value, label in [*choices.choices, ("", "Not answered")]:
            count = int((values == value).sum())
            if count or value:
                rows.append(
                    {
                        "what": f"{title}: {label}",
                        "people": count,
                        "percent": 100 * count / len(people) if len(people) else np.nan,
                    }
                )
    notes = []
    if len(people) and people["simulated"].any():
        notes.append(
            f"{int(people['simulated'].sum())} of these people are simulated by the "
            "demo: their answers are made up, not given by anyone."
        )
    return Table(
        name="demographics",
        title="The people who rated (Table 3)",
        columns=[
            Column("what", "Characteristic"),
            Column("people", "People", "int"),
            Column("percent", "Percent", "percent", 1),
        ],
        rows=rows,
        notes=notes,
        n=f"{len(people):,} people after exclusions",
    )


def survey_report(data: SurveyData, *, intervals: dict | None = None) -> SurveyReport:
    """Every table and figure of the report; `intervals` from `survey_intervals` fill the
    confidence columns (empty without)."""
    from . import plots

    intervals = intervals or {}
    specs = survey_statistics(data)
    answers = data.answers
    report = SurveyReport(
        data_n=_everyone_n(data),
        people=len(data.people),
        proxies=len(data.proxies),
        answers=len(answers),
        scenarios=_units_rated(data),
        simulated=data.groups[0].simulated,
        offline=any(g.offline for g in data.proxies),
        excluded=data.excluded,
        intervals_missing=sum(1 for s in specs if s.key not in intervals),
    )
    report.tables["alpha"] = _alpha_table(data, specs, intervals)
    report.methods |= _alpha_methods(data, specs)
    report.tables["rho"] = _rho_table(data, specs, intervals)
    groups = item_groups(data.items)
    held = "; ".join(f"{name}: {', '.join(codes)}" for name, codes in groups.items())
    report.methods["rho"] = Method(
        "Spearman's rho, each proxy against people",
        "Spearman's rho between each proxy's and the participants' ratings of the scenarios, "
        "per item and per group of items (helpfulness, privacy).",
        "Over per-scenario means (people after exclusions; a proxy's runs), yes 1 and no 0; "
        "per item, and per group over its (scenario, item) pairs: "
        f"{held or 'no item is in a group'}; scipy.stats.spearmanr, two-sided.",
        Fidelity.PAPER,
        {"per": ["item", "group"], "groups": groups, "test": "scipy.stats.spearmanr, two-sided"},
    )
    report.tables["proxies"] = _proxies_table(data)
    report.fidelity_notes = [
        f"{_who(data, data.group(s.group))}, proxy run {s.run}: {note}"
        for s in data.proxy_settings
        for note in s.departures
    ]
    prompts = sorted({s.prompt for s in data.proxy_settings if s.prompt})
    report.methods["proxies"] = Method(
        "How the proxies were asked",
        "The same survey the participants saw, nothing more, with each provider's default "
        "parameters; five runs of each proxy.",
        f"Prompt versions: {', '.join(prompts) or 'not recorded'}. "
        + (" ".join(report.fidelity_notes) or "The survey alone, as published."),
        Fidelity.CHOSEN if report.fidelity_notes else Fidelity.PAPER,
        {
            "runs": [
                {
                    "proxy": data.group(s.group).label,
                    "run": s.run,
                    "prompt": s.prompt,
                    "prompt_version": s.prompt_version,
                    "parameters": s.parameters,
                }
                for s in data.proxy_settings
            ]
        },
    )
    report.tables["demographics"] = _demographics(data)
    for item in data.items:
        table = _distribution(data, item)
        keys = [f"p{p}" for p in range(item.points)]

        def draw(table=table, item=item, keys=keys):
            return plots.stacked_percent_bars(
                title=table.title,
                rows=[
                    (r["who"], [0.0 if np.isnan(r[k]) else r[k] for k in keys]) for r in table.rows
                ],
                categories=list(item.labels),
            )

        report.figures[table.name] = Figure(table, draw)
        report.distributions.append(table.name)
    item_titles = {item.code: f"{item.code}: {item.wording}" for item in data.items}
    points = {item.code: item.points for item in data.items}
    ranges = _ranges(data)
    panels: dict[str, tuple[list[str], dict[str, list[float]]]] = {}
    for row in ranges.rows:
        spans = range(points[row["item"]])
        _categories, series = panels.setdefault(
            item_titles[row["item"]], ([str(span) for span in spans], {})
        )
        series[row["who"]] = [_zero_if_nan(row[f"r{span}"]) for span in spans]
    report.figures["ranges"] = Figure(
        ranges,
        functools.partial(
            plots.grouped_bar_panels,
            title=ranges.title,
            panels=panels,
            xlabel=RANGE_AXIS,
            ylabel="Percent of scenarios",
        ),
    )
    pooled = _ranges_pooled(data)
    span_keys = [c.key for c in pooled.columns if c.key.startswith("r")]
    report.figures["ranges-pooled"] = Figure(
        pooled,
        functools.partial(
            plots.grouped_bars,
            title=pooled.title,
            categories=[c.label for c in pooled.columns if c.key in span_keys],
            series={r["who"]: [_zero_if_nan(r[k]) for k in span_keys] for r in pooled.rows},
            xlabel="Range of the ratings of a (scenario, item)",
            ylabel="Percent of units",
        ),
    )
    cdf = _sd_cdf(data)
    curves: dict[str, dict[str, tuple[list, list]]] = {}
    for row in cdf.rows:
        xs, ys = curves.setdefault(item_titles[row["item"]], {}).setdefault(row["who"], ([], []))
        xs.append(row["sd"])
        ys.append(row["share"])
    report.figures["sd-cdf"] = Figure(
        cdf,
        functools.partial(
            plots.step_line_panels,
            title=cdf.title,
            panels=curves,
            xlabel=SD_AXIS,
            ylabel="Share of scenarios at or below",
        ),
    )
    cdf_pooled = _sd_cdf_pooled(data)
    series: dict[str, tuple[list, list]] = {}
    for row in cdf_pooled.rows:
        xs, ys = series.setdefault(row["who"], ([], []))
        xs.append(row["sd"])
        ys.append(row["share"])
    report.figures["sd-cdf-pooled"] = Figure(
        cdf_pooled,
        functools.partial(
            plots.step_lines,
            title=cdf_pooled.title,
            series=series,
            xlabel=SD_AXIS,
            ylabel="Share of units at or below",
        ),
    )
    scale_codes = [item.code for item in data.items if item.ordinal]
    report.methods |= {
        "ranges": Method(
            "Range of ratings per scenario and item (Figure 4)",
            "The range of the ratings of each scenario, for each item apart.",
            f"Highest minus lowest rating of a scenario, per item ({', '.join(item_titles)}), "
            "among people, or among a proxy's runs.",
            Fidelity.PAPER,
            {"per": "item", "items": [item.code for item in data.items]},
        ),
        "sd-cdf": Method(
            "Standard deviation per scenario and Likert item (Figure 5)",
            "The cumulative distribution of each scenario's standard deviation, per Likert "
            "item and per proxy, with answers on -1..1.",
            f"The Likert items ({', '.join(scale_codes)}) apart, answers on -1..1, among people "
            "or among a proxy's runs.",
            Fidelity.PAPER,
            {"per": "item", "items": scale_codes, "answers_on": [-1, 1], "ddof": SD_DDOF},
        ),
        "sd-ddof": Method(
            "Which standard deviation (Figure 5)",
            "Not stated.",
            f"The population standard deviation (ddof={SD_DDOF}).",
            Fidelity.OURS,
            {"ddof": SD_DDOF},
        ),
        "ranges-pooled": Method(
            "Range of ratings, the scale items pooled",
            NOT_REPORTED,
            f"Every (scenario, item) of the scale items ({', '.join(scale_codes)}) together.",
            Fidelity.OURS,
            {"items": scale_codes},
        ),
        "sd-cdf-pooled": Method(
            "Standard deviation, the scale items pooled",
            NOT_REPORTED,
            f"Every (scenario, item) of the scale items ({', '.join(scale_codes)}) together, "
            f"answers on -1..1, ddof={SD_DDOF}.",
            Fidelity.OURS,
            {"items": scale_codes, "answers_on": [-1, 1], "ddof": SD_DDOF},
        ),
        "demographics": Method(
            "The people who rated (Table 3)",
            "The participants' demographics.",
            "The people analysed, after exclusions (rejected in review, failed an attention "
            "check), by age, gender, education and household income.",
            Fidelity.PAPER,
        ),
        "distributions": Method(
            "Answers per item (Figures 2 and 3)",
            "The distribution of the answers to each item, for participants and for each proxy.",
            "The share of each answer of each item, among people and among each proxy's runs.",
            Fidelity.PAPER,
        ),
    }
    # Each table and figure carries the methods of what it shows: the report's panel.
    attached = {
        "alpha": [k for k in report.methods if k.startswith("alpha-")] + ["intervals"],
        "rho": ["rho", "intervals"],
        "proxies": ["proxies"],
        "demographics": ["demographics"],
    }
    for name, keys in attached.items():
        report.tables[name].methods = tuple(report.methods[k] for k in keys)
    for name in report.distributions:
        report.figures[name].table.methods = (report.methods["distributions"],)
    figures = {
        "ranges": ["ranges"],
        "sd-cdf": ["sd-cdf", "sd-ddof"],
        "ranges-pooled": ["ranges-pooled"],
        "sd-cdf-pooled": ["sd-cdf-pooled"],
    }
    for name, keys in figures.items():
        report.figures[name].table.methods = tuple(report.methods[k] for k in keys)
    if data.unit_noun != "scenario":
        _reword(report)
    entries = report_entries(tables=report.tables, figures=report.figures, runs=[])
    report.tables[METHOD_TABLE] = method_table(entries=entries, n=report.data_n)
    report.spread = ["ranges", "sd-cdf"]
    report.spread_extras = ["ranges-pooled", "sd-cdf-pooled"]
    return report


def _answer_words(text: str) -> str:
    """The report's words for a study of a benchmark's answers: what people gave are ratings
    (an "answer" is what they rate), and the units are answers, not scenarios."""
    text = re.sub(
        r"\b([Aa])nswer(s?)\b", lambda m: f"{'R' if m[1] == 'A' else 'r'}ating{m[2]}", text
    )
    return re.sub(r"\b([Ss])cenario", lambda m: "Answer" if m[1] == "S" else "answer", text)


def _reword(report: SurveyReport) -> None:
    """Put an answer study's words in every title, note, column, count, figure label and
    method of ours; what the paper did (a method's `paper`) keeps its own words."""
    for table in [*report.tables.values(), *(f.table for f in report.figures.values())]:
        table.title = _answer_words(table.title)
        table.notes = [_answer_words(note) for note in table.notes]
        table.n = _answer_words(table.n)
        table.columns = [
            dataclasses.replace(column, label=_answer_words(column.label))
            for column in table.columns
        ]
    for name, figure in report.figures.items():
        draw = figure.svg
        if isinstance(draw, functools.partial):
            words = {
                k: _answer_words(v) if isinstance(v, str) else v for k, v in draw.keywords.items()
            }
            report.figures[name] = dataclasses.replace(
                figure, svg=functools.partial(draw.func, *draw.args, **words)
            )
    reworded = {
        id(method): dataclasses.replace(method, ours=_answer_words(method.ours))
        for method in report.methods.values()
    }
    report.methods = {key: reworded[id(method)] for key, method in report.methods.items()}
    for table in [*report.tables.values(), *(f.table for f in report.figures.values())]:
        table.methods = tuple(reworded.get(id(m), m) for m in table.methods)
    report.data_n = _answer_words(report.data_n)
    report.fidelity_notes = [_answer_words(note) for note in report.fidelity_notes]


def _zero_if_nan(value: float) -> float:
    return 0.0 if np.isnan(value) else value


# --- where people and proxies disagree ----------------------------------------------------------


@dataclass(frozen=True)
class Disagreement:
    scenario: int
    name: str
    people_mean: float
    proxies_mean: float
    gap: float
    people: int
    proxy_ratings: int


def disagreements(data: SurveyData) -> list[Disagreement]:
    """Scenarios ranked by the gap between people and proxies: the mean over items of the
    absolute difference of their mean answers, mapped to -1..1 (largest first)."""
    answers = data.answers.copy()
    if answers.empty or not data.proxies:
        return []
    answers["side"] = np.where(answers["group"] == PEOPLE, "people", "proxies")
    means = answers.groupby(["scenario", "item", "side"])["unit"].mean().unstack("side")
    if "people" not in means or "proxies" not in means:
        return []
    means = means.dropna()
    gaps = (means["people"] - means["proxies"]).abs().groupby("scenario").mean()
    side_means = means.groupby("scenario").mean()
    counts = answers.groupby(["scenario", "side"])["rater"].nunique().unstack("side")
    found = [
        Disagreement(
            scenario=int(s),
            name=data.scenarios[int(s)],
            people_mean=float(side_means.loc[s, "people"]),
            proxies_mean=float(side_means.loc[s, "proxies"]),
            gap=float(gap),
            people=int(counts.loc[s, "people"]),
            proxy_ratings=int(counts.loc[s, "proxies"]),
        )
        for s, gap in gaps.items()
    ]
    return sorted(found, key=lambda d: (-d.gap, d.name))


def disagreement_detail(data: SurveyData, scenario: int) -> list[dict]:
    """Per item: each side's mean (on the item's own scale) and its explanations, for one
    scenario, people first and then each proxy."""
    rows = data.answers[data.answers["scenario"] == scenario]
    detail = []
    for item in data.items:
        answered = rows[rows["item"] == item.code]
        sides = []
        for group in data.groups:
            mine = answered[answered["group"] == group.key]
            if mine.empty:
                continue
            offset = 1 if item.ordinal else 0
            sides.append(
                {
                    "who": _who(data, group),
                    "mean": float(mine["value"].mean()),
                    "answers": [
                        (item.labels[int(v) - offset], text)
                        for v, text in zip(mine["value"], mine["explanation"], strict=True)
                    ],
                }
            )
        detail.append({"item": item, "sides": sides})
    return detail
