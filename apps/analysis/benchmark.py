"""The benchmark report of a grading run: the published rubric benchmark's tables, tests and
figures, computed from `BenchmarkData` (apps/analysis/benchmark_data.py) with pandas and
scipy.stats.

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
"""

import functools
import itertools
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from django.core.cache import cache

from apps.grading.models import GradingRun
from apps.grading.selectors.runs import SCORING_RULE, missing_reason
from apps.runs.models import ResponseStatus

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
from .tables import Column, Table

THRESHOLD = 0.65
# Fixed bins, so that figures of two runs compare bar for bar: scores by 0.05 from 0 to 1;
# a question's SD across samples by 0.05 from 0 to 0.75 (scores in [0, 1] have a sample SD
# of at most 0.71). i / 20 is the double nearest each edge, as a score of 13/20 is.
SCORE_BINS = [i / 20 for i in range(21)]
SD_BINS = [i / 20 for i in range(16)]
MIN_PAIRS = 3  # Wilcoxon: questions both models answered
MIN_TOPICS = 3  # Spearman across topics
MIN_SKEWTEST = 8  # scipy.stats.skewtest needs 8 observations
MIN_KURTOSISTEST = 5  # scipy.stats.kurtosistest needs 5 (and is approximate under 20)
CACHE_SECONDS = 3600
MEAN_DIGITS = 12
NOT_ENOUGH = "Not enough data: "

CATEGORIES = [
    ("positive", "factual", "Positive factual"),
    ("positive", "presentation", "Positive presentation"),
    ("negative", "factual", "Negative factual"),
    ("negative", "presentation", "Negative presentation"),
]
MISSING_REASONS = [
    ("errored", missing_reason(has_error=True, answer_status=ResponseStatus.DONE)),
    ("unanswered", "the answer is not done in the sampling run"),
    ("pending", missing_reason(has_error=False, answer_status=ResponseStatus.DONE)),
]


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
    notes: list[str] = field(default_factory=list)  # how it follows the paper, and departs
    scored: int = 0
    missing: int = 0
    errored: int = 0
    offline: bool = False


# --- per-question means ------------------------------------------------------------------------


def per_question(data: BenchmarkData) -> pd.DataFrame:
    """One row per (model, question): the mean of its samples' scores, their SD (ddof=1:
    NaN for a single sample), the number of samples, and the question's labels."""
    grouped = data.scores.groupby(["model", "question"], sort=True)["score"]
    frame = grouped.agg(mean="mean", sd="std", samples="size").reset_index()
    # Scores are ratios of whole points; rounded to 12 places, means that are equal are
    # equal as numbers too (.6 and .7 average to .65, not to .6499999999999999), so that they
    # tie in the rank tests and fall in the bin, and on the side of 65%, that they should.
    frame["mean"] = frame["mean"].round(MEAN_DIGITS)
    labels = data.questions[["topic", "prior", "sensemaking", "guidance", "verified"]]
    return frame.join(labels, on="question")


def _percent(value) -> float | None:
    return None if value is None or pd.isna(value) else 100 * float(value)


def _number(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if np.isnan(value) else value


def _models_n(data: BenchmarkData) -> str:
    scores = data.scores
    return (
        f"{len(scores):,} scored answers to {scores['question'].nunique():,} questions "
        f"from {scores['model'].nunique():,} models"
    )


# --- Table 3, Table 4, below 65% ---------------------------------------------------------------


def topic_key(slug: str) -> str:
    return f"topic-{slug}"


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
        }
        for slug, name in data.topics:
            row[topic_key(slug)] = _percent(topics.get((model.id, name)))
        row["answers"] = int(answers.get(model.id, 0))
        row["questions"] = int(by_model.size().get(model.id, 0))
        row["sd_questions"] = int(with_sd.get(model.id, 0))
        rows.append(row)
    return Table(
        name="table-3",
        title="Mean score per model, overall and per topic (Table 3)",
        columns=[
            Column("model", "Model"),
            Column("mean", "Overall mean", "percent", 1),
            Column("sd", "Mean SD across samples", "percent", 1),
            *[Column(topic_key(slug), name, "percent", 1) for slug, name in data.topics],
            Column("answers", "Scored answers", "int"),
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
        ],
        n=_models_n(data),
    )


