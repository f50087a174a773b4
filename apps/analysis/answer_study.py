"""The report of an answer study: people, proxies and the auto-rater on the same benchmark
answers.

- Agreement between people, people against proxies, and how spread out each one's ratings are:
  the survey report's own tables over the answer items (`survey_report` on `data.survey`;
  pair items never enter them), and a sweep table setting each proxy variant beside its plain
  model and people: the mean SD of an answer's helpfulness ratings, the share of answers
  rated the same by all, and rho with people.
- People against the rubric score: Spearman's rho between each answer's mean helpfulness
  among people and its rubric score, per answer and per model.
- People against the auto-rater on each presentation criterion: people's majority against
  the rater's verdict on the rubric criterion made from the item's shared criterion
  (`stats.agreement.criterion_agreement`), and the answers behind the most disagreement.
- Which presentation criteria predict people's helpfulness: OLS on the rater's verdicts
  (`stats.regression.ols`).
- Models ranked by people's pair judgments (Bradley-Terry, `stats.pairs.bradley_terry`),
  beside the rubric's ranking and each proxy's.
- Bootstrap intervals (`answer_study_intervals`, run by a background task): the survey
  report's over units, rho per answer over answers, Bradley-Terry strengths over pairs.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from apps.rubrics.models import Polarity
from apps.surveys.models import ItemGroup
from stats import agreement, bootstrap, correlation, pairs, regression
from stats.points import MIN_POINTS, too_few

from .answer_study_data import AnswerStudyData
from .benchmark import run_methods
from .figures import Figure
from .labels import OFFLINE_NOTE
from .method import METHOD_TABLE, NOT_REPORTED, Fidelity, Method, method_table, report_entries
from .models import RESAMPLES, SEED
from .survey import SD_DDOF, RhoSpec, survey_intervals, survey_report, survey_statistics
from .survey_data import PEOPLE, Group, Item
from .tables import ANSWERS, Column, Table, TooFew

# The answers shown under each of the most disagreed criteria, for so many criteria.
DISAGREED_CRITERIA = 3
RHO_ANSWERS = "rho-answers"
SURVEY_TABLES = ("alpha", "rho", "proxies", "demographics")
SURVEY_FIGURES = ("ranges", "sd-cdf")
HELPFULNESS = ItemGroup.HELPFULNESS.value


def bt_key(group: str, model_id: int) -> str:
    """The interval key of a model's Bradley-Terry strength among a group's pair judgments."""
    return f"bt:{group}:{int(model_id)}"


# --- the statistics' inputs ----------------------------------------------------------------------


def helpfulness_items(data: AnswerStudyData) -> list[Item]:
    """The helpfulness scale items (their group, as the survey's items are grouped)."""
    return [item for item in data.survey.items if item.group == HELPFULNESS]


def _helpfulness_column(items: list[Item]) -> str:
    """Items of one scale are averaged as answered (1..points); of scales that differ, each
    answer on -1..1 first, so that every item weighs the same."""
    return "value" if len({item.points for item in items}) <= 1 else "unit"


def _scale_text(items: list[Item]) -> str:
    if not items:
        return "no helpfulness item"
    codes = ", ".join(item.code for item in items)
    if _helpfulness_column(items) == "value":
        return f"{codes} (1 to {items[0].points}: {items[0].labels[0]} to {items[0].labels[-1]})"
    return f"{codes} (each answer mapped to -1..1, as the scales differ)"


def mean_helpfulness(data: AnswerStudyData, group: str = PEOPLE) -> pd.Series:
    """unit -> the mean of the group's answers to the helpfulness items on the unit."""
    items = helpfulness_items(data)
    frame = data.survey.answers_of(group)
    frame = frame[frame["item"].isin([item.code for item in items])]
    return frame.groupby("scenario")[_helpfulness_column(items)].mean()


def per_answer(data: AnswerStudyData) -> pd.DataFrame:
    """One row per answer unit: its label, model, rubric score, response, people's mean
    helpfulness (nan without a rating) and how many people rated it."""
    answers = data.answer_units.reset_index(drop=True)
    means = mean_helpfulness(data)
    people = data.survey.answers_of(PEOPLE)
    codes = [item.code for item in helpfulness_items(data)]
    raters = people[people["item"].isin(codes)].groupby("scenario")["rater"].nunique()
    return answers.assign(
        helpfulness=answers["unit"].map(means).astype(float),
        raters=answers["unit"].map(raters).fillna(0).astype(int),
    )


def _people_shares(data: AnswerStudyData, item: str) -> tuple[pd.Series, pd.Series]:
    """unit -> the share of people who said yes to the item, and how many answered it."""
    people = data.survey.answers_of(PEOPLE)
    mine = people[people["item"] == item].groupby("scenario")["value"]
    return mine.mean(), mine.count()


def _verdict(data: AnswerStudyData) -> dict[tuple[int, str], bool]:
    return {
        (unit, item): bool(met)
        for unit, item, met in zip(
            data.verdicts["unit"], data.verdicts["item"], data.verdicts["met"], strict=True
        )
    }


def criterion_rows(data: AnswerStudyData) -> list[tuple[str, float | None, bool | None]]:
    """(item code, people's share saying yes, the rater's verdict) per answer and criterion."""
    verdicts = _verdict(data)
    rows = []
    for criterion in data.criteria:
        shares, _counts = _people_shares(data, criterion.item)
        for unit in data.answer_units["unit"]:
            share = shares.get(unit)
            rows.append(
                (
                    criterion.item,
                    None if share is None else float(share),
                    verdicts.get((unit, criterion.item)),
                )
            )
    return rows


def regression_inputs(data: AnswerStudyData) -> tuple[list[float], dict[str, list]]:
    """People's mean helpfulness per answer, and per presentation criterion the rater's
    verdict on each answer (met 1, not met 0, None without a verdict)."""
    answers = per_answer(data)
    verdicts = _verdict(data)
    outcome = [None if np.isnan(v) else float(v) for v in answers["helpfulness"]]
    predictors = {
        c.item: [
            None if (unit, c.item) not in verdicts else float(verdicts[(unit, c.item)])
            for unit in answers["unit"]
        ]
        for c in data.criteria
    }
    return outcome, predictors


def _pair_clusters(data: AnswerStudyData) -> dict[int, int]:
    """unit -> its cluster (0..pairs-1) in the pair units' order."""
    return {int(unit): k for k, unit in enumerate(data.pair_units["unit"])}


def judgments_of(data: AnswerStudyData, group: str) -> tuple[list[tuple], list[int]]:
    """A group's pair judgments as (model of A, model of B, outcome), and each one's cluster
    (its pair unit); a pair of one model's two answers says nothing of a ranking."""
    frame = data.pairs[data.pairs["group"] == group]
    frame = frame[frame["model_a"] != frame["model_b"]]
    clusters = _pair_clusters(data)
    found = [
        (int(a), int(b), outcome)
        for a, b, outcome in zip(frame["model_a"], frame["model_b"], frame["outcome"], strict=True)
    ]
    return found, [clusters[int(u)] for u in frame["unit"]]


def pair_groups(data: AnswerStudyData) -> list[Group]:
    """People, then each proxy group that judged pairs, in the survey's group order."""
    judged = set(data.pairs["group"])
    groups = [g for g in data.survey.groups if g.key in judged or g.key == PEOPLE]
    known = {g.key for g in groups}
    # A proxy that judged pairs only has no group in the survey's data (it rated no item).
    for key in sorted(judged - known):
        groups.append(Group(key, _proxy_label(data, key)))
    return groups


def _proxy_label(data: AnswerStudyData, key: str) -> str:
    from apps.llm.models import ModelConfig

    model_id, _, variant = key.removeprefix("model:").partition("/")
    model = ModelConfig.objects.filter(pk=int(model_id)).first()
    name = model.display_name if model else key
    return f"{name} ({variant})" if variant else name


def fit_bradley_terry(
    data: AnswerStudyData, group: str, draws: np.ndarray | None = None
) -> pairs.BradleyTerry:
    judgments, clusters = judgments_of(data, group)
    items = [m.id for m in data.models]
    if draws is None:
        return pairs.bradley_terry(judgments, items=items)
    return pairs.bradley_terry(judgments, items=items, clusters=clusters, draws=draws)


# --- intervals -----------------------------------------------------------------------------------


def _json_safe(values) -> list:
    return [None if isinstance(v, float) and v != v else v for v in values]


def answer_study_intervals(
    data: AnswerStudyData,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, list]:
    """key -> [low, high, resamples used, resamples undefined] (JSON-safe: null for no value)
    for every interval of the report: the survey report's alphas and rhos (its keys, units
    resampled), rho per answer (answers resampled), and each group's Bradley-Terry strengths
    (pair units resampled). `progress(done, total)` is told as statistics finish."""
    groups = pair_groups(data)
    survey_total = len(survey_statistics(data.survey)) if data.survey.scenarios else 0
    total = survey_total + 1 + len(groups)
    done = 0

    def told(step: int = 1) -> None:
        nonlocal done
        done += step
        if progress is not None:
            progress(done, total)

    out: dict[str, list] = {}

    def survey_progress(finished: int, _total: int) -> None:
        if progress is not None:
            progress(finished, total)

    found = survey_intervals(data.survey, resamples=resamples, seed=seed, progress=survey_progress)
    out |= {key: _json_safe(values) for key, values in found.items()}
    done = survey_total

    answers = per_answer(data)
    x, y = answers["helpfulness"].to_numpy(float), answers["score"].to_numpy(float)
    if len(answers):
        draws = bootstrap.resample_draws(len(answers), resamples=resamples, seed=seed)
        rho = correlation.spearman(x, y)[0]
        interval = bootstrap.percentile_interval(
            rho, correlation.spearman_resamples(x, y, draws=draws)
        )
        out[RHO_ANSWERS] = _json_safe(
            [
                interval.low,
                interval.high,
                interval.resamples_used,
                interval.resamples_undefined,
            ]
        )
    told()

    n_pairs = len(data.pair_units)
    draws = bootstrap.resample_draws(n_pairs, resamples=resamples, seed=seed) if n_pairs else None
    for group in groups:
        if draws is not None:
            fit = fit_bradley_terry(data, group.key, draws)
            for strength in fit.strengths:
                if strength.interval is not None:
                    iv = strength.interval
                    out[bt_key(group.key, strength.item)] = _json_safe(
                        [iv.low, iv.high, iv.resamples_used, iv.resamples_undefined]
                    )
        told()
    return out


# --- the report ----------------------------------------------------------------------------------


@dataclass
class AnswerStudyReport:
    data_n: str
    sections: list[tuple[str, str, list[str]]] = field(default_factory=list)
    methods: dict[str, Method] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)
    people: int = 0
    proxies: int = 0
    answers: int = 0
    pairs: int = 0
    simulated: bool = False
    offline: bool = False
    intervals_missing: int = 0
    excluded: dict[str, int] = field(default_factory=dict)
    helpfulness: list[str] = field(default_factory=list)  # the helpfulness items' codes
    regularised: list[str] = field(default_factory=list)  # groups whose BT fit was regularised
    fidelity_notes: list[str] = field(default_factory=list)


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _ci(intervals: dict, key: str) -> tuple:
    found = intervals.get(key)
    return (found[0], found[1]) if found else (None, None)


