"""The benchmark report of a grading run: the published rubric benchmark's tables, tests and
figures, computed from `BenchmarkData` (apps/analysis/benchmark_data.py) with pandas; the
tests are stats/significance.py's (scipy.stats), the report words them.

- A model's mean: its samples of a question are averaged first, then its questions, so that
  each question weighs the same whatever its number of samples (Table 3, overall and per
  topic). The standard deviation under each mean is the sample SD (ddof=1, pandas' default)
  of a question's samples' scores, averaged over the model's questions with two samples or
  more (the paper does not say which SD it used).
- Met rates per polarity x kind (Table 4) are over the judgments of the scored answers.
- Below 65%: answers whose score is under 0.65, and questions whose mean over all models
  (each model's mean of the question first, then the mean over the models) is under 0.65.
- Tests, over per-question means unless said: Wilcoxon signed-rank between pairs of models
  on the questions both answered (scipy.stats.wilcoxon, two-sided); Kruskal-Wallis across
  topics per model (scipy.stats.kruskal); two-sample Kolmogorov-Smirnov per model by
  prior-attempt mention and by each need against its absence, over verified labels
  (scipy.stats.ks_2samp); Spearman across topics between the topic mean and the topic's IQR
  and median (scipy.stats.spearmanr), all models pooled and per model; Fisher-Pearson
  skewness g1 (scipy.stats.skew, bias=True) and excess kurtosis (scipy.stats.kurtosis,
  fisher=True) per model over answer scores, with D'Agostino's tests for p
  (scipy.stats.skewtest, kurtosistest). Each table is one family of tests and carries the
  Benjamini-Hochberg adjusted p (scipy.stats.false_discovery_control), which the paper does
  not report. A test that is undefined on its data (too few pairs, every difference zero, a
  constant sample) is shown as not enough data with the reason, never as NaN.
- As published, Spearman's rho is over (model, topic) cells: each cell's mean against its IQR
  and its median, of the model's per-question means in the topic; the rho across topics
  above is Assay's addition. A rho over fewer than 10 points keeps its p, said not meaningful.
- All models (Table 3's last row and the headline): the mean over the models of each model's
  mean, so that each model weighs the same. Table 1 shows one model per family: the one the
  researcher chose, else the family's newest by release date, else by when it was added.
"""

import dataclasses
import datetime
import functools
import itertools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from django.core.cache import cache

from apps.grading.bands import BELOW, SCORE_BINS, SCORED, THRESHOLD, bin_band
from apps.grading.models import GradingMode, GradingRun
from apps.grading.selectors.runs import SCORING_RULE, missing_reason
from apps.runs.models import ResponseStatus
from stats import descriptive, significance
from stats.points import MIN_POINTS, too_few
from stats.significance import Undefined

from . import plots
from .benchmark_data import (
    BenchmarkData,
    CalibrationSummary,
    Model,
    RunInfo,
    benchmark_data,
    benchmark_fingerprint,
)
from .errors import AnalysisError
from .figures import Figure
from .labels import OFFLINE_NOTE
from .method import METHOD_TABLE, NOT_REPORTED, Fidelity, Method, method_table, report_entries
from .tables import ANSWERS, Column, Table, TooFew

# Fixed bins, so that figures of two runs compare bar for bar: scores by 0.05 from 0 to 1
# (SCORE_BINS, the answer viewer's bands too: apps/grading/bands.py); a question's SD across
# samples by 0.05 from 0 to 0.75 (scores in [0, 1] have a sample SD of at most 0.71).
SD_BINS = [i / 20 for i in range(16)]
# Wilcoxon (questions both models answered) and Spearman (topics, or (model, topic) cells)
# are shown over MIN_POINTS points or more (stats/points.py), else "too few points".
MEANINGFUL_POINTS = 10  # a rho over fewer points keeps its p, said not meaningful
CACHE_SECONDS = 3600
MEAN_DIGITS = 12
NOT_ENOUGH = "Not enough data: "
SD_DDOF = 1  # the sample SD across a question's samples (pandas' default); the paper is silent
BH_METHOD = Method(
    "Benjamini-Hochberg adjusted p",
    NOT_REPORTED,
    "Within each table (one family of tests), scipy.stats.false_discovery_control, method "
    "'bh'; the unadjusted p is shown beside it.",
    Fidelity.OURS,
)
BINS_METHOD = Method(
    "Histogram bins",
    "The paper's bins are not stated.",
    "Fixed bins of 0.05 (scores 0 to 1; SDs 0 to 0.75), so that two runs' figures compare "
    "bar for bar; a bin holds its lower edge.",
    Fidelity.OURS,
)

CATEGORIES = [
    ("positive", "factual", "Positive factual"),
    ("positive", "presentation", "Positive presentation"),
    ("negative", "factual", "Negative factual"),
    ("negative", "presentation", "Negative presentation"),
]
ALL_MODELS = "All models"
ALL_MODELS_MEAN = "Means over all models (Table 3's All models row)"
SUMMARY = "summary"  # a row's key outside its columns: a summary row, last however sorted
CELLS = ("(model, topic) cell", "(model, topic) cells")
TOPICS = ("topic", "topics")
FAMILIES = ("family", "families")
MODELS = ("model", "models")
AS_PUBLISHED, ADDED = "As published", "Added by Assay"
# Table 1: what picked a family's model.
PICK_CHOSEN, PICK_ONLY, PICK_RELEASED, PICK_CREATED = "chosen", "only", "released", "created"

MISSING_REASONS = [
    ("errored", missing_reason(has_error=True, answer_status=ResponseStatus.DONE)),
    ("unanswered", "the answer is not done in the sampling run"),
    ("pending", missing_reason(has_error=False, answer_status=ResponseStatus.DONE)),
]


@dataclass(frozen=True)
class Table1Pick:
    """Table 1's model of one family, and by which rule (PICK_*) it was picked."""

    family: str
    model: Model
    rule: str
    default: Model  # the family's newest, which the default rule picks
    default_rule: str  # the rule that picks it (PICK_ONLY, PICK_RELEASED or PICK_CREATED)
    members: tuple[Model, ...]  # the family's models in the run, by name

    @property
    def chosen(self) -> bool:
        return self.rule == PICK_CHOSEN

    @property
    def default_text(self) -> str:
        return newest_rule_text(self.members, self.default_rule)

    @property
    def rule_text(self) -> str:
        if self.chosen:
            return f"Chosen instead of the family's newest ({self.default.label})"
        return self.default_text


@dataclass
class BenchmarkReport:
    """Every table and figure of a grading run's report; `n` says what it rests on."""

    run: RunInfo
    n: str
    tables: dict[str, Table] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    models: list[Model] = field(default_factory=list)
    pairs: list[tuple[int, int]] = field(default_factory=list)  # the Wilcoxon pairs shown
    default_pairs: bool = True
    calibrations: list[CalibrationSummary] = field(default_factory=list)
    rubric_versions: list[tuple[int, int]] = field(default_factory=list)  # (version, questions)
    table1: list[Table1Pick] = field(default_factory=list)
    # Each statistic's settings this report chose (unit, n, weighting, test, whether it is the
    # paper's method), as data: the tables' notes say the same in words.
    settings: dict[str, dict] = field(default_factory=dict)
    scored: int = 0
    missing: int = 0
    errored: int = 0
    offline: bool = False


# --- per-question means ------------------------------------------------------------------------


def per_question(data: BenchmarkData) -> pd.DataFrame:
    """One row per (model, question): the mean of its samples' scores, their SD (ddof
    SD_DDOF: NaN for a single sample), the number of samples, and the question's labels."""
    grouped = data.scores.groupby(["model", "question"], sort=True)["score"]
    frame = grouped.agg(mean="mean", samples="size")
    frame["sd"] = grouped.std(ddof=SD_DDOF)
    frame = frame.reset_index()
    # Scores are ratios of whole points; rounded to 12 places, means that are equal are
    # equal as numbers too (.6 and .7 average to .65, not to .6499999999999999), so that they
    # tie in the rank tests and fall in the bin, and on the side of 65%, that they should.
    frame["mean"] = frame["mean"].round(MEAN_DIGITS)
    labels = data.questions[["topic", "prior", "sensemaking", "guidance", "verified"]]
    return frame.join(labels, on="question")


def _percent(value) -> float | None:
    return None if value is None or pd.isna(value) else 100 * float(value)


def _models_n(data: BenchmarkData) -> str:
    scores = data.scores
    return (
        f"{len(scores):,} scored answers to {scores['question'].nunique():,} questions "
        f"from {scores['model'].nunique():,} models"
    )


# --- Table 3, Table 4, below 65% ---------------------------------------------------------------


def topic_key(slug: str) -> str:
    return f"topic-{slug}"


SCORED_QUERY = {"band": SCORED.key}


def _topic_columns(data: BenchmarkData) -> list[Column]:
    """A mean per topic, each cell linked to the answers behind it."""
    return [
        Column(topic_key(slug), name, "percent", 1, answers={"topic": slug})
        for slug, name in data.topics
    ]