def table_sorted(table: Table, *, key: str, descending: bool) -> Table:
    """The table with its rows ordered by one column; missing values last either way."""
    if key not in {c.key for c in table.columns}:
        return table
    present = [r for r in table.rows if r[key] is not None]
    absent = [r for r in table.rows if r[key] is None]
    present.sort(key=lambda r: (r[key], r[table.columns[0].key]), reverse=descending)
    return Table(
        name=table.name,
        title=table.title,
        columns=table.columns,
        rows=present + absent,
        notes=table.notes,
        n=table.n,
    )


def _table4(data: BenchmarkData) -> Table:
    met = data.met.groupby(["model", "polarity", "kind"])[["judgments", "met"]].sum()
    rows = []
    for model in data.models:
        row = {"model": model.label}
        for polarity, kind, _label in CATEGORIES:
            key = f"{polarity}-{kind}"
            found = (model.id, polarity, kind) in met.index
            judged = int(met.loc[(model.id, polarity, kind), "judgments"]) if found else 0
            hits = int(met.loc[(model.id, polarity, kind), "met"]) if found else 0
            row[key] = 100 * hits / judged if judged else None
            row[f"{key}-n"] = judged
        rows.append(row)
    columns = [Column("model", "Model")]
    for polarity, kind, label in CATEGORIES:
        columns += [
            Column(f"{polarity}-{kind}", f"{label}: met", "percent", 1),
            Column(f"{polarity}-{kind}-n", f"{label}: judgments", "int"),
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
        n=f"{judgments:,} judgments of {_models_n(data)}",
    )


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
        }
    )
    return Table(
        name="below-65",
        title="Answers scoring below 65%, per model",
        columns=[
            Column("model", "Model"),
            Column("below", "Answers below 65%", "int"),
            Column("scored", "Scored answers", "int"),
            Column("share", "Share below 65%", "percent", 1),
        ],
        rows=rows,
        notes=["An answer is below 65% when its score is under 0.65 (not equal to it)."],
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
        }
        for q, r in zip(low.index, low.itertuples(index=False), strict=True)
    ]
    return Table(
        name="low-questions",
        title="Questions whose mean over all models is below 65%",
        columns=[
            Column("question", "Question"),
            Column("topic", "Topic"),
            Column("mean", "Mean over models", "percent", 1),
            Column("models", "Models", "int"),
            Column("answers", "Scored answers", "int"),
            Column("question_id", "Question id", "int"),
        ],
        rows=rows,
        notes=[
            "A question's mean over all models: each model's mean of its samples of the "
            "question first, then the mean over the models that have a scored answer to it "
            "(each model weighs the same).",
            f"{len(rows):,} of {len(by_question):,} questions with a scored answer.",
        ],
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
        n=f"{len(rows):,} of {_models_n(data)}",
    )


# --- tests -------------------------------------------------------------------------------------


def _adjusted(rows: list[dict]) -> None:
    """The Benjamini-Hochberg adjusted p of each row with a p, over those rows (in place)."""
    from scipy import stats

    found = [i for i, r in enumerate(rows) if r["p"] is not None]
    for row in rows:
        row["p_bh"] = None
    if found:
        adjusted = stats.false_discovery_control([rows[i]["p"] for i in found], method="bh")
        for i, value in zip(found, adjusted, strict=True):
            rows[i]["p_bh"] = float(value)


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


def wilcoxon_pair(x: np.ndarray, y: np.ndarray) -> dict:
    from scipy import stats

    n = len(x)
    if n < MIN_PAIRS:
        return _undefined(
            f"{n} question{'s' if n != 1 else ''} both models answered "
            f"(at least {MIN_PAIRS} needed)."
        )
    if np.all(x == y):
        return _undefined(f"every one of the {n} differences is zero.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = stats.wilcoxon(x, y)
    return {"statistic": float(result.statistic), "p": _number(result.pvalue), "note": ""}


def default_pairs(models: list[Model]) -> list[tuple[int, int]]:
    """Every pair of models of one family (versions and sizes of a family), by name."""
    pairs = []
    by_family = itertools.groupby(
        sorted(models, key=lambda m: (m.family, m.name)), key=lambda m: m.family
    )
    for _family, members in by_family:
        pairs += [(a.id, b.id) for a, b in itertools.combinations(list(members), 2)]
    return pairs


def _wilcoxon(data: BenchmarkData, means: pd.DataFrame, pairs) -> Table:
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
        n=_models_n(data),
    )