def _who(group: Group) -> str:
    if group.key == PEOPLE:
        return "People (simulated)" if group.simulated else "People"
    return group.label + (" (offline demo model)" if group.offline else "")


def _data_n(data: AnswerStudyData) -> str:
    people = data.survey.answers_of(PEOPLE)
    judged = data.pairs[data.pairs["group"] == PEOPLE]
    proxies = len(data.survey.proxies)
    return ", ".join(
        [
            _count(len(data.answer_units), "answer", "answers"),
            _count(len(data.pair_units), "pair", "pairs"),
            _count(
                len(set(people["rater"]) | set(judged["rater"])),
                "person",
                "people",
            ),
            _count(len(people), "rating", "ratings"),
            _count(len(judged), "pair judgment", "pair judgments"),
            _count(proxies, "proxy", "proxies"),
        ]
    )


def _rho_row(what: str, rho, p, n: int, low, high, points: str) -> dict:
    note = ""
    if too_few(n):
        rho, p, low, high = TooFew(n), None, None, None
        note = f"Too few points: {_count(n, points[:-1], points)} (at least {MIN_POINTS} needed)."
    elif rho is None or (isinstance(rho, float) and np.isnan(rho)):
        note = "No rho: one side does not vary."
    return {"what": what, "rho": rho, "p": p, "low": low, "high": high, "n": n, "note": note}