def _table3(data: BenchmarkData, means: pd.DataFrame) -> Table:
    by_model = means.groupby("model")
    overall, sd = by_model["mean"].mean(), by_model["sd"].mean()
    with_sd = by_model["sd"].count()
    topics = means.groupby(["model", "topic"])["mean"].mean()
    answers = data.scores.groupby("model").size()
    rows = []
    for model in data.models:
        row = {
            "model": model.label,
            "mean": _percent(overall.get(model.id)),
            "sd": _percent(sd.get(model.id)),
            ANSWERS: {"model": model.id},
        }
        for slug, name in data.topics:
            row[topic_key(slug)] = _percent(topics.get((model.id, name)))
        row["answers"] = int(answers.get(model.id, 0))
        row["questions"] = int(by_model.size().get(model.id, 0))
        row["sd_questions"] = int(with_sd.get(model.id, 0))
        rows.append(row)
    rows.append(_all_models_row(data, means))
    return Table(
        name="table-3",
        title="Mean score per model, overall and per topic (Table 3)",
        columns=[
            Column("model", "Model", answers={}),
            Column("mean", "Overall mean", "percent", 1, answers={}),
            Column("sd", "Mean SD across samples", "percent", 1),
            *_topic_columns(data),
            Column("answers", "Scored answers", "int", answers=SCORED_QUERY),
            Column("questions", "Questions", "int"),
            Column("sd_questions", "Questions with 2+ samples", "int"),
        ],
        rows=rows,
        notes=[
            "Means in percent. A model's samples of a question are averaged first, then its "
            "questions (overall, or within the topic).",
            "Mean SD across samples: the sample standard deviation (ddof=1, pandas' default) "
            "of a question's samples' scores, averaged over the model's questions with two "
            "samples or more; a question with one sample has none.",
            "Only scored answers count: answers without a score are counted under Missing scores.",
            *ALL_MODELS_NOTES,
        ],
        methods=(
            Method(
                "A model's mean score (Table 3)",
                "A model's samples of a question averaged first, then its questions; overall "
                "and per topic.",
                "The mean of each (model, question)'s samples' scores, then the mean over the "
                "model's questions (overall, or in the topic); scored answers only.",
                Fidelity.PAPER,
            ),
            Method(
                "SD across samples (Table 3)",
                "The standard deviation of a question's scores across a model's samples, "
                "averaged; the paper does not say which standard deviation.",
                f"The sample SD (ddof={SD_DDOF}) of each question's samples' scores, averaged "
                "over the model's questions with two samples or more.",
                Fidelity.OURS,
            ),
            Method(
                ALL_MODELS_MEAN,
                "An all-model overall mean (82%) and all-model means per topic, over a design "
                "in which every model answered every question.",
                "The mean over the models of each model's mean, so that each model weighs the "
                "same: the paper's mean when every model answered every question, and the one "
                "that keeps each model's weight when some answers are missing.",
                Fidelity.PAPER,
            ),
        ),
        n=_models_n(data),
    )


ALL_MODELS_NOTES = [
    f"{ALL_MODELS}: the mean over the models of each model's mean (overall, and in a topic "
    "over the models with a scored question in it), so that each model weighs the same, as "
    "the paper's all-model means are read here (82% overall; scams 88%, moderation tools 77%). "
    "When every model has a scored answer to every question it equals the mean over all "
    "(model, question) means; when some are missing that pooled mean would weigh a model by "
    "how many of its questions were scored, so the per-model mean is the one shown.",
    f"{ALL_MODELS} has no SD (the paper gives none for all models); its answers and questions "
    "count every model's. It stays last however the table is sorted.",
]


def model_weighted_means(means: pd.DataFrame) -> tuple[float | None, pd.DataFrame]:
    """The all-model mean: over the models of each model's mean of its per-question means;
    and per topic (index: topic) the same over the models with a scored question in it, with
    how many models, questions and answers each rests on."""
    overall = means.groupby("model")["mean"].mean()
    cells = means.groupby(["topic", "model"]).agg(mean=("mean", "mean"), samples=("samples", "sum"))
    by_topic = cells.groupby("topic").agg(
        mean=("mean", "mean"), models=("mean", "size"), answers=("samples", "sum")
    )
    by_topic["questions"] = means.groupby("topic")["question"].nunique()
    return (float(overall.mean()) if len(overall) else None), by_topic


def _all_models_row(data: BenchmarkData, means: pd.DataFrame) -> dict:
    overall, by_topic = model_weighted_means(means)
    row = {"model": ALL_MODELS, "mean": _percent(overall), "sd": None}
    for slug, name in data.topics:
        row[topic_key(slug)] = _percent(by_topic["mean"].get(name))
    row["answers"] = len(data.scores)
    row["questions"] = int(means["question"].nunique())
    row["sd_questions"] = None
    row[SUMMARY] = True
    row[ANSWERS] = {}
    return row


def table_sorted(table: Table, *, key: str, descending: bool) -> Table:
    """The table with its rows ordered by one column; missing values last either way, and
    a summary row (All models) after them."""
    if key not in {c.key for c in table.columns}:
        return table
    summaries = [r for r in table.rows if r.get(SUMMARY)]
    rows = [r for r in table.rows if not r.get(SUMMARY)]
    present = [r for r in rows if r[key] is not None]
    absent = [r for r in rows if r[key] is None]
    present.sort(key=lambda r: (r[key], r[table.columns[0].key]), reverse=descending)
    return dataclasses.replace(table, rows=present + absent + summaries)


# --- Table 1: one model per family --------------------------------------------------------------


def _newest_key(model: Model):
    created = model.created_at.timestamp() if model.created_at else float("-inf")
    return (model.released_on or datetime.date.min, created, model.id)


def family_newest(members: list[Model]) -> tuple[Model, str]:
    """A family's newest model and the rule that says so: the latest release date among the
    models that have one (the newest added breaks a tie), else the newest added to Assay."""
    if len(members) == 1:
        return members[0], PICK_ONLY
    dated = [m for m in members if m.released_on is not None]
    if dated:
        return max(dated, key=_newest_key), PICK_RELEASED
    return max(members, key=_newest_key), PICK_CREATED


def newest_rule_text(members, rule: str) -> str:
    if rule == PICK_ONLY:
        return "The family's only model in this run"
    if rule == PICK_CREATED:
        return "The newest added to Assay (no model of the family has a release date)"
    newest, _rule = family_newest(list(members))
    undated = sum(1 for m in members if m.released_on is None)
    text = f"The newest release date ({newest.released_on.isoformat()})"
    if undated:
        text += f"; {undated} of the family's models {'has' if undated == 1 else 'have'} none"
    return text


def _families(models: list[Model]) -> dict[str, list[Model]]:
    families: dict[str, list[Model]] = {}
    for model in sorted(models, key=lambda m: (m.family.casefold(), m.family, m.name)):
        families.setdefault(model.family, []).append(model)
    return families


def table1_picks(models: list[Model], chosen: list[int] | None = None) -> list[Table1Pick]:
    """One model per family, by family: the chosen one (model ids, at most one per family),
    else the family's newest."""
    chosen_ids = set(chosen or [])
    picks = []
    for family, members in _families(models).items():
        default, default_rule = family_newest(members)
        mine = [m for m in members if m.id in chosen_ids]
        if len(mine) > 1:
            raise AnalysisError(f"Choose one model of the family {family} for Table 1, not two.")
        if mine and mine[0].id != default.id:
            model, rule = mine[0], PICK_CHOSEN
        else:
            model, rule = default, default_rule
        picks.append(Table1Pick(family, model, rule, default, default_rule, tuple(members)))
    return picks


def _whole(value: str) -> bool:
    """ASCII digits only: str.isdigit() alone admits "²", which int() refuses."""
    return value.isascii() and value.isdigit()


def table1_parse(values: list[str], models: list[Model]) -> tuple[list[int], list[str]]:
    """`table1=<model id>` values (an empty one: the family's default) as model ids, and a
    message for each one refused."""
    by_id = {m.id: m for m in models}
    chosen: dict[str, Model] = {}
    refused = []
    for value in values:
        value = value.strip()
        if not value:
            continue
        if not _whole(value):
            refused.append(f"“{value}” is not a model id.")
            continue
        model = by_id.get(int(value))
        if model is None:
            refused.append(f"“{value}” names no model that answered in this sampling run.")
            continue
        first = chosen.setdefault(model.family, model)
        if first.id != model.id:
            refused.append(
                f"“{model.label}” and “{first.label}” are both of the family {model.family}: "
                f"Table 1 shows one model per family, so it shows “{first.label}”."
            )
    return [m.id for m in chosen.values()], refused


