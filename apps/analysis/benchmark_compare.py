"""Two grading runs side by side: Table 3's overall means and Table 4's rates of both with
their differences, the answers without a score in each, and, for the models in both, how
far their per-question means agree across the two runs (Pearson and Spearman, from stats/).
Models are matched by their configuration and questions by their id, so that two graders of
one sampling run, or two sampling runs of one bank, compare alike.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from django.core.cache import cache

from apps.grading.models import GradingRun
from stats import significance
from stats.correlation import pearson
from stats.points import MIN_POINTS, too_few

from .benchmark import CACHE_SECONDS, CATEGORIES, NOT_ENOUGH, benchmark_data_cached, per_question
from .benchmark_data import BenchmarkData, RunInfo, benchmark_fingerprint
from .tables import Column, Table, TooFew

MIN_QUESTIONS = MIN_POINTS  # a correlation over fewer questions is "too few points"


@dataclass
class BenchmarkComparison:
    first: RunInfo
    second: RunInfo
    n: str
    tables: dict[str, Table] = field(default_factory=dict)


def _labels(first: BenchmarkData, second: BenchmarkData) -> list[tuple[int, str]]:
    """(model id, label) of every model in either run, by name."""
    models = {m.id: m for m in [*second.models, *first.models]}
    return [(m.id, m.label) for m in sorted(models.values(), key=lambda m: (m.name, m.id))]


def _n(first: BenchmarkData, second: BenchmarkData) -> str:
    return (
        f"run {first.run.id}: {len(first.scores):,} scored answers; "
        f"run {second.run.id}: {len(second.scores):,} scored answers"
    )


def _runs(first: BenchmarkData, second: BenchmarkData) -> Table:
    rows = []
    for which, data in (("First", first), ("Second", second)):
        run = data.run
        rows.append(
            {
                "which": f"{which}: grading run {run.id}",
                "name": run.name,
                "sampling": run.sampling_run,
                "grader": run.grader + (" (offline demo model)" if run.grader_offline else ""),
                "prompt": f"{run.prompt}, version {run.prompt_version}",
                "mode": run.mode,
                "temperature": str(run.temperature),
                "departures": " ".join(run.fidelity_notes) or "None: as published",
            }
        )
    return Table(
        name="runs",
        title="The two grading runs",
        columns=[
            Column("which", "Run"),
            Column("name", "Name"),
            Column("sampling", "Sampling run"),
            Column("grader", "Grader"),
            Column("prompt", "Prompt"),
            Column("mode", "Mode"),
            Column("temperature", "Temperature"),
            Column("departures", "Departs from the published method"),
        ],
        rows=rows,
        n=_n(first, second),
    )


def _difference(a, b):
    return None if a is None or b is None else b - a


def _overall(first, second, means_a, means_b) -> Table:
    rows = []
    stats = []
    for means in (means_a, means_b):
        by_model = means.groupby("model")["mean"]
        stats.append((by_model.mean(), by_model.size()))
    for model_id, label in _labels(first, second):
        row = {"model": label}
        for key, (mean, size) in zip(("a", "b"), stats, strict=True):
            value = mean.get(model_id)
            row[f"mean_{key}"] = None if value is None or pd.isna(value) else 100 * float(value)
            row[f"questions_{key}"] = int(size.get(model_id, 0))
        row["difference"] = _difference(row["mean_a"], row["mean_b"])
        rows.append(row)
    return Table(
        name="overall",
        title="Overall mean per model in both runs (Table 3)",
        columns=[
            Column("model", "Model"),
            Column("mean_a", f"Run {first.run.id}: mean", "percent", 1),
            Column("mean_b", f"Run {second.run.id}: mean", "percent", 1),
            Column("difference", "Difference (second minus first, points)", "float", 1),
            Column("questions_a", f"Run {first.run.id}: questions", "int"),
            Column("questions_b", f"Run {second.run.id}: questions", "int"),
        ],
        rows=rows,
        notes=[
            "Each run's mean as in its report: samples of a question averaged first, then the "
            "questions. The difference is in percentage points."
        ],
        n=_n(first, second),
    )


def _rates(data: BenchmarkData) -> dict[tuple[int, str, str], tuple[float | None, int]]:
    met = data.met.groupby(["model", "polarity", "kind"])[["judgments", "met"]].sum()
    return {
        key: (
            100 * int(row["met"]) / int(row["judgments"]) if row["judgments"] else None,
            int(row["judgments"]),
        )
        for key, row in met.iterrows()
    }


def _rates_table(first: BenchmarkData, second: BenchmarkData) -> Table:
    rates_a, rates_b = _rates(first), _rates(second)
    rows = []
    for model_id, label in _labels(first, second):
        for polarity, kind, name in CATEGORIES:
            a, n_a = rates_a.get((model_id, polarity, kind), (None, 0))
            b, n_b = rates_b.get((model_id, polarity, kind), (None, 0))
            rows.append(
                {
                    "model": label,
                    "criteria": name,
                    "rate_a": a,
                    "rate_b": b,
                    "difference": _difference(a, b),
                    "n_a": n_a,
                    "n_b": n_b,
                }
            )
    return Table(
        name="rates",
        title="Share of criteria met per model in both runs (Table 4)",
        columns=[
            Column("model", "Model"),
            Column("criteria", "Criteria"),
            Column("rate_a", f"Run {first.run.id}: met", "percent", 1),
            Column("rate_b", f"Run {second.run.id}: met", "percent", 1),
            Column("difference", "Difference (points)", "float", 1),
            Column("n_a", f"Run {first.run.id}: judgments", "int"),
            Column("n_b", f"Run {second.run.id}: judgments", "int"),
        ],
        rows=rows,
        notes=[
            "Over the judgments of each run's scored answers. For negative criteria a lower "
            "rate is better."
        ],
        n=_n(first, second),
    )


def _missing(first: BenchmarkData, second: BenchmarkData) -> Table:
    keys = ("missing", "errored", "unanswered", "pending")
    found = [{r["model"]: r for r in data.missing} for data in (first, second)]
    rows = []
    for model_id, label in _labels(first, second):
        row = {"model": label}
        for which, rows_of in zip(("a", "b"), found, strict=True):
            mine = rows_of.get(model_id)
            for key in keys:
                row[f"{key}_{which}"] = mine[key] if mine else None
        rows.append(row)
    labels = {
        "missing": "without a score",
        "errored": "errored judgment",
        "unanswered": "not done in the sampling run",
        "pending": "not graded yet",
    }
    return Table(
        name="missing",
        title="Answers without a score in both runs",
        columns=[
            Column("model", "Model"),
            *[
                Column(f"{key}_{which}", f"Run {data.run.id}: {labels[key]}", "int")
                for which, data in (("a", first), ("b", second))
                for key in keys
            ],
        ],
        rows=rows,
        notes=["A dash: the model has no answers in that run's sampling run."],
        n=_n(first, second),
    )


def correlation(x: np.ndarray, y: np.ndarray) -> dict:
    n = len(x)
    empty = {"pearson": None, "pearson_p": None, "spearman": None, "spearman_p": None}
    if too_few(n):
        return {
            **empty,
            "pearson": TooFew(n),
            "spearman": TooFew(n),
            "note": f"Too few points: {n} questions in both runs (at least {MIN_QUESTIONS} "
            "needed).",
        }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pearson(x, y)
        rho = significance.spearman(x, y, minimum=MIN_QUESTIONS)
    if r is None or rho.undefined is not None:
        return {**empty, "note": f"{NOT_ENOUGH}every per-question mean of one run is the same."}
    return {
        "pearson": r.r,
        "pearson_p": r.p,
        "spearman": rho.statistic,
        "spearman_p": rho.p,
        "note": "",
    }


def _correlations(first, second, means_a, means_b) -> Table:
    wide = pd.merge(
        means_a[["model", "question", "mean"]],
        means_b[["model", "question", "mean"]],
        on=["model", "question"],
        suffixes=("_a", "_b"),
    )
    in_both = {m.id for m in first.models} & {m.id for m in second.models}
    rows = []
    for model_id, label in _labels(first, second):
        if model_id not in in_both:
            continue
        mine = wide[wide["model"] == model_id]
        x, y = mine["mean_a"].to_numpy(), mine["mean_b"].to_numpy()
        rows.append({"model": label, **correlation(x, y), "n": len(mine)})
    return Table(
        name="correlation",
        title="Agreement of per-question means across the two runs, per model",
        columns=[
            Column("model", "Model"),
            Column("pearson", "Pearson r", "float", 3),
            Column("pearson_p", "p (Pearson)", "float", 4),
            Column("spearman", "Spearman rho", "float", 3),
            Column("spearman_p", "p (Spearman)", "float", 4),
            Column("n", "Questions in both", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            "For each model in both runs, over the questions it has a scored answer to in both: "
            "its per-question mean (samples averaged) in one run against the other "
            "(scipy.stats.pearsonr and spearmanr, two-sided). p-values are unadjusted."
        ],
        n=_n(first, second),
    )


def benchmark_comparison(first: BenchmarkData, second: BenchmarkData) -> BenchmarkComparison:
    means_a, means_b = per_question(first), per_question(second)
    tables = [
        _runs(first, second),
        _overall(first, second, means_a, means_b),
        _rates_table(first, second),
        _missing(first, second),
        _correlations(first, second, means_a, means_b),
    ]
    return BenchmarkComparison(
        first=first.run,
        second=second.run,
        n=_n(first, second),
        tables={table.name: table for table in tables},
    )


def benchmark_comparison_for(*, run: GradingRun, other: GradingRun) -> BenchmarkComparison:
    """The two runs side by side, computed once per pair of fingerprints."""
    first, second = benchmark_fingerprint(run=run), benchmark_fingerprint(run=other)
    key = f"analysis:benchmark-compare:{run.pk}:{first}:{other.pk}:{second}"
    found = cache.get(key)
    if found is None:
        found = benchmark_comparison(
            benchmark_data_cached(run=run, fingerprint=first),
            benchmark_data_cached(run=other, fingerprint=second),
        )
        cache.set(key, found, CACHE_SECONDS)
    return found