def _helpfulness_rubric(data: AnswerStudyData, intervals: dict, scale: str) -> Table:
    answers = per_answer(data)
    rho, p, n = correlation.spearman(answers["helpfulness"], answers["score"])
    low, high = _ci(intervals, RHO_ANSWERS)
    rows = [_rho_row("Per answer", rho, p, n, low, high, "answers")]
    models = _model_means(answers)
    rho, p, n = correlation.spearman(models["helpfulness"], models["score"])
    rows.append(_rho_row("Per model", rho, p, n, None, None, "models"))
    return Table(
        name="helpfulness-rubric",
        title="Spearman's rho: people's helpfulness against the rubric score",
        columns=[
            Column("what", "Over"),
            Column("rho", "Rho", "float"),
            Column("p", "p", "float", 4, bounded=True),
            Column("low", "95% CI low", "float"),
            Column("high", "95% CI high", "float"),
            Column("n", "Points", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            f"People's helpfulness: the mean of people's answers to {scale} on an answer, "
            "after exclusions. The rubric score: the answer's score in the grading run.",
            "Per model: each model's mean over its drawn answers of people's helpfulness, "
            "against the mean of the same answers' rubric scores.",
            "95% interval per answer: percentile bootstrap over answers (1,000 resamples, seed "
            "0). Two-sided p from scipy.stats.spearmanr.",
        ],
        n=_data_n(data),
    )


def _model_means(answers: pd.DataFrame) -> pd.DataFrame:
    """Per model: the mean over its answers of people's helpfulness and of the rubric score."""
    grouped = answers.groupby("model_id", sort=False)
    return pd.DataFrame(
        {
            "helpfulness": grouped["helpfulness"].mean(),
            "score": grouped["score"].mean(),
            "answers": grouped["unit"].count(),
            "rated": grouped["helpfulness"].count(),
        }
    )


def _helpfulness_models(data: AnswerStudyData) -> Table:
    answers = per_answer(data)
    means = _model_means(answers)
    scores = data.model_scores.set_index("model_id")
    rows = []
    for model in data.models:
        if model.id not in means.index:
            continue
        row = means.loc[model.id]
        rows.append(
            {
                "model": model.label,
                "answers": int(row["answers"]),
                "rated": int(row["rated"]),
                "helpfulness": row["helpfulness"],
                "score": 100 * row["score"],
                "run_score": 100 * scores.loc[model.id, "mean_score"]
                if model.id in scores.index
                else None,
            }
        )
    return Table(
        name="helpfulness-models",
        title="Each model's drawn answers: people's helpfulness and the rubric score",
        columns=[
            Column("model", "Model"),
            Column("answers", "Answers drawn", "int"),
            Column("rated", "Rated by people", "int"),
            Column("helpfulness", "People's helpfulness (mean)", "float", 2),
            Column("score", "Rubric score of these answers (mean)", "percent", 1),
            Column("run_score", "Rubric score over the whole run (mean)", "percent", 1),
        ],
        rows=rows,
        notes=[
            "The mean over the model's drawn answers rated by people (each answer weighs the "
            "same). The whole run's mean is the benchmark report's: a question's samples "
            "averaged first, then the model's questions.",
        ],
        n=_data_n(data),
    )


def _scatter_table(data: AnswerStudyData) -> Table:
    answers = per_answer(data)
    rows = [
        {
            "label": label,
            "model": model,
            "score": 100 * score,
            "helpfulness": helpfulness,
            "raters": raters,
            ANSWERS: {"answer": int(response)},
        }
        for label, model, score, helpfulness, raters, response in zip(
            answers["label"],
            answers["model_label"],
            answers["score"],
            answers["helpfulness"],
            answers["raters"],
            answers["response_id"],
            strict=True,
        )
    ]
    return Table(
        name="helpfulness-vs-score",
        title="People's helpfulness against the rubric score, answer by answer",
        columns=[
            Column("label", "Answer", answers={}),
            Column("model", "Model"),
            Column("score", "Rubric score", "percent", 1),
            Column("helpfulness", "People's helpfulness (mean)", "float", 2),
            Column("raters", "People", "int"),
        ],
        rows=rows,
        n=_data_n(data),
    )


def _criteria_tables(data: AnswerStudyData) -> tuple[Table, Table, list]:
    found = agreement.criterion_agreement(criterion_rows(data))
    by_item = {c.item: c for c in data.criteria}
    rows = []
    for c in found:
        criterion = by_item[c.criterion]
        percent, kappa, note = c.percent, c.kappa, ""
        if too_few(c.n):
            percent, kappa = TooFew(c.n), TooFew(c.n)
            note = (
                f"Too few points: {_count(c.n, 'answer', 'answers')} with both verdicts "
                f"(at least {MIN_POINTS} needed)."
            )
        elif kappa is None:
            note = "No kappa: chance agreement is certain (one verdict only on both sides)."
        rows.append(
            {
                "item": criterion.item,
                "criterion": criterion.text,
                "polarity": Polarity(criterion.polarity).label
                if criterion.polarity in Polarity.values
                else criterion.polarity,
                "percent": percent,
                "kappa": kappa,
                "n": c.n,
                "agreed": c.agreed,
                "people_only": c.people_only,
                "rater_only": c.rater_only,
                "undecided": c.undecided,
                "note": note,
            }
        )
    criteria = Table(
        name="criteria",
        title="People against the auto-rater, criterion by criterion (most disagreement first)",
        columns=[
            Column("item", "Item"),
            Column("criterion", "Presentation criterion"),
            Column("polarity", "Polarity"),
            Column("percent", "Agreement", "percent", 1),
            Column("kappa", "Cohen's kappa", "float"),
            Column("n", "Answers", "int"),
            Column("agreed", "Agreed", "int"),
            Column("people_only", "People yes, rater no", "int"),
            Column("rater_only", "Rater yes, people no", "int"),
            Column("undecided", "People split evenly", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            "Per answer: people's majority (more than half said yes) against the auto-rater's "
            "verdict (met) on the answer's rubric criterion made from the item's shared "
            "criterion, in the draw's grading run. Answers where people split evenly have no "
            "majority and are counted apart; answers without a verdict or without people's "
            "answers are left out.",
            "Ordered by agreement, lowest first, then by kappa.",
        ],
        n=_data_n(data),
    )
    answers = _disagreed_answers(data, found)
    return criteria, answers, found


def _disagreed_answers(data: AnswerStudyData, found: list) -> Table:
    verdicts = _verdict(data)
    by_item = {c.item: c for c in data.criteria}
    units = data.answer_units.set_index("unit")
    shown = [c for c in found if c.people_only + c.rater_only][:DISAGREED_CRITERIA]
    rows = []
    for c in shown:
        shares, counts = _people_shares(data, c.criterion)
        for unit, share in shares.items():
            met = verdicts.get((unit, c.criterion))
            if met is None or share == 0.5 or (share > 0.5) == met:
                continue
            answer = units.loc[unit]
            rows.append(
                {
                    "item": c.criterion,
                    "criterion": by_item[c.criterion].text,
                    "label": answer["label"],
                    "model": answer["model_label"],
                    "share": 100 * share,
                    "people": int(counts[unit]),
                    "rater": "Met" if met else "Not met",
                    "response": int(answer["response_id"]),
                    ANSWERS: {"answer": int(answer["response_id"])},
                }
            )
    return Table(
        name="criteria-answers",
        title="The answers behind the most disagreed criteria",
        columns=[
            Column("item", "Item"),
            Column("criterion", "Presentation criterion"),
            Column("label", "Answer", answers={}),
            Column("model", "Model"),
            Column("share", "People saying yes", "percent", 0),
            Column("people", "People", "int"),
            Column("rater", "Auto-rater"),
            Column("response", "Response id", "int"),
        ],
        rows=rows,
        notes=[
            f"For the {DISAGREED_CRITERIA} criteria with the lowest agreement that have any "
            "disagreement: each answer where people's majority and the auto-rater differ. "
            "Each answer links to the grading run's answer viewer."
        ],
        n=_count(len(rows), "answer", "answers"),
    )


def _regression(data: AnswerStudyData, scale: str) -> tuple[Table, regression.Regression]:
    outcome, predictors = regression_inputs(data)
    fit = regression.ols(outcome, predictors)
    by_item = {c.item: c for c in data.criteria}
    rows = []
    if fit.too_few:
        rows.append(
            {
                "term": "Every term",
                "criterion": "",
                "estimate": TooFew(fit.n),
                "low": None,
                "high": None,
                "p": None,
                "note": f"Too few points: {_count(fit.n, 'answer', 'answers')} for "
                f"{len(predictors) - len(fit.dropped) + 1} terms (at least {MIN_POINTS} "
                "answers beyond one per term needed).",
            }
        )
    else:
        for coefficient in [fit.intercept, *fit.coefficients]:
            name = coefficient.name
            rows.append(
                {
                    "term": "Intercept" if name == "intercept" else name,
                    "criterion": by_item[name].text if name in by_item else "",
                    "estimate": coefficient.estimate,
                    "low": coefficient.low,
                    "high": coefficient.high,
                    "p": coefficient.p,
                    "note": "",
                }
            )
    for dropped in fit.dropped:
        rows.append(
            {
                "term": dropped.name,
                "criterion": by_item[dropped.name].text if dropped.name in by_item else "",
                "estimate": None,
                "low": None,
                "high": None,
                "p": None,
                "note": f"Left out: {_drop_text(dropped.reason)}.",
            }
        )
    r_squared = "" if fit.r_squared is None else f" R² = {fit.r_squared:.3f}."
    table = Table(
        name="regression",
        title="Which presentation criteria predict people's helpfulness (OLS)",
        columns=[
            Column("term", "Term"),
            Column("criterion", "Presentation criterion"),
            Column("estimate", "Coefficient", "float"),
            Column("low", "95% CI low", "float"),
            Column("high", "95% CI high", "float"),
            Column("p", "p", "float", 4, bounded=True),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            f"Outcome: people's mean helpfulness on an answer ({scale}). Predictors: the "
            "auto-rater's verdict on each presentation criterion (met 1, not met 0), with an "
            "intercept; a coefficient is the difference in helpfulness when the criterion is "
            "met, the other criteria held fixed.",
            f"Over {_count(fit.n, 'answer', 'answers')}; "
            f"{_count(fit.rows_missing, 'answer', 'answers')} left out for a missing value "
            f"(no people's rating, or no verdict on a criterion kept).{r_squared}",
            "Classical (non-robust) standard errors, 95% intervals and two-sided p from "
            "statsmodels' OLS; no correction for the many coefficients.",
        ],
        n=_data_n(data),
    )
    return table, fit


def _drop_text(reason: regression.DropReason) -> str:
    return {
        regression.DropReason.NO_VALUE: "no verdict on any answer rated",
        regression.DropReason.CONSTANT: "the same verdict on every answer (the intercept's)",
        regression.DropReason.COLLINEAR: "met on exactly the answers other criteria "
        "already determine (collinear)",
    }[reason]


def _ranking(data: AnswerStudyData, intervals: dict) -> tuple[Table, dict[str, pairs.BradleyTerry]]:
    groups = pair_groups(data)
    fits = {g.key: fit_bradley_terry(data, g.key) for g in groups}
    scores = data.model_scores.set_index("model_id")["mean_score"]
    score_rank = (-scores).rank(method="min")
    people = {s.item: s for s in fits[PEOPLE].strengths}
    proxies = [g for g in groups if g.key != PEOPLE]
    rows = []
    for model in data.models:
        s = people[model.id]
        low, high = (
            _ci(intervals, bt_key(PEOPLE, model.id))
            if s.strength is not None
            else (
                None,
                None,
            )
        )
        score = scores.get(model.id, np.nan)
        row = {
            "model": model.label,
            "strength": s.strength,
            "low": low,
            "high": high,
            "rank": s.rank,
            "beats": None if s.beats_average is None else 100 * s.beats_average,
            "wins": s.wins,
            "losses": s.losses,
            "ties": s.ties,
            "judgments": s.judgments,
            "score": 100 * score,
            "score_rank": None if np.isnan(score) else int(score_rank[model.id]),
        }
        for k, group in enumerate(proxies):
            found = next(x for x in fits[group.key].strengths if x.item == model.id)
            row[f"proxy{k}"] = found.rank
        rows.append(row)
    rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["score_rank"] or 0))
    regularised = [_who(g) for g in groups if fits[g.key].regularised]
    notes = [
        "People's strength: the Bradley-Terry strength of the model's answers in people's "
        "pair judgments (which of two answers helps more), on the log scale, centred on 0; "
        "'Beats an average model' is its chance against a model of strength 0. A tie counts "
        "as half a win each way. Rank 1 is the strongest.",
        "The rubric's rank: by the model's mean rubric score over the whole grading run (a "
        "question's samples averaged first, then its questions).",
        "Each proxy's rank: the same Bradley-Terry fit over that proxy's pair judgments.",
        "95% intervals: percentile bootstrap over pairs (every judgment of a drawn pair comes "
        "along; 1,000 resamples, seed 0).",
    ]
    if regularised:
        notes.append(
            f"Regularised (choix's alpha = {pairs.REGULARISATION}): {', '.join(regularised)}. "
            "Some models never lost (or never won) against the rest, so the maximum-likelihood "
            "strengths do not exist; the regularised fit pulls them toward each other."
        )
    table = Table(
        name="ranking",
        title="Models ranked by people's pair judgments, by the rubric and by each proxy",
        columns=[
            Column("model", "Model"),
            Column("strength", "People's strength", "float", 2),
            Column("low", "95% CI low", "float", 2),
            Column("high", "95% CI high", "float", 2),
            Column("rank", "People's rank", "int"),
            Column("beats", "Beats an average model", "percent", 0),
            Column("wins", "Wins", "int"),
            Column("losses", "Losses", "int"),
            Column("ties", "Ties", "int"),
            Column("judgments", "Judgments", "int"),
            Column("score", "Rubric score (mean)", "percent", 1),
            Column("score_rank", "Rubric's rank", "int"),
            *[Column(f"proxy{k}", f"Rank by {_who(g)}", "int") for k, g in enumerate(proxies)],
        ],
        rows=rows,
        notes=notes,
        n=_data_n(data),
    )
    return table, fits