def _table1(data: BenchmarkData, table3: Table, picks: list[Table1Pick]) -> Table:
    by_label = {r["model"]: r for r in table3.rows if not r.get(SUMMARY)}
    topics = [topic_key(slug) for slug, _name in data.topics]
    rows = []
    for pick in picks:
        scores = by_label[pick.model.label]
        rows.append(
            {
                "family": pick.family,
                "model": pick.model.label,
                "version": pick.model.version,
                "released": pick.model.released_on.isoformat() if pick.model.released_on else None,
                "rule": pick.rule_text,
                **{key: scores[key] for key in ("mean", *topics, "answers", "questions")},
                "model_id": pick.model.id,
                ANSWERS: {"model": pick.model.id},
            }
        )
    chosen = sum(1 for p in picks if p.chosen)
    return Table(
        name="table-1",
        title="One model per family (Table 1)",
        columns=[
            Column("family", "Family"),
            Column("model", "Model", answers={}),
            Column("version", "Version"),
            Column("released", "Release date"),
            Column("rule", "Picked by"),
            Column("mean", "Overall mean", "percent", 1, answers={}),
            *_topic_columns(data),
            Column("answers", "Scored answers", "int", answers=SCORED_QUERY),
            Column("questions", "Questions", "int"),
            Column("model_id", "Model id", "int"),
        ],
        rows=rows,
        notes=[
            "As in the paper's Table 1, one model of each family. By default the family's "
            "newest: the latest release date among its models that have one (set in the "
            "console, on the model), and when none has one, the model added to Assay last; "
            "the newest added breaks a tie. Picked by says which rule picked each row.",
            "Means and counts are Table 3's, in percent.",
            f"{chosen:,} of the {_count(len(rows), FAMILIES)} "
            f"{'shows' if chosen == 1 else 'show'} a chosen model instead of "
            f"{'its' if len(rows) == 1 else 'their'} newest.",
        ],
        methods=(
            Method(
                "One model per family (Table 1)",
                "One variant of each model family.",
                f"{len(rows) - chosen:,} families show their newest model (the latest release "
                "date set in the console, else the model added last)"
                + (f"; {chosen:,} show the model the researcher chose." if chosen else "."),
                Fidelity.CHOSEN if chosen else Fidelity.OURS,
            ),
        ),
        n=f"{_count(len(rows), FAMILIES)} of {_count(len(data.models), MODELS)}",
    )


# --- the headline ------------------------------------------------------------------------------


def _extremes(values: pd.Series) -> tuple[list, list]:
    """The index labels of the highest and of the lowest values (all of them when tied)."""
    values = values.dropna().round(MEAN_DIGITS)
    if values.empty:
        return [], []
    return (
        sorted(values.index[values == values.max()]),
        sorted(values.index[values == values.min()]),
    )


HEADLINE_MEAN = "Mean over all models"
HEADLINE_RATER = "The auto-rater against experts"


def _headline(data: BenchmarkData, means: pd.DataFrame) -> Table:
    """The numbers an abstract would quote, each from the table that holds it (the key of a
    row names that table's cell: the page's test compares them)."""
    overall, by_topic = model_weighted_means(means)
    by_model = means.groupby("model").agg(mean=("mean", "mean"), answers=("samples", "sum"))
    scores = data.scores
    below = int((scores["score"] < THRESHOLD).sum())
    rows = [
        {
            "key": "mean",
            "figure": HEADLINE_MEAN,
            "which": None,
            "value": _percent(overall),
            "r": None,
            "models": int(means["model"].nunique()),
            "questions": int(means["question"].nunique()),
            "answers": len(scores),
        }
    ]
    best, worst = _extremes(by_model["mean"])
    extremes = (("best-model", "Best model", best), ("worst-model", "Worst model", worst))
    for key, figure, ids in extremes:
        picked = by_model.loc[ids]
        rows.append(
            {
                "key": key,
                "figure": figure,
                "which": " and ".join(data.model(i).label for i in ids) or None,
                "names": [data.model(i).label for i in ids],
                "value": _percent(picked["mean"].iloc[0]) if ids else None,
                "r": None,
                "models": len(ids),
                "questions": int(means.loc[means["model"].isin(ids), "question"].nunique()),
                "answers": int(picked["answers"].sum()),
            }
        )
    best, worst = _extremes(by_topic["mean"])
    extremes = (("best-topic", "Best topic", best), ("worst-topic", "Worst topic", worst))
    for key, figure, names in extremes:
        picked = by_topic.loc[names]
        rows.append(
            {
                "key": key,
                "figure": figure,
                "which": " and ".join(names) or None,
                "value": _percent(picked["mean"].iloc[0]) if names else None,
                "r": None,
                "models": int(means.loc[means["topic"].isin(names), "model"].nunique()),
                "questions": int(picked["questions"].sum()),
                "answers": int(picked["answers"].sum()),
            }
        )
    rows.append(
        {
            "key": "below",
            "figure": f"Answers below {round(100 * THRESHOLD)}%",
            "which": f"{below:,} of {len(scores):,} scored answers",
            "value": 100 * below / len(scores) if len(scores) else None,
            "r": None,
            "models": int(scores["model"].nunique()),
            "questions": int(scores["question"].nunique()),
            "answers": len(scores),
        }
    )
    rows.append(_headline_rater(data))
    return Table(
        name="headline",
        title="The report in brief",
        columns=[
            Column("figure", "Figure"),
            Column("which", "Which"),
            Column("value", "Value", "percent", 1),
            Column("r", "Pearson r", "float", 3),
            Column("models", "Models", "int"),
            Column("questions", "Questions", "int"),
            Column("answers", "Scored answers", "int"),
        ],
        rows=rows,
        notes=[
            "The mean over all models, and each topic's, is the mean over the models of each "
            "model's mean (Table 3's All models row): each model weighs the same.",
            "A model's mean and the best and worst models are Table 3's overall means; the "
            "best and worst topics are by the all-model mean of the topic. Tied ones are named "
            "together.",
            "The share below 65% is of every scored answer, each answer weighing the same (the "
            "All models row of the table of answers below 65%).",
            "The auto-rater against experts: Pearson r of answer scores in the run's first "
            "calibration (the calibration table), over the answers compared.",
        ],
        methods=(
            Method(
                "The report in brief",
                "The overall mean over all models, and the models and topics that score "
                "highest and lowest, as the paper's summary quotes them.",
                "Table 3's means (each model weighing the same over models); the share below "
                f"{round(100 * THRESHOLD)}% of every scored answer; the auto-rater's r from "
                "the calibration table.",
                Fidelity.OURS,
            ),
        ),
        n=_models_n(data),
    )


def _headline_rater(data: BenchmarkData) -> dict:
    row = {
        "key": "rater",
        "figure": HEADLINE_RATER,
        "value": None,
        "models": None,
        "questions": None,
    }
    if not data.calibrations:
        return row | {"which": "Not yet measured: no calibration", "r": None, "answers": None}
    c = data.calibrations[0]
    r = TooFew(c.score.n) if too_few(c.score.n) else calibration_r(c)
    return row | {"which": c.set_name, "r": r, "answers": c.score.n}


MET = {"verdict": "met"}


def _table4(data: BenchmarkData) -> Table:
    met = data.met.groupby(["model", "polarity", "kind"])[["judgments", "met"]].sum()
    rows = []
    for model in data.models:
        row = {"model": model.label, ANSWERS: {"model": model.id}}
        for polarity, kind, _label in CATEGORIES:
            key = f"{polarity}-{kind}"
            found = (model.id, polarity, kind) in met.index
            judged = int(met.loc[(model.id, polarity, kind), "judgments"]) if found else 0
            hits = int(met.loc[(model.id, polarity, kind), "met"]) if found else 0
            row[key] = 100 * hits / judged if judged else None
            row[f"{key}-n"] = judged
        rows.append(row)
    columns = [Column("model", "Model", answers={})]
    for polarity, kind, label in CATEGORIES:
        judged = {"polarity": polarity, "kind": kind}
        columns += [
            Column(f"{polarity}-{kind}", f"{label}: met", "percent", 1, answers=judged | MET),
            Column(f"{polarity}-{kind}-n", f"{label}: judgments", "int", answers=judged),
        ]
    judgments = int(data.met["judgments"].sum()) if len(data.met) else 0
    return Table(
        name="table-4",
        title="Share of criteria met per model, by polarity and kind (Table 4)",
        columns=columns,
        rows=rows,
        notes=[
            "The share of judgments whose criterion was met, of the judgments of the scored "
            "answers (the answers of Table 3).",
            "For a positive criterion a higher rate is better; for a negative criterion (what "
            "an answer should avoid) a lower rate is better.",
        ],
        methods=(
            Method(
                "Share of criteria met, by polarity and kind",
                "The share of criteria met per model, for positive and negative criteria, "
                "factual and presentation.",
                f"Judgments whose criterion was met over the judgments of the scored answers, "
                f"per model and polarity x kind, counted in SQL ({judgments:,} judgments).",
                Fidelity.PAPER,
            ),
            Method(
                "Which judgments count",
                NOT_REPORTED,
                "Only the judgments of answers with a score: an answer with an errored "
                "judgment is left out of the rates and counted under Missing scores.",
                Fidelity.OURS,
            ),
        ),
        n=f"{judgments:,} judgments of {_models_n(data)}",
    )