def _kruskal(data: BenchmarkData, means: pd.DataFrame) -> Table:
    from scipy import stats

    rows = []
    for model in data.models:
        mine = means[means["model"] == model.id]
        groups = [g["mean"].to_numpy() for _t, g in mine.groupby("topic")]
        row = {"model": model.label, "topics": len(groups), "n": len(mine)}
        if len(groups) < 2:
            row |= _undefined(
                f"{len(groups)} topic{'s' if len(groups) != 1 else ''} with "
                "scored questions (at least 2 needed)."
            )
        elif np.ptp(mine["mean"].to_numpy()) == 0:
            row |= _undefined("every per-question mean is the same.")
        else:
            result = stats.kruskal(*groups)
            row |= {"statistic": float(result.statistic), "p": _number(result.pvalue), "note": ""}
        rows.append(row)
    _adjusted(rows)
    return Table(
        name="kruskal",
        title="Kruskal-Wallis test across topics, per model",
        columns=[
            Column("model", "Model"),
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
        n=_models_n(data),
    )


def _ks(data: BenchmarkData, means: pd.DataFrame, *, by: str) -> Table:
    """Per model, the questions with a label (`by`: prior, sensemaking or guidance) against
    those without it: each label against its absence, as the paper compares them."""
    from scipy import stats

    name, title, first = {
        "prior": ("ks-prior", "Kolmogorov-Smirnov test: prior attempt mentioned or not",
                  "Mentions a prior attempt"),
        "sensemaking": ("ks-sensemaking", "Kolmogorov-Smirnov test: asks for sensemaking or not",
                        "Asks for sensemaking"),
        "guidance": ("ks-guidance", "Kolmogorov-Smirnov test: asks for guidance or not",
                     "Asks for guidance"),
    }[by]  # fmt: skip
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
        if len(a) == 0 or len(b) == 0:
            empty = first if len(a) == 0 else second
            row |= _undefined(f"no question in the group “{empty}”.")
        else:
            result = stats.ks_2samp(a["mean"].to_numpy(), b["mean"].to_numpy())
            row |= {"statistic": float(result.statistic), "p": _number(result.pvalue), "note": ""}
        rows.append(row)
    _adjusted(rows)
    left_out = int(data.questions["verified"].eq(False).sum())
    # The paper's comparison of the needs: each against its absence, never one against the other.
    paper = [] if by == "prior" else [
        f"As in the paper: the questions asking for {by} against those that do not (each need "
        "against its absence). The two needs are labelled independently, so a question asking "
        "for both is in the first group of both tables, and one asking for neither in the "
        "second of both."
    ]  # fmt: skip
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
        n=_models_n(data),
    )


def _topic_spread(frame: pd.DataFrame) -> pd.DataFrame:
    grouped = frame.groupby("topic")["mean"]
    return pd.DataFrame(
        {
            "mean": grouped.mean(),
            "median": grouped.median(),
            "iqr": grouped.quantile(0.75) - grouped.quantile(0.25),
        }
    )


def spearman_across(x: np.ndarray, y: np.ndarray, *, what: str) -> dict:
    from scipy import stats

    n = len(x)
    if n < MIN_TOPICS:
        return _undefined(
            f"{n} topic{'s' if n != 1 else ''} with scored questions "
            f"(at least {MIN_TOPICS} needed)."
        )
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        side = "mean" if np.ptp(x) == 0 else what
        return _undefined(f"every topic has the same {side}.")
    result = stats.spearmanr(x, y)
    return {"statistic": float(result.statistic), "p": _number(result.pvalue), "note": ""}