def _win_rates(data: AnswerStudyData) -> Table:
    """People's head-to-head shares: how often each model's answer was judged the more
    helpful against each other model's."""
    judgments, _clusters = judgments_of(data, PEOPLE)
    models = [m for m in data.models if any(m.id in j[:2] for j in judgments)]
    items = [m.id for m in models]
    rates = pairs.win_rates(judgments, items=items) if items else np.zeros((0, 0))
    rows = [
        {"model": model.label} | {f"vs{k}": 100 * rates[i, k] for k in range(len(models))}
        for i, model in enumerate(models)
    ]
    return Table(
        name="win-rates",
        title="People's pair judgments, model against model",
        columns=[
            Column("model", "Model"),
            *[Column(f"vs{k}", f"Against {m.label}", "percent", 0) for k, m in enumerate(models)],
        ],
        rows=rows,
        notes=[
            "The share of people's judgments of a pair of the two models' answers that the "
            "row's model won, a tie counting half; empty where the two never met."
        ],
        n=_count(len(judgments), "judgment", "judgments"),
    )


def _strengths_figure(data: AnswerStudyData, fits: dict, intervals: dict) -> Figure:
    groups = [g for g in pair_groups(data) if g.key in fits]
    rows = []
    for group in groups:
        for s in fits[group.key].strengths:
            if s.strength is None:
                continue
            low, high = _ci(intervals, bt_key(group.key, s.item))
            rows.append(
                {
                    "who": _who(group),
                    "model": data.model_label(s.item),
                    "strength": s.strength,
                    "low": low,
                    "high": high,
                    "judgments": s.judgments,
                }
            )
    table = Table(
        name="bt-strengths",
        title="Bradley-Terry strengths of the models, with 95% intervals",
        columns=[
            Column("who", "Judged by"),
            Column("model", "Model"),
            Column("strength", "Strength", "float", 2),
            Column("low", "95% CI low", "float", 2),
            Column("high", "95% CI high", "float", 2),
            Column("judgments", "Judgments", "int"),
        ],
        rows=rows,
        notes=["Strengths on the log scale, centred on 0 (an average model)."],
        n=_data_n(data),
    )
    labels = [str(m.label) for m in data.models]
    series: dict[str, list] = {}
    for row in rows:
        values = series.setdefault(row["who"], [(None, None, None)] * len(labels))
        values[labels.index(str(row["model"]))] = (row["strength"], row["low"], row["high"])
    from . import plots

    offline = any(m.offline for m in data.models)
    return Figure(
        table,
        functools.partial(
            plots.dot_whiskers,
            title=table.title,
            labels=labels,
            series=series,
            xlabel="Bradley-Terry strength (log scale; 0: an average model)",
            footnote=OFFLINE_NOTE if offline else "",
        ),
    )