BELOW_QUERY = {"band": BELOW.key}


def _below(data: BenchmarkData) -> Table:
    scores = data.scores
    low = scores[scores["score"] < THRESHOLD].groupby("model").size()
    scored = scores.groupby("model").size()
    rows = []
    for model in data.models:
        n, below = int(scored.get(model.id, 0)), int(low.get(model.id, 0))
        rows.append(
            {
                "model": model.label,
                "below": below,
                "scored": n,
                "share": 100 * below / n if n else None,
                ANSWERS: {"model": model.id},
            }
        )
    total = len(scores)
    below = int((scores["score"] < THRESHOLD).sum())
    rows.append(
        {
            "model": "All models",
            "below": below,
            "scored": total,
            "share": 100 * below / total if total else None,
            ANSWERS: {},
        }
    )
    return Table(
        name="below-65",
        title="Answers scoring below 65%, per model",
        columns=[
            Column("model", "Model", answers={}),
            Column("below", "Answers below 65%", "int", answers=BELOW_QUERY),
            Column("scored", "Scored answers", "int", answers=SCORED_QUERY),
            Column("share", "Share below 65%", "percent", 1, answers=BELOW_QUERY),
        ],
        rows=rows,
        notes=["An answer is below 65% when its score is under 0.65 (not equal to it)."],
        methods=(
            Method(
                "Answers below 65%",
                "The answers that score below 65%, counted per model.",
                f"Score under {THRESHOLD:.2f} (strictly), per model and for all models "
                f"together; {total:,} scored answers.",
                Fidelity.PAPER,
            ),
        ),
        n=_models_n(data),
    )


def _low_questions(data: BenchmarkData, means: pd.DataFrame) -> Table:
    by_question = means.groupby("question").agg(
        mean=("mean", "mean"), models=("model", "nunique"), answers=("samples", "sum")
    )
    by_question["mean"] = by_question["mean"].round(MEAN_DIGITS)
    low = by_question[by_question["mean"] < THRESHOLD].join(
        data.questions[["external_id", "topic"]]
    )
    low = low.sort_values(["mean", "external_id"])
    rows = [
        {
            "question": r.external_id,
            "topic": r.topic,
            "mean": 100 * r.mean,
            "models": int(r.models),
            "answers": int(r.answers),
            "question_id": int(q),
            ANSWERS: {"question": int(q)},
        }
        for q, r in zip(low.index, low.itertuples(index=False), strict=True)
    ]
    return Table(
        name="low-questions",
        title="Questions whose mean over all models is below 65%",
        columns=[
            Column("question", "Question", answers={}),
            Column("topic", "Topic"),
            Column("mean", "Mean over models", "percent", 1, answers={}),
            Column("models", "Models", "int"),
            Column("answers", "Scored answers", "int", answers=SCORED_QUERY),
            Column("question_id", "Question id", "int"),
        ],
        rows=rows,
        notes=[
            "A question's mean over all models: each model's mean of its samples of the "
            "question first, then the mean over the models that have a scored answer to it "
            "(each model weighs the same).",
            f"{len(rows):,} of {len(by_question):,} questions with a scored answer.",
        ],
        methods=(
            Method(
                "Questions below 65% over all models",
                "Questions whose answers score below 65%.",
                "A question's mean over all models: each model's mean of its samples of the "
                "question, then the mean over the models (each model weighs the same); "
                f"under {THRESHOLD:.2f}. {len(by_question):,} questions with a scored answer.",
                Fidelity.OURS,
            ),
        ),
        n=_models_n(data),
    )


def _low_responses(data: BenchmarkData) -> Table:
    scores = data.scores
    low = scores[scores["score"] < THRESHOLD].join(data.questions["external_id"], on="question")
    names = {m.id: m.label for m in data.models}
    low = low.assign(model_name=low["model"].map(names)).sort_values(
        ["model_name", "score", "external_id", "sample"]
    )
    rows = [
        {
            "response": int(r.response),
            "model": r.model_name,
            "question": r.external_id,
            "topic": r.topic,
            "sample": int(r.sample),
            "score": 100 * r.score,
        }
        for r in low[
            ["response", "model_name", "external_id", "topic", "sample", "score"]
        ].itertuples(index=False)
    ]
    return Table(
        name="low-responses",
        title="Answers scoring below 65%",
        columns=[
            Column("response", "Answer id", "int"),
            Column("model", "Model"),
            Column("question", "Question"),
            Column("topic", "Topic"),
            Column("sample", "Sample", "int"),
            Column("score", "Score", "percent", 1),
        ],
        rows=rows,
        notes=["Sample: the answer's sample index in the sampling run (from 0)."],
        methods=(
            Method(
                "The answers below 65%, listed",
                NOT_REPORTED,
                "Every answer behind the count of answers below 65%, each linked to its judgments.",
                Fidelity.OURS,
            ),
        ),
        n=f"{len(rows):,} of {_models_n(data)}",
    )


# --- tests -------------------------------------------------------------------------------------


def _adjusted(rows: list[dict]) -> None:
    """The Benjamini-Hochberg adjusted p of each row with a p, over those rows (in place)."""
    adjusted = significance.benjamini_hochberg([row["p"] for row in rows])
    for row, value in zip(rows, adjusted, strict=True):
        row["p_bh"] = value


def _family_note(rows: list[dict]) -> str:
    tested = sum(1 for r in rows if r["p"] is not None)
    return (
        f"This family holds {len(rows):,} test{'s' if len(rows) != 1 else ''}, "
        f"{tested:,} with a p-value. p-values are unadjusted, except the BH column: "
        "Benjamini-Hochberg over this family's p-values (scipy.stats.false_discovery_control), "
        "which the paper does not report."
    )


def _test_columns(statistic: str) -> list[Column]:
    return [
        Column("statistic", statistic, "float", 3),
        Column("p", "p", "float", 4),
        Column("p_bh", "p (BH)", "float", 4),
    ]


def _undefined(reason: str) -> dict:
    return {"statistic": None, "p": None, "note": NOT_ENOUGH + reason}


def _too_few(n: int, what: str) -> dict:
    return {
        "statistic": TooFew(n),
        "p": None,
        "note": f"Too few points: {what} (at least {MIN_POINTS} needed).",
    }


def _tested(result: significance.Outcome, note: str = "") -> dict:
    return {"statistic": result.statistic, "p": result.p, "note": note}


def wilcoxon_pair(x: np.ndarray, y: np.ndarray) -> dict:
    result = significance.wilcoxon(x, y, minimum=MIN_POINTS)
    n = result.n
    if too_few(n):
        return _too_few(n, f"{n} question{'s' if n != 1 else ''} both models answered")
    if result.undefined is Undefined.NO_DIFFERENCE:
        return _undefined(f"every one of the {n} differences is zero.")
    return _tested(result)


def default_pairs(models: list[Model]) -> list[tuple[int, int]]:
    """Every pair of models of one family (versions and sizes of a family), by name."""
    pairs = []
    by_family = itertools.groupby(
        sorted(models, key=lambda m: (m.family, m.name)), key=lambda m: m.family
    )
    for _family, members in by_family:
        pairs += [(a.id, b.id) for a, b in itertools.combinations(list(members), 2)]
    return pairs


