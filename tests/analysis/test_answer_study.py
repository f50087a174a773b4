"""The answer-study report: every statistic equals its reference computed here from the raw
values the study was built with (krippendorff, scipy, scikit-learn, statsmodels, choix)."""

import pickle

import choix
import krippendorff
import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from apps.analysis.answer_study import (
    answer_study_intervals,
    answer_study_report,
    bt_key,
)
from apps.analysis.answer_study_data import answer_study_data, answer_study_fingerprint
from apps.analysis.method import METHOD_TABLE
from apps.analysis.tables import ANSWERS, TooFew
from apps.grading.models import Judgment
from apps.surveys.models import Answer
from tests.analysis.answer_study_builders import CRITERIA, MODELS, hand_study_make

pytestmark = pytest.mark.django_db

PEOPLE_KEYS = [f"person{n}" for n in range(5)]


@pytest.fixture
def hand():
    return hand_study_make()


@pytest.fixture
def data(hand):
    return answer_study_data(study=hand.study)


def people_help_means(hand) -> dict[int, float]:
    return {
        a["index"]: np.mean([hand.help[(p, a["index"])] for p in PEOPLE_KEYS]) for a in hand.answers
    }


def row(table, **match) -> dict:
    found = [r for r in table.rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, f"{len(found)} rows match {match}"
    return found[0]


def test_the_data_links_each_unit_to_its_answer_model_and_score(hand, data):
    answers = data.answer_units.set_index("unit")
    for answer in hand.answers:
        found = answers.loc[answer["index"]]
        assert found["response_id"] == answer["response"].pk
        assert str(found["model_label"]) == answer["model"]
        assert found["score"] == answer["score"]
    assert len(data.pair_units) == len(hand.pairs)
    verdicts = {(u, i): m for u, i, m in data.verdicts[["unit", "item", "met"]].itertuples(False)}
    assert verdicts == hand.met
    people = data.pairs[data.pairs["group"] == "people"]
    assert len(people) == len(PEOPLE_KEYS) * len(hand.pairs)  # the rejected person left out
    assert set(people["item"]) == {"PREF"}  # the attention check left out
    scores = data.model_scores.set_index("model_id")["mean_score"]
    for name in MODELS:
        assert scores[hand.models[name].pk] == pytest.approx(np.mean(hand.scores[name]))


def test_alpha_between_people_is_krippendorffs_and_pair_items_never_enter_it(hand, data):
    report = answer_study_report(data)
    alpha = report.tables["alpha"]
    units = [a["index"] for a in hand.answers]
    matrix = np.array([[hand.help[(p, u)] for u in units] for p in PEOPLE_KEYS], dtype=float)
    expected = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert row(alpha, who="Between people", items="HELP")["alpha"] == pytest.approx(expected)
    shown = {r["items"] for r in alpha.rows} | {r["items"] for r in report.tables["rho"].rows}
    assert not any("PREF" in items or "AC2" in items for items in shown)
    assert all("PREF" not in name and "AC2" not in name for name in report.figures)


def test_rho_per_answer_is_scipys_spearman_and_per_model_says_too_few(hand, data):
    table = answer_study_report(data).tables["helpfulness-rubric"]
    means = people_help_means(hand)
    x = [means[a["index"]] for a in hand.answers]
    y = [a["score"] for a in hand.answers]
    expected = stats.spearmanr(x, y)
    found = row(table, what="Per answer")
    assert found["rho"] == pytest.approx(expected.statistic)
    assert found["p"] == pytest.approx(expected.pvalue)
    assert found["n"] == len(hand.answers)
    assert row(table, what="Per model")["rho"] == TooFew(len(MODELS))


def test_each_criterion_is_people_majority_against_the_rater_by_kappa_and_hand_count(hand, data):
    table = answer_study_report(data).tables["criteria"]
    for code in CRITERIA:
        people, rater, undecided = [], [], 0
        for a in hand.answers:
            share = np.mean([hand.said[(p, a["index"], code)] for p in PEOPLE_KEYS])
            people.append(share > 0.5)  # five people: never an even split
            rater.append(hand.met[(a["index"], code)])
        agreed = sum(p == r for p, r in zip(people, rater, strict=True))
        found = row(table, item=code)
        assert found["n"] == len(hand.answers)
        assert found["undecided"] == undecided
        assert found["agreed"] == agreed
        assert found["percent"] == pytest.approx(100 * agreed / len(people))
        assert found["kappa"] == pytest.approx(cohen_kappa_score(people, rater))
        assert found["people_only"] == sum(p and not r for p, r in zip(people, rater, strict=True))
        assert found["rater_only"] == sum(r and not p for p, r in zip(people, rater, strict=True))
    percents = [r["percent"] for r in table.rows]
    assert percents == sorted(percents)  # most disagreement first


def test_disagreed_answers_link_to_the_answer_viewer(hand, data):
    report = answer_study_report(data)
    answers = report.tables["criteria-answers"]
    assert answers.rows
    by_response = {a["response"].pk: a for a in hand.answers}
    for found in answers.rows:
        answer = by_response[found["response"]]
        share = np.mean([hand.said[(p, answer["index"], found["item"])] for p in PEOPLE_KEYS])
        assert (share > 0.5) != hand.met[(answer["index"], found["item"])]
        assert found[ANSWERS] == {"answer": found["response"]}
    cells = answers.formatted_cells()[0]
    assert cells[2].answers == f"answer={answers.rows[0]['response']}"


def test_regression_is_statsmodels_ols_of_helpfulness_on_the_raters_verdicts(hand, data):
    table = answer_study_report(data).tables["regression"]
    means = people_help_means(hand)
    y = [means[a["index"]] for a in hand.answers]
    X = np.array([[float(a["met"][c]) for c in CRITERIA] for a in hand.answers])
    kept = [k for k in range(len(CRITERIA)) if np.ptp(X[:, k]) > 0]
    fit = sm.OLS(y, sm.add_constant(X[:, kept])).fit()
    low, high = fit.conf_int(alpha=0.05).T
    terms = ["Intercept", *[CRITERIA[k] for k in kept]]
    for k, term in enumerate(terms):
        found = row(table, term=term)
        assert found["estimate"] == pytest.approx(fit.params[k])
        assert found["low"] == pytest.approx(low[k])
        assert found["high"] == pytest.approx(high[k])
        assert found["p"] == pytest.approx(fit.pvalues[k])


def choix_strengths(judged, models: dict, key: str) -> dict[int, float]:
    """The reference: twice the wins of each model over each other (a tie one win each way),
    fitted by choix to the maximum-likelihood estimate."""
    ids = [models[name].pk for name in MODELS]
    wins = np.zeros((len(ids), len(ids)))
    for who, a, b, outcome in judged:
        if who != key:
            continue
        i, j = ids.index(a), ids.index(b)
        if outcome == "a":
            wins[i, j] += 2
        elif outcome == "b":
            wins[j, i] += 2
        else:
            wins[i, j] += 1
            wins[j, i] += 1
    found = choix.ilsr_pairwise_dense(wins, alpha=0.0, max_iter=1000)
    found = found - found.mean()
    return dict(zip(ids, found, strict=True))


def test_bradley_terry_strengths_are_choix_and_sit_beside_the_rubric_and_proxies(hand, data):
    report = answer_study_report(data)
    table = report.tables["ranking"]
    pairs = {p["index"]: p for p in hand.pairs}
    judged = [
        (
            who,
            hand.models[pairs[u]["model_a"]].pk,
            hand.models[pairs[u]["model_b"]].pk,
            outcome,
        )
        for who, u, outcome in hand.judged
    ]
    people = [(w, a, b, o) for w, a, b, o in judged if w.startswith("person")]
    expected = choix_strengths(
        [("people", a, b, o) for _, a, b, o in people], hand.models, "people"
    )
    assert not any(report.regularised)
    for name in MODELS:
        found = row(table, model=name)
        assert found["strength"] == pytest.approx(expected[hand.models[name].pk], abs=1e-6)
        assert found["judgments"] == sum(
            1 for _, a, b, _ in people if hand.models[name].pk in (a, b)
        )
    ranks = stats.rankdata([-np.mean(hand.scores[n]) for n in MODELS], method="min")
    for name, rank in zip(MODELS, ranks, strict=True):
        assert row(table, model=name)["score_rank"] == rank
    proxy_columns = [c.label for c in table.columns if c.label.startswith("Rank by")]
    assert proxy_columns == ["Rank by Proxy", "Rank by Proxy (temperature 1.0)"]


def test_the_sweep_sets_each_variant_apart_with_its_spread_and_rho(hand, data):
    table = answer_study_report(data).tables["sweep"]
    assert [r["who"] for r in table.rows] == ["People", "Proxy", "Proxy (temperature 1.0)"]
    units = [a["index"] for a in hand.answers]

    def spread(values: np.ndarray) -> tuple[float, float]:
        on_unit = -1 + 2 * (values - 1) / 4
        return on_unit.std(axis=0, ddof=0).mean(), np.mean(np.ptp(values, axis=0) == 0) * 100

    people = np.array([[hand.help[(p, u)] for u in units] for p in PEOPLE_KEYS], dtype=float)
    people_sd, people_same = spread(people)
    assert row(table, who="People")["mean_sd"] == pytest.approx(people_sd)
    assert row(table, who="People")["unanimous"] == pytest.approx(people_same)
    means = people_help_means(hand)
    for group, values in hand.proxy_help.items():
        matrix = np.array([[values[(run, u)] for u in units] for run in range(2)], dtype=float)
        sd, same = spread(matrix)
        who = "Proxy (temperature 1.0)" if "/" in group else "Proxy"
        found = row(table, who=who)
        assert found["mean_sd"] == pytest.approx(sd)
        assert found["vs_people"] == pytest.approx(sd - people_sd)
        assert found["unanimous"] == pytest.approx(same)
        rho = stats.spearmanr(matrix.mean(axis=0), [means[u] for u in units]).statistic
        assert found["rho"] == pytest.approx(rho)


def test_the_method_table_has_an_entry_for_every_table_and_figure(data):
    report = answer_study_report(data)
    where = {r["where"] for r in report.tables[METHOD_TABLE].rows}
    assert set(report.tables) - {METHOD_TABLE} <= where
    assert set(report.figures) <= where
    named = {name for _slug, _heading, names in report.sections for name in names}
    assert named == set(report.tables) | set(report.figures)
    statistics = {r["statistic"] for r in report.tables[METHOD_TABLE].rows}
    assert "Ties in pair judgments" in statistics
    assert "The regression's predictors" in statistics


def test_intervals_fill_the_report_from_one_seed(hand, data):
    told = []
    intervals = answer_study_intervals(
        data, resamples=60, seed=3, progress=lambda done, total: told.append((done, total))
    )
    assert told[-1][0] == told[-1][1]
    assert intervals == answer_study_intervals(data, resamples=60, seed=3)
    report = answer_study_report(data, intervals=intervals)
    assert report.intervals_missing == 0
    people = row(report.tables["alpha"], who="Between people", items="HELP")
    assert people["low"] is not None and people["low"] <= people["alpha"] <= people["high"]
    rho = row(report.tables["helpfulness-rubric"], what="Per answer")
    assert (rho["low"], rho["high"]) == tuple(intervals["rho-answers"][:2])
    alpha_model = row(report.tables["ranking"], model="Alpha")
    key = bt_key("people", hand.models["Alpha"].pk)
    assert (alpha_model["low"], alpha_model["high"]) == tuple(intervals[key][:2])
    assert answer_study_report(data).intervals_missing > 0


def test_the_reports_own_figures_pickle_and_draw(data):
    # A report's own figures are partials over plain data, so that a cache can keep them.
    report = answer_study_report(data)
    for name in ("bt-strengths", "helpfulness-vs-score"):
        figure = pickle.loads(pickle.dumps(report.figures[name]))  # noqa: S301 (our own bytes)
        svg = figure.svg()
        assert svg.startswith("<?xml") and "<title>" in svg
        assert "Alpha" in svg


def test_the_fingerprint_changes_with_a_verdict_or_an_answer(hand):
    before = answer_study_fingerprint(study=hand.study)
    assert answer_study_fingerprint(study=hand.study) == before
    judgment = Judgment.objects.filter(grading_run=hand.grading, criterion__kind="presentation")[0]
    Judgment.objects.filter(pk=judgment.pk).update(met=not judgment.met)
    changed = answer_study_fingerprint(study=hand.study)
    assert changed != before
    answer = Answer.objects.filter(item__code="PREF").first()
    Answer.objects.filter(pk=answer.pk).update(value="equal" if answer.value != "equal" else "a")
    # An answer's value alone changes no count: the survey's fingerprint reads its save time.
    from django.utils import timezone

    Answer.objects.filter(pk=answer.pk).update(saved_at=timezone.now())
    assert answer_study_fingerprint(study=hand.study) != changed


def test_win_rates_are_people_head_to_head_shares_by_hand_count(hand, data):
    table = answer_study_report(data).tables["win-rates"]
    pairs = {p["index"]: p for p in hand.pairs}
    names = [c.label.removeprefix("Against ") for c in table.columns[1:]]
    for found in table.rows:
        mine = str(found["model"])
        for k, other in enumerate(names):
            points = []
            for who, unit, outcome in hand.judged:
                a, b = pairs[unit]["model_a"], pairs[unit]["model_b"]
                if not who.startswith("person") or {a, b} != {mine, other}:
                    continue
                won = "a" if a == mine else "b"
                points.append(0.5 if outcome == "equal" else float(outcome == won))
            if points:
                assert found[f"vs{k}"] == pytest.approx(100 * np.mean(points))
            else:
                assert np.isnan(found[f"vs{k}"])


def test_a_study_nobody_has_rated_yet_reports_without_numbers(hand):
    Answer.objects.filter(assignment__study_scenario__study=hand.study).delete()
    data = answer_study_data(study=hand.study)
    report = answer_study_report(data)
    assert report.people == 0 and report.answers == len(hand.answers)
    assert row(report.tables["helpfulness-rubric"], what="Per answer")["rho"] == TooFew(0)
    assert row(report.tables["regression"], term="Every term")["estimate"] == TooFew(0)
    assert all(r["strength"] is None for r in report.tables["ranking"].rows)
    assert report.tables["criteria-answers"].rows == []
    assert answer_study_intervals(data, resamples=20)  # the survey's keys, with no value
    for name in ("bt-strengths", "helpfulness-vs-score"):
        assert "No data" in report.figures[name].svg()


def test_the_tables_borrowed_from_the_survey_report_speak_of_answers_and_ratings(hand, data):
    """The survey report's tables and figures over an answer study: its units are answers (its
    pairs, which the survey items are not asked of, not counted) and what people gave are
    ratings; what the paper did keeps the paper's words."""
    report = answer_study_report(data)
    borrowed = [report.tables[n] for n in ("alpha", "rho")] + [
        report.figures[n].table for n in ("ranges", "sd-cdf")
    ]
    for table in borrowed:
        words = " ".join([table.title, *table.notes, table.n, *(c.label for c in table.columns)])
        assert "scenario" not in words.lower(), table.name
    assert report.tables["alpha"].n.startswith(f"{len(hand.answers)} answers, ")
    assert " ratings" in report.tables["alpha"].n
    assert "answers" in report.figures["ranges"].svg.keywords["ylabel"]
    ranges = report.methods["ranges"]
    assert "scenario" in ranges.paper and "scenario" not in ranges.ours
    assert report.tables["rho"].methods and all(
        "scenario" not in m.ours for m in report.tables["rho"].methods
    )


def test_the_sweep_summary_is_marked_as_assays_choice_not_the_papers(data):
    """Figure 5 shows each scenario's SD as a curve; the sweep's mean SD and share of unanimous
    answers summarise it, which the paper does not: the method panel says so."""
    from apps.analysis.method import Fidelity

    method = answer_study_report(data).methods["sweep"]
    assert method.fidelity == Fidelity.OURS and "Assay's choice" in method.ours