def _scatter_figure(data: AnswerStudyData, scale: str) -> Figure:
    from . import plots

    table = _scatter_table(data)
    series: dict[str, tuple[list, list]] = {}
    for row in table.rows:
        xs, ys = series.setdefault(str(row["model"]), ([], []))
        xs.append(float(row["score"]))
        ys.append(float(row["helpfulness"]))
    return Figure(
        table,
        functools.partial(
            plots.scatter,
            title=table.title,
            series=series,
            xlabel="Rubric score (%)",
            ylabel=f"People's helpfulness (mean of {scale.split(' (')[0]})",
            footnote=OFFLINE_NOTE if any(m.offline for m in data.models) else "",
        ),
    )


def _sweep(data: AnswerStudyData, intervals: dict, specs: list) -> Table:
    """Per group, the spread of its helpfulness ratings and its rho with people."""
    items = helpfulness_items(data)
    codes = [item.code for item in items]
    rhos = {spec.key: spec for spec in specs if isinstance(spec, RhoSpec)}
    key_of = HELPFULNESS if len(items) else None
    rows = []
    people_sd = None
    for group in data.survey.groups:
        frame = data.survey.answers_of(group.key)
        frame = frame[frame["item"].isin(codes)]
        spread = None
        if len(frame):
            keyed = frame.assign(cell=frame["scenario"].astype(str) + "/" + frame["item"])
            matrix, _units, _raters = agreement.long_to_matrix(
                keyed, unit="cell", rater="rater", value="unit"
            )
            spread = agreement.unit_spread(matrix, ddof=SD_DDOF)
        mean_sd = float(np.mean(spread.sds)) if spread is not None and spread.units else None
        if group.key == PEOPLE:
            people_sd = mean_sd
        row = {
            "who": _who(group),
            "model": ""
            if group.key == PEOPLE
            else data.survey.group(group.model_key).label
            if any(g.key == group.model_key for g in data.survey.groups)
            else group.label,
            "variant": group.variant or ("" if group.key == PEOPLE else "As asked"),
            "units": spread.units if spread is not None else 0,
            "mean_sd": mean_sd,
            "vs_people": None
            if mean_sd is None or people_sd is None or group.key == PEOPLE
            else mean_sd - people_sd,
            "unanimous": None
            if spread is None or spread.unanimous is None
            else 100 * spread.unanimous,
            "rho": None,
            "p": None,
            "low": None,
            "high": None,
            "pairs": None,
            "note": "",
        }
        spec = rhos.get(f"rho:{group.key}:{key_of}") if key_of else None
        if group.key != PEOPLE and spec is not None:
            rho, p, n = spec.estimate()
            low, high = _ci(intervals, spec.key)
            found = _rho_row("", rho, p, n, low, high, "pairs")
            row |= {k: found[k] for k in ("rho", "p", "low", "high", "note")} | {"pairs": n}
        rows.append(row)
    return Table(
        name="sweep",
        title="How spread out each one's helpfulness ratings are, and how close to people",
        columns=[
            Column("who", "Who"),
            Column("model", "Proxy model"),
            Column("variant", "Variant"),
            Column("units", "Answers rated twice or more", "int"),
            Column("mean_sd", "Mean SD of an answer's ratings", "float"),
            Column("vs_people", "Minus people's", "float"),
            Column("unanimous", "Answers rated the same by all", "percent", 1),
            Column("rho", "Rho with people", "float"),
            Column("p", "p", "float", 4, bounded=True),
            Column("low", "95% CI low", "float"),
            Column("high", "95% CI high", "float"),
            Column("pairs", "Pairs", "int"),
            Column("note", "Note"),
        ],
        rows=rows,
        notes=[
            f"On the helpfulness items ({', '.join(codes) or 'none'}), answers mapped to -1..1: "
            f"the population SD (ddof={SD_DDOF}) of each answer's ratings among people, or among "
            "a proxy's runs, averaged over the answers rated twice or more; and the share of "
            "those answers whose ratings are all the same.",
            "Each variant of a proxy sweep (a temperature, personas) is a row of its own, after "
            "its model as asked: a variant whose mean SD is nearer people's spreads its ratings "
            "more like people do.",
            "Rho with people: the survey report's rho per group (the per-answer means of the "
            "helpfulness items), with its interval over units.",
        ],
        n=_data_n(data),
    )