def _wilcoxon(data: BenchmarkData, means: pd.DataFrame, pairs, *, default: bool) -> Table:
    wide = means.pivot(index="question", columns="model", values="mean")
    rows = []
    for a, b in pairs:
        if a in wide and b in wide:
            both = wide[[a, b]].dropna()
            x, y = both[a].to_numpy(), both[b].to_numpy()
        else:
            x = y = np.array([])
        result = wilcoxon_pair(x, y)
        rows.append(
            {
                "pair": f"{data.model(a).label} vs {data.model(b).label}",
                "mean_a": _percent(x.mean()) if len(x) else None,
                "mean_b": _percent(y.mean()) if len(y) else None,
                **result,
                "n": len(x),
            }
        )
    _adjusted(rows)
    return Table(
        name="wilcoxon",
        title="Wilcoxon signed-rank test between pairs of models",
        columns=[
            Column("pair", "Models (first vs second)"),
            Column("mean_a", "First: mean", "percent", 1),
            Column("mean_b", "Second: mean", "percent", 1),
            *_test_columns("W"),
            Column("n", "Questions", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            "Over per-question means (samples averaged), on the questions both models answered; "
            "scipy.stats.wilcoxon, two-sided, zero differences dropped (Wilcoxon's method), "
            "exact p for up to 50 pairs without ties, else the normal approximation. Means "
            "here are over those questions only.",
            _family_note(rows),
        ],
        methods=(
            Method(
                "Wilcoxon signed-rank between models",
                "Wilcoxon signed-rank tests between the versions and sizes of one model family.",
                "scipy.stats.wilcoxon, two-sided, over per-question means (samples averaged) "
                "on the questions both models answered; zero differences dropped. Pairs: "
                + (
                    "every pair of models of one family."
                    if default
                    else f"{len(pairs):,} pairs the researcher chose."
                ),
                Fidelity.PAPER if default else Fidelity.CHOSEN,
            ),
            BH_METHOD,
        ),
        n=_models_n(data),
    )


def _kruskal(data: BenchmarkData, means: pd.DataFrame) -> Table:
    rows = []
    for model in data.models:
        mine = means[means["model"] == model.id]
        groups = [g["mean"].to_numpy() for _t, g in mine.groupby("topic")]
        row = {"model": model.label, "topics": len(groups), "n": len(mine)}
        row[ANSWERS] = {"model": model.id} | SCORED_QUERY
        result = significance.kruskal(groups)
        if result.undefined is Undefined.TOO_FEW:
            row |= _undefined(
                f"{len(groups)} topic{'s' if len(groups) != 1 else ''} with "
                "scored questions (at least 2 needed)."
            )
        elif result.undefined is Undefined.CONSTANT:
            row |= _undefined("every per-question mean is the same.")
        else:
            row |= _tested(result)
        rows.append(row)
    _adjusted(rows)
    return Table(
        name="kruskal",
        title="Kruskal-Wallis test across topics, per model",
        columns=[
            Column("model", "Model", answers={}),
            *_test_columns("H"),
            Column("topics", "Topics", "int"),
            Column("n", "Questions", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            "Whether a model's per-question means differ between topics "
            "(scipy.stats.kruskal, with the tie correction).",
            _family_note(rows),
        ],
        methods=(
            Method(
                "Kruskal-Wallis across topics",
                "A Kruskal-Wallis test of whether scores differ across topics.",
                "Per model, over the model's per-question means (samples averaged), grouped "
                "by topic; scipy.stats.kruskal with the tie correction.",
                Fidelity.OURS,
            ),
            BH_METHOD,
        ),
        n=_models_n(data),
    )


def _ks(data: BenchmarkData, means: pd.DataFrame, *, by: str) -> Table:
    """Per model, the questions with a label (`by`: prior, sensemaking or guidance) against
    those without it: each label against its absence, as the paper compares them."""
    name, title, first = {
        "prior": (
            "ks-prior",
            "Kolmogorov-Smirnov test: prior attempt mentioned or not",
            "Mentions a prior attempt",
        ),
        "sensemaking": (
            "ks-sensemaking",
            "Kolmogorov-Smirnov test: asks for sensemaking or not",
            "Asks for sensemaking",
        ),
        "guidance": (
            "ks-guidance",
            "Kolmogorov-Smirnov test: asks for guidance or not",
            "Asks for guidance",
        ),
    }[by]
    second = "Does not"
    rows = []
    for model in data.models:
        mine = means[means["model"] == model.id]
        labelled = mine[mine["verified"]]
        a, b = labelled[labelled[by]], labelled[~labelled[by]]
        row = {
            "model": model.label,
            "n1": len(a),
            "n2": len(b),
            "left_out": len(mine) - len(labelled),
        }
        result = significance.kolmogorov_smirnov(a["mean"].to_numpy(), b["mean"].to_numpy())
        if result.undefined is not None:
            empty = first if result.undefined is Undefined.FIRST_EMPTY else second
            row |= _undefined(f"no question in the group “{empty}”.")
        else:
            row |= _tested(result)
        rows.append(row)
    _adjusted(rows)
    left_out = int(data.questions["verified"].eq(False).sum())
    # The paper's comparison of the needs: each against its absence, never one against the other.
    paper = (
        []
        if by == "prior"
        else [
            f"As in the paper: the questions asking for {by} against those that do not (each need "
            "against its absence). The two needs are labelled independently, so a question asking "
            "for both is in the first group of both tables, and one asking for neither in the "
            "second of both."
        ]
    )
    return Table(
        name=name,
        title=title,
        columns=[
            Column("model", "Model"),
            *_test_columns("D"),
            Column("n1", f"{first}: questions", "int"),
            Column("n2", f"{second}: questions", "int"),
            Column("left_out", "Left out: no verified label", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            *paper,
            "Two-sample, two-sided (scipy.stats.ks_2samp, exact where it can be) over the "
            "model's per-question means. Questions whose labels are not verified (or resolved) "
            f"are left out: {left_out:,} of the run's {len(data.questions):,} questions.",
            _family_note(rows),
        ],
        methods=(
            Method(
                f"Kolmogorov-Smirnov: {first.lower()} or not",
                f"Per model, a two-sample Kolmogorov-Smirnov test of the questions whose label "
                f"says “{first.lower()}” against those whose label does not.",
                "scipy.stats.ks_2samp, two-sided (exact where it can be), over the model's "
                "per-question means; questions without verified labels left out "
                f"({left_out:,} of {len(data.questions):,}).",
                Fidelity.PAPER,
            ),
            BH_METHOD,
        ),
        n=_models_n(data),
    )


def _spread(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group of per-question means: their mean, median, interquartile range (75th minus
    25th percentile, linear interpolation) and number."""
    found = descriptive.spread(frame, by=by, value="mean")
    return found.rename(columns={"count": "questions"})


def _count(n: int, unit: tuple[str, str]) -> str:
    return f"{n:,} {unit[0] if n == 1 else unit[1]}"


def spearman_across(x: np.ndarray, y: np.ndarray, *, what: str, unit=TOPICS) -> dict:
    """Spearman's rho of x with y over n points (topics, or (model, topic) cells): with its p,
    which over fewer than MEANINGFUL_POINTS points is kept but said not to be meaningful."""
    result = significance.spearman(x, y, minimum=MIN_POINTS)
    n = result.n
    if too_few(n):
        return _too_few(n, f"{_count(n, unit)} with scored questions")
    if result.undefined is not None:
        side = "mean" if result.undefined is Undefined.FIRST_CONSTANT else what
        return _undefined(f"every {unit[0]} has the same {side}.")
    note = ""
    if n < MEANINGFUL_POINTS:
        note = (
            f"Over {_count(n, unit)}, fewer than {MEANINGFUL_POINTS}: the p is not meaningful "
            "(kept as data); read rho alone."
        )
    return _tested(result, note)


def _spearman_columns(first: list[Column]) -> list[Column]:
    return [
        *first,
        Column("statistic", "Rho", "float", 3),
        Column("p", "p", "float", 4, bounded=True),
        Column("p_bh", "p (BH)", "float", 4, bounded=True),
        Column("n", "n", "int"),
        Column("unit", "Unit"),
        Column("method", "Method"),
        Column("note", "Note"),
    ]


def _spearman(data: BenchmarkData, means: pd.DataFrame) -> Table:
    """As published: over (model, topic) cells, a cell's mean with its IQR and its median."""
    cells = _spread(means, ["model", "topic"])
    rows = []
    for key, what in (("iqr", "IQR"), ("median", "median")):
        result = spearman_across(
            cells["mean"].to_numpy(), cells[key].to_numpy(), what=what, unit=CELLS
        )
        rows.append(
            {
                "relation": f"A cell's mean and its {what}",
                **result,
                "n": len(cells),
                "unit": CELLS[1],
                "method": AS_PUBLISHED,
            }
        )
    _adjusted(rows)
    single = int((cells["questions"] == 1).sum())
    return Table(
        name="spearman",
        title="Spearman correlation over (model, topic) cells: a cell's mean with its IQR and "
        "its median",
        columns=_spearman_columns([Column("relation", "Between")]),
        rows=rows,
        notes=[
            "As published, as the paper's own numbers require: its rho of -0.73 (mean with "
            "IQR) and -0.61 (mean with median), both p < 0.001, need more points than nine "
            "topics give (over nine points those rhos have p 0.026 and 0.081), so the unit is the "
            "(model, topic) cell. A cell holds one model's per-question means (samples "
            "averaged) in one topic: their mean, their median and their interquartile range "
            "(75th minus 25th percentile, linear interpolation). scipy.stats.spearmanr, "
            "two-sided.",
            f"Every cell with a scored question counts: {_count(len(cells), CELLS)}, "
            f"{single:,} of them with one question (an IQR of 0, a median equal to the mean).",
            f"A rho over fewer than {MEANINGFUL_POINTS} points keeps its p as data, and its "
            "note says the p is not meaningful. A p too small to show reads “< 0.0001”.",
            _family_note(rows),
        ],
        methods=(
            Method(
                "Spearman: a mean with its IQR and its median",
                "Spearman's rho of the mean with the IQR (-0.73) and with the median (-0.61), "
                "both p < 0.001: more points than nine topics can give, so over (model, topic) "
                "cells.",
                f"Over {_count(len(cells), CELLS)}: each cell's mean of per-question means "
                "against its IQR and its median; scipy.stats.spearmanr, two-sided; a rho over "
                f"fewer than {MEANINGFUL_POINTS} points says its p is not meaningful.",
                Fidelity.PAPER,
            ),
            BH_METHOD,
        ),
        n=f"{_count(len(cells), CELLS)} of {_models_n(data)}",
    )


def _spearman_topics(data: BenchmarkData, means: pd.DataFrame) -> Table:
    """Added by Assay: the same across topics, all models pooled and per model."""
    scopes = [("All models, pooled", means)]
    scopes += [(m.label, means[means["model"] == m.id]) for m in data.models]
    rows = []
    for label, frame in scopes:
        spread = _spread(frame, ["topic"])
        for key, what in (("iqr", "IQR"), ("median", "median")):
            result = spearman_across(spread["mean"].to_numpy(), spread[key].to_numpy(), what=what)
            rows.append(
                {
                    "scope": label,
                    "relation": f"Topic mean and topic {what}",
                    **result,
                    "n": len(spread),
                    "unit": TOPICS[1],
                    "method": ADDED,
                }
            )
    _adjusted(rows)
    return Table(
        name="spearman-topics",
        title="Spearman correlation across topics, pooled and per model (added by Assay)",
        columns=_spearman_columns([Column("scope", "Models"), Column("relation", "Between")]),
        rows=rows,
        notes=[
            "Added by Assay, not the paper's test (which is over (model, topic) cells, above). "
            "Per topic, over per-question means (samples averaged): their mean, their median "
            "and their interquartile range (75th minus 25th percentile, linear interpolation); "
            "pooled, every model's per-question means of the topic together. "
            "scipy.stats.spearmanr, two-sided.",
            "The published design has nine topics: fewer than "
            f"{MEANINGFUL_POINTS} points, so each p here is kept as data, and its note says it "
            "is not meaningful.",
            _family_note(rows),
        ],
        methods=(
            Method(
                "Spearman across topics (added)",
                NOT_REPORTED,
                "Over topics, pooled and per model: a topic's mean against its IQR and its "
                "median; with nine topics each p is kept but said not to be meaningful.",
                Fidelity.OURS,
            ),
            BH_METHOD,
        ),
        n=_models_n(data),
    )


def shape(values: np.ndarray, *, measure: str) -> dict:
    """Skewness (Fisher-Pearson g1) or excess kurtosis of `values`, with D'Agostino's test."""
    if measure == "skewness":
        found, minimum = significance.skewness(values), significance.MIN_SKEWTEST
    else:
        found, minimum = significance.kurtosis(values), significance.MIN_KURTOSISTEST
    n = found.n
    if found.value is None:
        too_few = found.undefined is Undefined.TOO_FEW
        reason = f"{n} answer{'s' if n != 1 else ''}" if too_few else "every score is the same"
        return {**_undefined(reason + "."), "z": None}
    if found.undefined is Undefined.TOO_FEW:
        note = f"No p: the test needs at least {minimum} answers."
        return {"statistic": found.value, "z": None, "p": None, "note": note}
    under = significance.KURTOSISTEST_APPROXIMATE_UNDER
    note = f"The test is approximate under {under} answers." if found.approximate else ""
    return {"statistic": found.value, "z": found.z, "p": found.p, "note": note}


def _shape(data: BenchmarkData, *, measure: str) -> Table:
    by_model = {model: frame["score"].to_numpy() for model, frame in data.scores.groupby("model")}
    rows = []
    for model in data.models:
        values = by_model.get(model.id, np.array([]))
        rows.append(
            {
                "model": model.label,
                **shape(values, measure=measure),
                "n": len(values),
                ANSWERS: {"model": model.id} | SCORED_QUERY,
            }
        )
    _adjusted(rows)
    if measure == "skewness":
        title = "Skewness of the answers' scores, per model"
        label, test = "Skewness (g1)", "scipy.stats.skew with bias=True: the Fisher-Pearson "
        test += "coefficient g1; p from D'Agostino's test (scipy.stats.skewtest)."
    else:
        title = "Excess kurtosis of the answers' scores, per model"
        label, test = "Excess kurtosis", "scipy.stats.kurtosis with fisher=True (a normal "
        test += "distribution has 0) and bias=True; p from the Anscombe-Glynn test "
        test += "(scipy.stats.kurtosistest)."
    return Table(
        name=measure,
        title=title,
        columns=[
            Column("model", "Model", answers={}),
            Column("statistic", label, "float", 3),
            Column("z", "z", "float", 3),
            Column("p", "p", "float", 4),
            Column("p_bh", "p (BH)", "float", 4),
            Column("n", "Answers", "int", answers={}),
            Column("note", "Note"),
        ],
        rows=rows,
        methods=(
            Method(
                title,
                f"The {measure} of each model's score distribution.",
                f"{label} over each model's answer scores. " + test.split(";")[0] + ".",
                Fidelity.PAPER,
            ),
            Method(
                f"A p-value for the {measure}",
                NOT_REPORTED,
                "D'Agostino's skewness test (scipy.stats.skewtest)"
                if measure == "skewness"
                else "The Anscombe-Glynn kurtosis test (scipy.stats.kurtosistest)",
                Fidelity.OURS,
            ),
            BH_METHOD,
        ),
        notes=[f"Over each model's answer scores. {test}", _family_note(rows)],
        n=_models_n(data),
    )


# --- figures -----------------------------------------------------------------------------------


def _histogram_table(
    name,
    title,
    data: BenchmarkData,
    values: dict[int, np.ndarray],
    edges: list[float],
    unit: str,
    note: str,
    methods: tuple[Method, ...],
    *,
    of_answers: bool = False,
) -> Table:
    """`of_answers`: the values are answers' scores, and each bin links to its answers."""
    rows = []
    for model in data.models:
        mine = values.get(model.id, np.array([]))
        counts, _ = np.histogram(mine, bins=edges)
        for low, high, count in zip(edges[:-1], edges[1:], counts, strict=True):
            rows.append(
                {
                    "model": model.label,
                    "low": low,
                    "high": high,
                    "count": int(count),
                    "share": 100 * count / len(mine) if len(mine) else None,
                    **(
                        {ANSWERS: {"model": model.id, "band": bin_band(low).key}}
                        if of_answers
                        else {}
                    ),
                }
            )
    return Table(
        name=name,
        title=title,
        columns=[
            Column("model", "Model"),
            Column("low", "Bin from", "float", 2),
            Column("high", "Bin to", "float", 2),
            Column("count", unit, "int", answers={}),
            Column("share", f"Share of the model's {unit.lower()}", "percent", 1),
        ],
        rows=rows,
        notes=[note, "Each bin holds its lower edge, not its upper one; the last bin holds both."],
        n=_models_n(data),
        methods=(*methods, BINS_METHOD),
    )


def _offline_note(data: BenchmarkData) -> str:
    return OFFLINE_NOTE if any(m.offline for m in data.models) else ""


def _histogram_figure(table: Table, data, values, edges, *, xlabel, ylabel) -> Figure:
    series = {m.label: values.get(m.id, np.array([])) for m in data.models}
    draw = functools.partial(
        plots.histograms,
        title=table.title,
        series=series,
        bins=edges,
        xlabel=xlabel,
        ylabel=ylabel,
        footnote=_offline_note(data),
    )
    return Figure(table, draw)


def _figures(data: BenchmarkData, means: pd.DataFrame) -> dict[str, Figure]:
    figures = {}
    scores = {m: f["score"].to_numpy() for m, f in data.scores.groupby("model")}
    table = _histogram_table(
        "figure-3",
        "Distribution of answer scores per model (Figure 3)",
        data,
        scores,
        SCORE_BINS,
        "Answers",
        "Every scored answer, in bins of 0.05.",
        (
            Method(
                "Distribution of answer scores (Figure 3)",
                "A histogram of each model's answer scores.",
                "Every scored answer's score, per model.",
                Fidelity.PAPER,
            ),
        ),
        of_answers=True,
    )
    figures[table.name] = _histogram_figure(
        table, data, scores, SCORE_BINS, xlabel="Score", ylabel="Answers"
    )
    question_means = {m: f["mean"].to_numpy() for m, f in means.groupby("model")}
    table = _histogram_table(
        "figure-4",
        "Distribution of per-question mean scores per model (Figure 4)",
        data,
        question_means,
        SCORE_BINS,
        "Questions",
        "A question's mean over the model's samples of it, in bins of 0.05.",
        (
            Method(
                "Distribution of per-question means (Figure 4)",
                "A histogram of each model's per-question mean scores.",
                "Each question's mean over the model's samples of it, per model.",
                Fidelity.PAPER,
            ),
        ),
    )
    figures[table.name] = _histogram_figure(
        table,
        data,
        question_means,
        SCORE_BINS,
        xlabel="Mean score of a question",
        ylabel="Questions",
    )
    figures["figure-5"] = _topic_figure(data, means)
    sds = {m: f["sd"].dropna().to_numpy() for m, f in means.groupby("model")}
    table = _histogram_table(
        "figure-6",
        "Distribution of the SD across samples of a question, per model (Figure 6)",
        data,
        sds,
        SD_BINS,
        "Questions",
        "The sample SD (ddof=1) of a question's samples' scores, for questions with two "
        "samples or more, in bins of 0.05.",
        (
            Method(
                "Distribution of the SD across samples (Figure 6)",
                "A histogram of the standard deviation of each question's scores across the "
                "model's samples; the paper does not say which standard deviation.",
                f"The sample SD (ddof={SD_DDOF}) of a question's samples' scores, for "
                "questions with two samples or more.",
                Fidelity.OURS,
            ),
        ),
    )
    figures[table.name] = _histogram_figure(
        table, data, sds, SD_BINS, xlabel="SD of a question's scores", ylabel="Questions"
    )
    return figures


def _topic_figure(data: BenchmarkData, means: pd.DataFrame) -> Figure:
    topic_means = means.groupby(["topic", "model"])["mean"].agg(["mean", "size"])
    scored = set(means["topic"])
    topics = [name for _slug, name in data.topics if name in scored]
    rows, series = [], {m.label: [] for m in data.models}
    for topic in topics:
        for model in data.models:
            found = (topic, model.id) in topic_means.index
            mean = 100 * topic_means.loc[(topic, model.id), "mean"] if found else None
            questions = int(topic_means.loc[(topic, model.id), "size"]) if found else 0
            rows.append(
                {"topic": topic, "model": model.label, "mean": mean, "questions": questions}
            )
            series[model.label].append(0.0 if mean is None else float(mean))
    table = Table(
        name="figure-5",
        title="Mean score per topic per model (Figure 5)",
        columns=[
            Column("topic", "Topic"),
            Column("model", "Model"),
            Column("mean", "Mean score", "percent", 1),
            Column("questions", "Questions", "int"),
        ],
        rows=rows,
        notes=[
            "Per-question means (samples averaged) averaged over the topic's questions, in "
            "percent, as in Table 3, for the topics with a scored answer. A model with no "
            "scored question in a topic is drawn at 0 and shown as a dash here."
        ],
        methods=(
            Method(
                "Mean score per topic and model (Figure 5)",
                "Each model's mean score in each topic.",
                "Per-question means (samples averaged) averaged over the topic's questions, "
                "as in Table 3.",
                Fidelity.PAPER,
            ),
        ),
        n=_models_n(data),
    )
    draw = functools.partial(
        plots.grouped_bars,
        title=table.title,
        categories=topics,
        series=series,
        xlabel="Topic",
        ylabel="Mean score (%)",
        footnote=_offline_note(data),
    )
    return Figure(table, draw)


# --- missing scores, calibration, provenance ----------------------------------------------------


def _missing_table(data: BenchmarkData) -> Table:
    names = {m.id: m.label for m in data.models}
    rows = [
        {
            "model": names[r["model"]],
            "answers": r["answers"],
            "scored": r["scored"],
            "missing": r["missing"],
            **{key: r[key] for key, _label in MISSING_REASONS},
        }
        for r in data.missing
    ]
    return Table(
        name="missing",
        title="Answers without a score, by why, per model",
        columns=[
            Column("model", "Model"),
            Column("answers", "Answers", "int"),
            Column("scored", "Scored", "int"),
            Column("missing", "Without a score", "int"),
            *[Column(key, label[:1].upper() + label[1:], "int") for key, label in MISSING_REASONS],
        ],
        rows=rows,
        notes=[
            "Every answer of the sampling run. An answer has no score while any of its "
            "judgments is an error (never counted as not met: retry it), while the sampling "
            "run has not finished it, or until it is graded.",
        ],
        methods=(
            Method(
                "Answers without a score",
                NOT_REPORTED,
                "Every answer of the sampling run: scored, or why not (an errored judgment, "
                "not answered, not graded yet). An errored judgment is never counted as not met.",
                Fidelity.OURS,
            ),
        ),
        n=f"{sum(r['answers'] for r in rows):,} answers from {len(rows):,} models",
    )


def _errors_table(data: BenchmarkData) -> Table:
    return Table(
        name="errors",
        title="Errored judgments, by kind of error",
        columns=[
            Column("label", "Error"),
            Column("judgments", "Judgments", "int"),
            Column("answers", "Answers", "int"),
            Column("kind", "Kind"),
        ],
        rows=[dict(r) for r in data.errors],
        notes=["An answer with any errored judgment has no score until the judgment is retried."],
        methods=(
            Method(
                "Errored judgments",
                NOT_REPORTED,
                "The grader's answers that could not be used (unparseable, a criterion missed "
                "or repeated, after two re-asks), by kind.",
                Fidelity.OURS,
            ),
        ),
        n=f"{sum(r['judgments'] for r in data.errors):,} errored judgments",
    )


def calibration_r(c: CalibrationSummary) -> float | None:
    """The auto-rater's Pearson r with the experts over a calibration's answers; None when
    it is undefined or rests on fewer than MIN_POINTS answers."""
    correlation = c.score.correlation
    return correlation.r if correlation and not too_few(c.score.n) else None


def _calibration_table(data: BenchmarkData) -> Table:
    rows = []
    for c in data.calibrations:
        correlation, agreement = c.score.correlation, c.agreement.agreement
        # Fewer answers (or labels) than MIN_POINTS: the number is not shown, n is.
        if too_few(c.score.n):
            correlation = None
        few_labels = too_few(c.agreement.n)
        rows.append(
            {
                "set": c.set_name,
                "r": TooFew(c.score.n) if too_few(c.score.n) else calibration_r(c),
                "p": correlation.p if correlation else None,
                "low": correlation.low if correlation else None,
                "high": correlation.high if correlation else None,
                "answers": c.score.n,
                "accuracy": 100 * agreement.accuracy if agreement and not few_labels else None,
                "kappa": TooFew(c.agreement.n)
                if few_labels
                else (agreement.kappa if agreement else None),
                "f1": agreement.f1_macro if agreement and not few_labels else None,
                "pairs": c.agreement.n,
                "left_out": c.left_out,
                "calibration_id": c.id,
            }
        )
    return Table(
        name="calibration",
        title="Calibration against experts' final labels",
        columns=[
            Column("set", "Calibration set"),
            Column("r", "Pearson r of scores", "float", 3),
            Column("p", "p", "float", 4),
            Column("low", "95% CI low", "float", 3),
            Column("high", "95% CI high", "float", 3),
            Column("answers", "Answers compared", "int"),
            Column("accuracy", "Label accuracy", "percent", 1),
            Column("kappa", "Cohen's kappa", "float", 3),
            Column("f1", "Macro F1", "float", 3),
            Column("pairs", "Criterion labels compared", "int"),
            Column("left_out", "Labels left out", "int"),
            Column("calibration_id", "Calibration id", "int"),
        ],
        rows=rows,
        notes=[
            "Over all criteria, as the calibration report computes them: Pearson r of answer "
            "scores (auto-rater against experts' final labels) with its 95% interval; accuracy, "
            "Cohen's kappa and the macro F1 of met and not met per criterion label. A dash: "
            f"not enough data; over fewer than {MIN_POINTS} answers (or labels) the page says "
            "too few points. Labels are left out when the experts have not settled them or "
            "the auto-rater's judgment is missing, pending or an error.",
        ],
        methods=(
            Method(
                "The auto-rater against experts",
                "Experts graded a sample of answers by hand; the auto-rater's agreement with "
                "them validated it.",
                "Pearson r of answer scores (auto-rater against the experts' settled labels), "
                "with p and a 95% interval, over all criteria; label accuracy.",
                Fidelity.PAPER,
            ),
            Method(
                "Cohen's kappa and macro F1 of labels",
                NOT_REPORTED,
                "Cohen's kappa (scikit-learn) and HealthBench's meta-evaluation F1 (macro over "
                "met and not met) of the criterion labels.",
                Fidelity.OURS,
            ),
        ),
        n=f"{len(rows):,} calibration{'s' if len(rows) != 1 else ''} of this grading run",
    )


def _rubrics_table(data: BenchmarkData) -> Table:
    rubrics = data.rubrics.join(data.questions[["external_id", "topic"]], on="question")
    answers = data.scores.groupby("rubric").size()
    rows = [
        {
            "question": r.external_id,
            "topic": r.topic,
            "version": int(r.version),
            "rubric": int(r.rubric),
            "answers": int(answers.get(r.rubric, 0)),
        }
        for r in rubrics.sort_values(["external_id", "version"]).itertuples(index=False)
    ]
    return Table(
        name="rubric-versions",
        title="The rubric versions the scores were computed against",
        columns=[
            Column("question", "Question"),
            Column("topic", "Topic"),
            Column("version", "Rubric version", "int"),
            Column("rubric", "Rubric id", "int"),
            Column("answers", "Scored answers", "int"),
        ],
        rows=rows,
        notes=["Each judgment pins the rubric version it graded; a score uses that version."],
        methods=(
            Method(
                "Rubric versions",
                NOT_REPORTED,
                "The rubric version each score was computed against (each judgment pins the "
                "version it graded).",
                Fidelity.OURS,
            ),
        ),
        n=f"{len(rows):,} rubric versions of {data.rubrics['question'].nunique():,} questions",
    )


def benchmark_report(
    data: BenchmarkData,
    *,
    pairs: list[tuple[int, int]] | None = None,
    table1: list[int] | None = None,
) -> BenchmarkReport:
    """Every table and figure of the report, from the data; `pairs` of model ids for the
    Wilcoxon tests (default: every pair of models of one family); `table1`, model ids to show
    in Table 1 instead of their families' newest (at most one per family)."""
    models = data.models_by_id
    for a, b in pairs or []:
        if a not in models or b not in models:
            raise AnalysisError("Both models of a pair must have answered in this sampling run.")
        if a == b:
            raise AnalysisError("A model cannot be compared with itself.")
    for model_id in table1 or []:
        if model_id not in models:
            raise AnalysisError("A model of Table 1 must have answered in this sampling run.")
    picks = table1_picks(data.models, table1)
    chosen = list(pairs) if pairs else default_pairs(data.models)
    means = per_question(data)
    missing = sum(r["missing"] for r in data.missing)
    answers = sum(r["answers"] for r in data.missing)
    judgments = int(data.met["judgments"].sum()) if len(data.met) else 0
    versions = data.rubrics.groupby("version")["question"].nunique()
    report = BenchmarkReport(
        run=data.run,
        n=(
            f"{len(data.scores):,} scored answers of {answers:,} ({missing:,} without a score), "
            f"{data.scores['question'].nunique():,} questions, {len(data.models):,} models, "
            f"{judgments:,} judgments of the scored answers; {data.run.summary}"
        ),
        models=data.models,
        pairs=chosen,
        default_pairs=not pairs,
        calibrations=data.calibrations,
        rubric_versions=[(int(v), int(n)) for v, n in versions.items()],
        table1=picks,
        scored=len(data.scores),
        missing=missing,
        errored=sum(r["errored"] for r in data.missing),
        offline=any(m.offline for m in data.models) or data.run.grader_offline,
    )
    table3 = _table3(data, means)
    tables = [
        _headline(data, means),
        _table1(data, table3, picks),
        table3,
        _table4(data),
        _below(data),
        _low_questions(data, means),
        _low_responses(data),
        _wilcoxon(data, means, chosen, default=not pairs),
        _kruskal(data, means),
        _ks(data, means, by="prior"),
        _ks(data, means, by="sensemaking"),
        _ks(data, means, by="guidance"),
        _spearman(data, means),
        _spearman_topics(data, means),
        _shape(data, measure="skewness"),
        _shape(data, measure="kurtosis"),
        _missing_table(data),
        _errors_table(data),
        _calibration_table(data),
        _rubrics_table(data),
    ]
    report.tables = {table.name: table for table in tables}
    report.figures = _figures(data, means)
    report.settings = _settings(report)
    runs = run_methods(data.run)
    entries = report_entries(tables=report.tables, figures=report.figures, runs=runs)
    report.tables[METHOD_TABLE] = method_table(entries=entries, n=report.n)
    return report


PUBLISHED_SAMPLES = 5  # answers per question per model in the published benchmark


def _params(params) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params) or "none"


def run_methods(run: RunInfo) -> list[tuple[str, Method]]:
    """How the answers were asked for, how they were graded and scored: the report's rows
    that no one table holds."""
    samples = run.samples_per_item
    asked = Method(
        "How each model was asked",
        "The rewritten question alone, as the only user message, with no system message and "
        "each model's default parameters.",
        f"{run.sampling_prompt}; parameters: {_params(run.sampling_params)} (beyond a seed "
        "per call, which does not change what is asked). "
        + (" ".join(run.sampling_notes) or "The question alone, as published."),
        Fidelity.CHOSEN if run.sampling_notes else Fidelity.PAPER,
    )
    sampled = Method(
        "Answers per question and model",
        f"{PUBLISHED_SAMPLES} samples of every question from every model.",
        f"{samples} per question and model, each a separate call with its own seed.",
        Fidelity.PAPER if samples == PUBLISHED_SAMPLES else Fidelity.CHOSEN,
    )
    checklist = run.mode_key == GradingMode.CHECKLIST
    graded = Method(
        "How answers were graded",
        "An LLM auto-rater graded each answer against every criterion of its rubric in one "
        "call, explaining before each verdict, at temperature 0.",
        f"Grader {run.grader}; {run.prompt.lower()} prompt version {run.prompt_version}; "
        f"{run.mode}; parameters: {_params(run.grader_params)}. "
        + (" ".join(run.grading_notes) if run.grading_notes else ""),
        Fidelity.PAPER if checklist and not run.grading_notes else Fidelity.CHOSEN,
    )
    scored = Method(
        "Score of an answer",
        "Points earned over all the rubric's points: a positive criterion's points when met, "
        "a negative one's when avoided (a rubric of 43 points, 24 earned: 55.8%).",
        f"{SCORING_RULE} Against the rubric version each judgment pinned.",
        Fidelity.PAPER,
    )
    return [("answers", asked), ("answers", sampled), ("grading", graded), ("scores", scored)]


def _settings(report: BenchmarkReport) -> dict[str, dict]:
    """The settings of the statistics that have a choice of unit, weighting or rule."""
    spearman = report.tables["spearman"].rows
    return {
        "all-models-mean": {
            "weighting": "each model the same (the mean of the models' means)",
            "as_published": any(
                m.statistic == ALL_MODELS_MEAN and m.fidelity == Fidelity.PAPER
                for m in report.tables["table-3"].methods
            ),
        },
        "spearman": {
            "unit": CELLS[1],
            "n": spearman[0]["n"],
            "test": "scipy.stats.spearmanr, two-sided",
            "iqr": "75th minus 25th percentile, linear interpolation",
            "meaningful_p_from": MEANINGFUL_POINTS,
            "as_published": True,
        },
        "spearman-topics": {"unit": TOPICS[1], "as_published": False, "added_by_assay": True},
        "table-1": {
            "rule": "the chosen model, else the latest release date, else the newest added",
            "picks": {p.family: {"model": p.model.id, "rule": p.rule} for p in report.table1},
        },
    }


# --- cached, by fingerprint ---------------------------------------------------------------------


def benchmark_data_cached(*, run: GradingRun, fingerprint: str) -> BenchmarkData:
    """The run's data as of `fingerprint`, read once and kept in the cache."""
    key = f"analysis:benchmark-data:{run.pk}:{fingerprint}"
    data = cache.get(key)
    if data is None:
        data = benchmark_data(run=run)
        cache.set(key, data, CACHE_SECONDS)
    return data


def _pairs_key(pairs) -> str:
    return ",".join(f"{a}-{b}" for a, b in pairs) if pairs else "default"


def _table1_key(table1) -> str:
    return ",".join(str(i) for i in sorted(set(table1))) if table1 else "newest"


def benchmark_report_for(
    *,
    run: GradingRun,
    pairs: list[tuple[int, int]] | None = None,
    table1: list[int] | None = None,
) -> BenchmarkReport:
    """The report of the run's data as it is now: read and computed once per fingerprint
    (and choice of pairs and of Table 1's models), then kept in the cache until anything it
    reads changes."""
    return _report_at(run, benchmark_fingerprint(run=run), pairs, table1)


def _report_at(run: GradingRun, fingerprint: str, pairs, table1=None) -> BenchmarkReport:
    key = f"analysis:benchmark:{run.pk}:{fingerprint}:{_pairs_key(pairs)}:{_table1_key(table1)}"
    report = cache.get(key)
    if report is None:
        data = benchmark_data_cached(run=run, fingerprint=fingerprint)
        report = benchmark_report(data, pairs=pairs, table1=table1)
        cache.set(key, report, CACHE_SECONDS)
    return report


def benchmark_svg_for(*, run: GradingRun, name: str) -> str | None:
    """A figure's SVG, drawn once per fingerprint (matplotlib takes a few hundred ms)."""
    fingerprint = benchmark_fingerprint(run=run)
    key = f"analysis:benchmark-svg:{run.pk}:{fingerprint}:{name}"
    svg = cache.get(key)
    if svg is None:
        figure = _report_at(run, fingerprint, None).figures.get(name)
        if figure is None:
            return None
        svg = figure.svg()
        cache.set(key, svg, CACHE_SECONDS)
    return svg


def pairs_parse(values: list[str], models: list[Model]) -> tuple[list[tuple[int, int]], list[str]]:
    """`pair=<id>-<id>` values as model id pairs, and a message for each one refused."""
    known = {m.id for m in models}
    pairs, refused = [], []
    for value in values:
        first, dash, second = value.partition("-")
        if not (dash and _whole(first) and _whole(second)):
            refused.append(f"“{value}” is not a pair: write two model ids joined by a dash.")
            continue
        pair = (int(first), int(second))
        if pair[0] == pair[1]:
            refused.append(f"“{value}” pairs a model with itself.")
        elif not set(pair) <= known:
            refused.append(f"“{value}” names a model that has no answers in this sampling run.")
        elif pair not in pairs:
            pairs.append(pair)
    return pairs, refused