def _spearman(data: BenchmarkData, means: pd.DataFrame) -> Table:
    scopes = [("All models, pooled", means)]
    scopes += [(m.label, means[means["model"] == m.id]) for m in data.models]
    rows = []
    for label, frame in scopes:
        spread = _topic_spread(frame)
        for key, what in (("iqr", "IQR"), ("median", "median")):
            result = spearman_across(spread["mean"].to_numpy(), spread[key].to_numpy(), what=what)
            rows.append(
                {
                    "scope": label,
                    "relation": f"Topic mean and topic {what}",
                    **result,
                    "n": len(spread),
                }
            )
    _adjusted(rows)
    return Table(
        name="spearman",
        title="Spearman correlation across topics: topic mean with its IQR and its median",
        columns=[
            Column("scope", "Models"),
            Column("relation", "Between"),
            *_test_columns("Rho"),
            Column("n", "Topics", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            "Per topic, over per-question means (samples averaged): their mean, their median "
            "and their interquartile range (75th minus 25th percentile, linear interpolation); "
            "pooled, every model's per-question means of the topic together. "
            "scipy.stats.spearmanr, two-sided.",
            _family_note(rows),
        ],
        n=_models_n(data),
    )


def shape(values: np.ndarray, *, measure: str) -> dict:
    """Skewness (Fisher-Pearson g1) or excess kurtosis of `values`, with D'Agostino's test."""
    from scipy import stats

    n = len(values)
    if n < 2 or np.ptp(values) == 0:
        reason = f"{n} answer{'s' if n != 1 else ''}" if n < 2 else "every score is the same"
        return {**_undefined(reason + "."), "z": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if measure == "skewness":
            value = float(stats.skew(values, bias=True))
            minimum, test = MIN_SKEWTEST, stats.skewtest
        else:
            value = float(stats.kurtosis(values, fisher=True, bias=True))
            minimum, test = MIN_KURTOSISTEST, stats.kurtosistest
        if n < minimum:
            return {
                "statistic": value,
                "z": None,
                "p": None,
                "note": f"No p: the test needs at least {minimum} answers.",
            }
        result = test(values)
    note = "The test is approximate under 20 answers." if measure != "skewness" and n < 20 else ""
    return {
        "statistic": value,
        "z": float(result.statistic),
        "p": _number(result.pvalue),
        "note": note,
    }


def _shape(data: BenchmarkData, *, measure: str) -> Table:
    by_model = {model: frame["score"].to_numpy() for model, frame in data.scores.groupby("model")}
    rows = []
    for model in data.models:
        values = by_model.get(model.id, np.array([]))
        rows.append({"model": model.label, **shape(values, measure=measure), "n": len(values)})
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
            Column("model", "Model"),
            Column("statistic", label, "float", 3),
            Column("z", "z", "float", 3),
            Column("p", "p", "float", 4),
            Column("p_bh", "p (BH)", "float", 4),
            Column("n", "Answers", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
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
) -> Table:
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
                }
            )
    return Table(
        name=name,
        title=title,
        columns=[
            Column("model", "Model"),
            Column("low", "Bin from", "float", 2),
            Column("high", "Bin to", "float", 2),
            Column("count", unit, "int"),
            Column("share", f"Share of the model's {unit.lower()}", "percent", 1),
        ],
        rows=rows,
        notes=[note, "Each bin holds its lower edge, not its upper one; the last bin holds both."],
        n=_models_n(data),
    )


def _histogram_figure(table: Table, data, values, edges, *, xlabel, ylabel) -> Figure:
    series = {m.label: values.get(m.id, np.array([])) for m in data.models}
    draw = functools.partial(
        plots.histograms, title=table.title, series=series, bins=edges, xlabel=xlabel, ylabel=ylabel
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
        n=_models_n(data),
    )
    draw = functools.partial(
        plots.grouped_bars,
        title=table.title,
        categories=topics,
        series=series,
        xlabel="Topic",
        ylabel="Mean score (%)",
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
        n=f"{sum(r['judgments'] for r in data.errors):,} errored judgments",
    )