def answer_study_report(
    data: AnswerStudyData, *, intervals: dict | None = None
) -> AnswerStudyReport:
    """Every table and figure of the report; `intervals` from `answer_study_intervals` fill the
    confidence columns (empty without)."""
    intervals = intervals or {}
    survey = survey_report(data.survey, intervals=intervals)
    specs = survey_statistics(data.survey)
    items = helpfulness_items(data)
    scale = _scale_text(items)
    groups = pair_groups(data)
    expected = [s.key for s in specs] + [RHO_ANSWERS]
    fits_plain = {g.key: fit_bradley_terry(data, g.key) for g in groups}
    expected += [
        bt_key(key, s.item)
        for key, fit in fits_plain.items()
        for s in fit.strengths
        if s.strength is not None
    ]
    report = AnswerStudyReport(
        data_n=_data_n(data),
        people=len(
            set(data.survey.answers_of(PEOPLE)["rater"])
            | set(data.pairs.loc[data.pairs["group"] == PEOPLE, "rater"])
        ),
        proxies=len(data.survey.proxies),
        answers=len(data.answer_units),
        pairs=len(data.pair_units),
        simulated=data.survey.groups[0].simulated,
        offline=any(g.offline for g in data.survey.proxies) or any(m.offline for m in data.models),
        intervals_missing=sum(1 for key in expected if key not in intervals),
        excluded=data.survey.excluded,
        helpfulness=[item.code for item in items],
        fidelity_notes=list(survey.fidelity_notes),
    )
    tables, figures, methods = report.tables, report.figures, report.methods
    methods |= survey.methods

    for name in SURVEY_TABLES:
        tables[name] = survey.tables[name]
    for name in SURVEY_FIGURES:
        figures[name] = survey.figures[name]
    for name in survey.distributions:
        figures[name] = survey.figures[name]

    tables["helpfulness-rubric"] = _helpfulness_rubric(data, intervals, scale)
    tables["helpfulness-models"] = _helpfulness_models(data)
    figures["helpfulness-vs-score"] = _scatter_figure(data, scale)
    tables["criteria"], tables["criteria-answers"], _found = _criteria_tables(data)
    tables["regression"], fit = _regression(data, scale)
    tables["ranking"], fits = _ranking(data, intervals)
    figures["bt-strengths"] = _strengths_figure(data, fits, intervals)
    tables["win-rates"] = _win_rates(data)
    tables["sweep"] = _sweep(data, intervals, specs)
    report.regularised = [_who(g) for g in groups if fits[g.key].regularised]

    methods |= _methods(data, scale, fit, report.regularised)
    attached = {
        "helpfulness-rubric": ["helpfulness-rubric", "helpfulness-items", "answer-intervals"],
        "helpfulness-models": ["helpfulness-models", "model-score"],
        "criteria": ["criteria", "criteria-verdict"],
        "criteria-answers": ["criteria-answers"],
        "regression": ["regression", "regression-predictors", "regression-dropped"],
        "ranking": ["bt", "bt-ties", "bt-regularisation", "model-score", "bt-intervals"],
        "win-rates": ["win-rates", "bt-ties"],
        "sweep": ["sweep", "sd-ddof"],
    }
    for name, keys in attached.items():
        tables[name].methods = tuple(methods[k] for k in keys)
    figures["helpfulness-vs-score"].table.methods = (methods["helpfulness-rubric"],)
    figures["bt-strengths"].table.methods = (methods["bt"], methods["bt-intervals"])

    runs = _run_entries(data)
    entries = report_entries(tables=tables, figures=figures, runs=runs)
    tables[METHOD_TABLE] = method_table(entries=entries, n=report.data_n)

    report.sections = [
        ("people", "Agreement between people", ["alpha"]),
        (
            "rubric",
            "People against the rubric score",
            ["helpfulness-rubric", "helpfulness-models", "helpfulness-vs-score"],
        ),
        (
            "criteria",
            "People against the auto-rater, criterion by criterion",
            ["criteria", "criteria-answers"],
        ),
        ("predictors", "Which presentation criteria predict helpfulness", ["regression"]),
        (
            "ranking",
            "Models ranked by people's pair judgments",
            ["ranking", "bt-strengths", "win-rates"],
        ),
        ("proxies", "People against proxies", ["rho", "sweep", "ranges", "sd-cdf", "proxies"]),
        ("answers", "Answers per item", list(survey.distributions)),
        ("who", "The people who rated", ["demographics"]),
        ("method", "How each number is made", [METHOD_TABLE]),
    ]
    return report


def _run_entries(data: AnswerStudyData) -> list[tuple[str, Method]]:
    """How the answers were made, graded and drawn: the rows no one table holds."""
    entries = run_methods(data.run) if data.run is not None else []
    draw = data.draw
    if draw is not None:
        entries.append(
            (
                "answers drawn",
                Method(
                    "Which answers people rated",
                    NOT_REPORTED,
                    f"Drawn from sampling run {data.sampling_run_id}, stratified by model, "
                    "topic and score band (below or at and above 65% in grading run "
                    f"{data.grading_run_id}): {draw.answers_per_stratum} answers per stratum and "
                    f"{draw.pairs_per_model_pair} pairs per two models (the same question), "
                    f"seed {draw.seed}.",
                    Fidelity.OURS,
                    {
                        "seed": draw.seed,
                        "answers_per_stratum": draw.answers_per_stratum,
                        "pairs_per_model_pair": draw.pairs_per_model_pair,
                        "strata": ["model", "topic", "band"],
                    },
                ),
            )
        )
    return entries


def _methods(
    data: AnswerStudyData, scale: str, fit: regression.Regression, regularised: list[str]
) -> dict[str, Method]:
    codes = [item.code for item in helpfulness_items(data)]
    dropped = "; ".join(f"{d.name} ({_drop_text(d.reason)})" for d in fit.dropped) or "none"
    return {
        "helpfulness-items": Method(
            "People's helpfulness of an answer",
            NOT_REPORTED,
            f"The mean of people's answers (after exclusions) to the helpfulness items: {scale}.",
            Fidelity.OURS,
            {"items": codes, "group": HELPFULNESS},
        ),
        "helpfulness-rubric": Method(
            "Spearman's rho, people's helpfulness against the rubric score",
            "The benchmark checks its auto-rater against experts' labels, not against the "
            "people its answers are for; no correlation with users is reported.",
            "Spearman's rho (scipy.stats.spearmanr, two-sided) over answers (people's mean "
            "helpfulness against the answer's rubric score in the draw's grading run) and over "
            "models (the means of the same over each model's drawn answers).",
            Fidelity.OURS,
            {"per": ["answer", "model"], "test": "scipy.stats.spearmanr, two-sided"},
        ),
        "answer-intervals": Method(
            "95% interval of rho per answer",
            "No intervals.",
            f"Percentile bootstrap over answers, {RESAMPLES:,} resamples from seed {SEED}; "
            "none for the rho per model (few points).",
            Fidelity.OURS,
            {"bootstrap": "percentile", "resampled": "answers", "resamples": RESAMPLES},
        ),
        "helpfulness-models": Method(
            "A model's drawn answers: people's helpfulness and rubric score",
            NOT_REPORTED,
            "The mean over the model's drawn answers rated by people, each answer the same weight.",
            Fidelity.OURS,
        ),
        "model-score": Method(
            "A model's mean rubric score over the run (Table 3)",
            "A model's samples of a question averaged first, then its questions.",
            "The same, over every scored answer of the grading run.",
            Fidelity.PAPER,
        ),
        "criteria": Method(
            "People against the auto-rater on each presentation criterion",
            "The benchmark compares its auto-rater with experts per criterion; it does not put "
            "its presentation criteria to users.",
            "Per criterion, over answers: people's majority (more than half yes; an even split "
            "left out and counted) against the auto-rater's verdict; percent agreement and "
            "Cohen's kappa (scikit-learn), most disagreement first.",
            Fidelity.OURS,
            {"majority": "more than half", "ties": "left out", "kappa": "sklearn"},
        ),
        "criteria-verdict": Method(
            "Which verdict is the auto-rater's",
            NOT_REPORTED,
            "The judgment (met or not) in the draw's grading run on the answer's rubric "
            "criterion whose shared source is the item's shared presentation criterion; "
            "judgments in error or pending are left out.",
            Fidelity.OURS,
        ),
        "criteria-answers": Method(
            "The answers behind the most disagreed criteria",
            NOT_REPORTED,
            f"For the {DISAGREED_CRITERIA} criteria of lowest agreement with any disagreement, "
            "every answer where people's majority and the auto-rater differ.",
            Fidelity.OURS,
            {"criteria": DISAGREED_CRITERIA},
        ),
        "regression": Method(
            "Which presentation criteria predict people's helpfulness",
            "The benchmark calls for testing its presentation criteria's weights with users, "
            "and gives no model for it.",
            "OLS (statsmodels) of each answer's mean helpfulness among people on the "
            "auto-rater's verdicts (met 1) for each presentation criterion, with an intercept; "
            "classical standard errors, 95% intervals, two-sided p; answers with a missing "
            f"value left out ({fit.rows_missing:,}); over {fit.n:,} answers.",
            Fidelity.OURS,
            {
                "outcome": "people's mean helpfulness",
                "covariance": fit.covariance,
                "n": fit.n,
                "rows_missing": fit.rows_missing,
            },
        ),
        "regression-predictors": Method(
            "The regression's predictors",
            NOT_REPORTED,
            "The auto-rater's verdicts, not people's: Assay's choice, so that the weights "
            "tested are those the rubric score applies.",
            Fidelity.OURS,
            {"predictors": [c.item for c in data.criteria]},
        ),
        "regression-dropped": Method(
            "Predictors left out of the regression",
            NOT_REPORTED,
            f"A criterion with no verdict, the same verdict on every answer, or collinear with "
            f"the others cannot be estimated and is left out: {dropped}.",
            Fidelity.OURS,
            {"dropped": [(d.name, d.reason.value) for d in fit.dropped]},
        ),
        "bt": Method(
            "Models ranked by people's pair judgments (Bradley-Terry)",
            "The benchmark ranks models by mean rubric score; it has no pair judgments.",
            "Bradley-Terry strengths of the models from each group's judgments of pairs (which "
            "of two answers to the same question helps more), fitted by choix's I-LSR to the "
            "maximum-likelihood estimate.",
            Fidelity.OURS,
            {"fit": "choix.ilsr_pairwise_dense", "scale": "log, centred on 0"},
        ),
        "bt-ties": Method(
            "Ties in pair judgments",
            NOT_REPORTED,
            "“They help about the same” counts as half a win each way (no tie parameter).",
            Fidelity.OURS,
            {"ties": "half a win each way"},
        ),
        "bt-regularisation": Method(
            "Bradley-Terry where no maximum-likelihood estimate exists",
            NOT_REPORTED,
            f"Regularised with choix's alpha = {pairs.REGULARISATION} only when some models "
            "never lost (or never won) against the rest: "
            + (", ".join(regularised) if regularised else "no fit here needed it")
            + ".",
            Fidelity.OURS,
            {"alpha": pairs.REGULARISATION, "regularised": regularised},
        ),
        "win-rates": Method(
            "Head-to-head shares of people's pair judgments",
            NOT_REPORTED,
            "For each two models, the share of people's judgments of their pairs that each "
            "won, a tie counting half.",
            Fidelity.OURS,
        ),
        "bt-intervals": Method(
            "95% intervals of the strengths",
            NOT_REPORTED,
            f"Percentile bootstrap over pairs (every judgment of a drawn pair comes along), "
            f"{RESAMPLES:,} resamples from seed {SEED}.",
            Fidelity.OURS,
            {"bootstrap": "percentile", "resampled": "pairs", "resamples": RESAMPLES},
        ),
        "sweep": Method(
            "Spread of the helpfulness ratings, per proxy variant",
            "The spread of each scenario's ratings, shown whole as a curve per item (Figure "
            "5), people and each proxy apart; no variants of a proxy, and no summary of it.",
            "Each answer's SD of its helpfulness ratings (on -1..1), as Figure 5 takes it, "
            "summed up as Assay's choice by their mean and the share of answers rated the same "
            "by all, for people, each proxy and each sweep variant apart (the curves are the "
            "report's Figure 5 above).",
            Fidelity.OURS,
            {"items": codes, "answers_on": [-1, 1], "ddof": SD_DDOF},
        ),
    }