def _calibration_table(data: BenchmarkData) -> Table:
    rows = []
    for c in data.calibrations:
        correlation, agreement = c.score.correlation, c.agreement.agreement
        rows.append(
            {
                "set": c.set_name,
                "r": correlation.r if correlation else None,
                "p": correlation.p if correlation else None,
                "low": correlation.low if correlation else None,
                "high": correlation.high if correlation else None,
                "answers": c.score.n,
                "accuracy": 100 * agreement.accuracy if agreement else None,
                "kappa": agreement.kappa if agreement else None,
                "f1": agreement.f1_macro if agreement else None,
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
            "not enough data. Labels are left out when the experts have not settled them or "
            "the auto-rater's judgment is missing, pending or an error.",
        ],
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
        n=f"{len(rows):,} rubric versions of {data.rubrics['question'].nunique():,} questions",
    )


def _notes(data: BenchmarkData) -> list[str]:
    return [
        f"Scoring rule (as published): {SCORING_RULE} The published worked example: a rubric "
        "worth 43 points, an answer earning 24 of them, scores 55.8%.",
        "A model's mean averages its samples of each question first, then the questions, so "
        "that each question weighs the same whatever its number of samples.",
        "The SD under each mean is the sample SD (ddof=1, pandas' default) of a question's "
        "samples, averaged over the questions with two samples or more: the paper does not say "
        "which SD it used.",
        "A question's mean over all models (for the list below 65%) averages each model's mean "
        "of the question, so that each model weighs the same.",
        "Table 4 counts the judgments of scored answers only: an answer without a score is "
        "counted under Missing scores, not in the rates.",
        "Added by Assay: the Benjamini-Hochberg adjusted p of every family of tests, the n of "
        "every statistic, p-values for skewness and kurtosis (D'Agostino's and Anscombe-Glynn's "
        "tests), and the Spearman and Kruskal-Wallis tests per model as well as pooled.",
    ]


def benchmark_report(
    data: BenchmarkData, *, pairs: list[tuple[int, int]] | None = None
) -> BenchmarkReport:
    """Every table and figure of the report, from the data; `pairs` of model ids for the
    Wilcoxon tests (default: every pair of models of one family)."""
    models = data.models_by_id
    for a, b in pairs or []:
        if a not in models or b not in models:
            raise AnalysisError("Both models of a pair must have answered in this sampling run.")
        if a == b:
            raise AnalysisError("A model cannot be compared with itself.")
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
        notes=_notes(data),
        scored=len(data.scores),
        missing=missing,
        errored=sum(r["errored"] for r in data.missing),
        offline=any(m.offline for m in data.models) or data.run.grader_offline,
    )
    tables = [
        _table3(data, means),
        _table4(data),
        _below(data),
        _low_questions(data, means),
        _low_responses(data),
        _wilcoxon(data, means, chosen),
        _kruskal(data, means),
        _ks(data, means, by="prior"),
        _ks(data, means, by="sensemaking"),
        _ks(data, means, by="guidance"),
        _spearman(data, means),
        _shape(data, measure="skewness"),
        _shape(data, measure="kurtosis"),
        _missing_table(data),
        _errors_table(data),
        _calibration_table(data),
        _rubrics_table(data),
    ]
    report.tables = {table.name: table for table in tables}
    report.figures = _figures(data, means)
    return report


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


def benchmark_report_for(
    *, run: GradingRun, pairs: list[tuple[int, int]] | None = None
) -> BenchmarkReport:
    """The report of the run's data as it is now: read and computed once per fingerprint
    (and choice of pairs), then kept in the cache until anything it reads changes."""
    return _report_at(run, benchmark_fingerprint(run=run), pairs)


def _report_at(run: GradingRun, fingerprint: str, pairs) -> BenchmarkReport:
    key = f"analysis:benchmark:{run.pk}:{fingerprint}:{_pairs_key(pairs)}"
    report = cache.get(key)
    if report is None:
        data = benchmark_data_cached(run=run, fingerprint=fingerprint)
        report = benchmark_report(data, pairs=pairs)
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
        if not (dash and first.isdigit() and second.isdigit()):
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
