"""The benchmark report's numbers: each against a case worked out by hand, and against
scipy (or numpy, pandas) called directly on data rebuilt here from the stored rows.

Worlds are built once per module (tests/analysis/benchmark_builders.py); each test runs in
a transaction rolled back afterwards, so a test that changes a score sees its own change
only.
"""

import math
import statistics
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from scipy import stats

from apps.analysis.benchmark import (
    NOT_ENOUGH,
    SCORE_BINS,
    SD_BINS,
    benchmark_report,
    benchmark_report_for,
    default_pairs,
    pairs_parse,
    table1_parse,
    table_sorted,
)
from apps.analysis.benchmark_compare import benchmark_comparison_for
from apps.analysis.benchmark_data import benchmark_data, benchmark_fingerprint
from apps.analysis.errors import AnalysisError
from apps.analysis.tables import MISSING, TooFew
from apps.grading.models import CallState, Judgment, ResponseScore
from apps.grading.selectors.calibration import run_statistics
from apps.grading.services import scores_compute
from apps.llm.models import ModelConfig
from apps.questions.models import LabelStatus, Question
from stats.points import MIN_POINTS
from tests.analysis.benchmark_builders import (
    ERROR,
    FAILED,
    UNGRADED,
    Q,
    bench_committed,
    bench_make,
    calibration_make,
    grading_add,
)

pytestmark = pytest.mark.django_db
A1, A2, BETA = "Alpha 1", "Alpha 2", "offline-beta"

# The hand-worked world. Per-question means (samples averaged):
#            q1 (accounts)  q2 (accounts)  q3 (scams)  q4 (scams)   q5 (harassment)
#   Alpha 1  .5 .7 -> .6    .9 .9 -> .9    .3          .8 .8 .8     1.0 .95 -> .975
#   Alpha 2  .5             .5             .5          .35          .45 .5 -> .475
#   beta     .2 .4 -> .3    .65            err, .1     failed       ungraded, .8
HAND_ANSWERS = {
    (A1, "q1"): [0.5, 0.7],
    (A1, "q2"): [0.9, 0.9],
    (A1, "q3"): [0.3],
    (A1, "q4"): [0.8, 0.8, 0.8],
    (A1, "q5"): [1.0, 0.95],
    (A2, "q1"): [0.5],
    (A2, "q2"): [0.5],
    (A2, "q3"): [0.5],
    (A2, "q4"): [0.35],
    (A2, "q5"): [0.45, 0.5],
    (BETA, "q1"): [0.2, 0.4],
    (BETA, "q2"): [0.65],
    (BETA, "q3"): [ERROR, 0.1],
    (BETA, "q4"): [FAILED],
    (BETA, "q5"): [UNGRADED, 0.8],
}
# Needs: q1 sensemaking only, q2 neither, q3 both, q4 sensemaking (labels not verified), q5
# guidance only.
HAND_QUESTIONS = [
    Q("q1", prior=True, sensemaking=True, guidance=False),
    Q("q2", guidance=False),
    Q("q3", topic="scams", prior=True, sensemaking=True, guidance=True),
    Q("q4", topic="scams", sensemaking=True, guidance=False, verified=False),
    Q("q5", topic="harassment"),
]
# 43 points; the verdicts below earn 24 of them (the published worked example): the three
# positive factual 5s met (15), the positive presentation 5s not met (0), the negative
# factual 3s avoided (9), the negative presentation 2s not avoided (0).
WORKED_CRITERIA = (
    [("positive", "factual", 5)] * 3
    + [("positive", "presentation", 5)] * 3
    + [("negative", "factual", 3)] * 3
    + [("negative", "presentation", 2)] * 2
)
WORKED_VERDICTS = [True] * 3 + [False] * 3 + [False] * 3 + [True] * 2


@pytest.fixture(scope="module")
def hand(django_db_setup, django_db_blocker):
    with bench_committed(
        django_db_blocker,
        models={A1: "Alpha", A2: "Alpha", BETA: "Beta"},
        questions=HAND_QUESTIONS,
        answers=HAND_ANSWERS,
        name="Hand",
    ) as bench:
        yield bench


def random_world(seed: int = 7):
    """4 models in two families, 24 questions over 4 topics, 3 samples each; scores drawn
    in twentieths, each model around a level of its own; a third of the questions with
    unverified labels."""
    rng = np.random.default_rng(seed)
    topics = ["accounts", "scams", "harassment", "privacy tools"]
    questions = [
        Q(
            f"r{i:02d}",
            topic=topics[i % 4],
            prior=bool(rng.integers(2)),
            sensemaking=bool(rng.integers(2)),
            guidance=bool(rng.integers(2)),
            verified=i % 3 != 2,
        )
        for i in range(24)
    ]
    models = {
        "Gamma small": "Gamma",
        "Gamma large": "Gamma",
        "Delta 1": "Delta",
        "Delta 2": "Delta",
    }
    levels = dict(zip(models, (8, 12, 14, 15), strict=True))
    answers = {
        (model, q.key): [
            int(np.clip(levels[model] + (i % 4) * 1.5 + rng.integers(-4, 5), 0, 20)) / 20
            for _ in range(3)
        ]
        for model in models
        for i, q in enumerate(questions)
    }
    return bench_make(models=models, questions=questions, answers=answers, name="Random")


@pytest.fixture(scope="module")
def drawn(django_db_setup, django_db_blocker):
    with bench_committed(django_db_blocker, build=random_world) as bench:
        yield bench


@pytest.fixture
def hand_report(hand):
    return benchmark_report_for(run=hand.grading)


def by_model(table, model: str) -> dict:
    return next(r for r in table.rows if r["model"].startswith(model))


def model_rows(table) -> list[dict]:
    """Table 3's rows of one model each (not its All models row)."""
    return [r for r in table.rows if r["model"] != "All models"]


# --- the stored rows, rebuilt here ----------------------------------------------------------


def stored_scores(run) -> list[tuple]:
    """(model name, question id, topic, prior, sensemaking, guidance, label status, score) per
    scored answer."""
    return list(
        ResponseScore.objects.filter(grading_run=run).values_list(
            "response__model__display_name",
            "response__question_id",
            "response__question__topic__name",
            "response__question__mentions_prior_attempt",
            "response__question__needs_sensemaking",
            "response__question__needs_guidance",
            "response__question__label_status",
            "score",
        )
    )


def question_means(run) -> dict[str, dict[int, float]]:
    """model -> question id -> the mean of its samples' scores, to 12 places (as the report
    rounds them, so that equal means tie)."""
    samples = defaultdict(list)
    for model, question, *_labels, score in stored_scores(run):
        samples[(model, question)].append(score)
    means = defaultdict(dict)
    for (model, question), scores in samples.items():
        means[model][question] = round(statistics.fmean(scores), 12)
    return means


def question_labels(run) -> dict[int, tuple]:
    """question id -> (topic, prior, sensemaking, guidance, label status)."""
    return {row[1]: row[2:7] for row in stored_scores(run)}


# --- Table 3 ----------------------------------------------------------------------------------


def test_a_models_mean_averages_its_samples_first_then_its_questions(hand_report):
    table = hand_report.tables["table-3"]
    alpha = by_model(table, A1)
    # (.6 + .9 + .3 + .8 + .975) / 5; averaging the ten answers alone would give 73.5.
    assert alpha["mean"] == pytest.approx(71.5)
    assert alpha["topic-accounts"] == pytest.approx(75.0)
    assert alpha["topic-scams"] == pytest.approx(55.0)
    assert alpha["topic-harassment"] == pytest.approx(97.5)
    assert (alpha["answers"], alpha["questions"]) == (10, 5)
    assert by_model(table, A2)["mean"] == pytest.approx(46.5)
    beta = by_model(table, BETA)
    assert beta["mean"] == pytest.approx(46.25)  # its errored, failed and ungraded left out
    assert beta["topic-scams"] == pytest.approx(10.0)  # q3's one scored sample
    assert beta["model"] == "offline-beta (offline)"
    assert [c.label for c in table.columns[:6]] == [
        "Model",
        "Overall mean",
        "Mean SD across samples",
        "accounts",
        "scams",
        "harassment",
    ]


def test_the_sd_under_each_mean_is_the_sample_sd_over_questions_with_two_samples(hand_report):
    table = hand_report.tables["table-3"]
    alpha = by_model(table, A1)
    # q1 .5/.7 -> .1414, q2 and q4 constant -> 0, q5 1/.95 -> .0354; q3's one sample has none.
    expected = (math.sqrt(0.02) + 0 + 0 + math.sqrt(0.00125)) / 4
    assert alpha["sd"] == pytest.approx(100 * expected)
    assert alpha["sd_questions"] == 4
    assert by_model(table, BETA)["sd"] == pytest.approx(100 * math.sqrt(0.02))
    assert any("ddof=1" in note for note in table.notes)


def test_the_all_models_row_is_the_mean_of_the_models_means_by_hand(hand_report):
    table = hand_report.tables["table-3"]
    everyone = table.rows[-1]
    assert everyone["model"] == "All models"
    # Model means 71.5, 46.5 and 46.25 (beta's four scored questions): each model weighs the
    # same. Pooling the fourteen (model, question) means would give 7.75 / 14 = 55.36.
    assert everyone["mean"] == pytest.approx((71.5 + 46.5 + 46.25) / 3)
    assert everyone["mean"] != pytest.approx(100 * 7.75 / 14)
    # Per topic, each model's topic mean first: accounts 75, 50, (.3 + .65) / 2; scams 55,
    # (.5 + .35) / 2, .1 (beta's one scored question); harassment 97.5, 47.5, 80.
    assert everyone["topic-accounts"] == pytest.approx((75 + 50 + 47.5) / 3)
    assert everyone["topic-scams"] == pytest.approx((55 + 42.5 + 10) / 3)
    assert everyone["topic-harassment"] == pytest.approx((97.5 + 47.5 + 80) / 3)
    assert (everyone["answers"], everyone["questions"]) == (21, 5)
    assert everyone["sd"] is None
    assert any("each model weighs the same" in note for note in table.notes)
    assert any("mean over all (model, question) means" in note for note in table.notes)
    assert hand_report.settings["all-models-mean"]["as_published"] is True


def test_the_all_models_row_equals_the_mean_of_the_stored_models_means(drawn):
    report = benchmark_report_for(run=drawn.grading)
    means = question_means(drawn.grading)
    labels = question_labels(drawn.grading)
    everyone = report.tables["table-3"].rows[-1]
    assert everyone["mean"] == pytest.approx(
        100 * statistics.fmean(statistics.fmean(m.values()) for m in means.values())
    )
    for topic in ("accounts", "scams", "harassment", "privacy tools"):
        per_model = [
            statistics.fmean(v for q, v in mine.items() if labels[q][0] == topic)
            for mine in means.values()
        ]
        key = "topic-" + topic.replace(" ", "-")
        assert everyone[key] == pytest.approx(100 * statistics.fmean(per_model)), key


# --- the headline -----------------------------------------------------------------------------


def test_the_headline_by_hand(hand_report):
    rows = {r["figure"]: r for r in hand_report.tables["headline"].rows}
    counts = lambda r: (r["models"], r["questions"], r["answers"])  # noqa: E731
    everyone = rows["Mean over all models"]
    assert everyone["value"] == pytest.approx(54.75)
    assert counts(everyone) == (3, 5, 21)
    best, worst = rows["Best model"], rows["Worst model"]
    assert (best["which"], best["value"], counts(best)) == (A1, pytest.approx(71.5), (1, 5, 10))
    assert worst["which"] == "offline-beta (offline)"
    assert (worst["value"], counts(worst)) == (pytest.approx(46.25), (1, 4, 5))
    # Topics by their all-model means: harassment 75 (one question; answers 2 + 2 + 1), scams
    # 35.83 (q3 and q4; answers 4 + 2 + 1).
    best, worst = rows["Best topic"], rows["Worst topic"]
    assert (best["which"], best["value"], counts(best)) == ("harassment", 75.0, (3, 1, 5))
    assert (worst["which"], counts(worst)) == ("scams", (3, 2, 7))
    assert worst["value"] == pytest.approx(107.5 / 3)
    below = rows["Answers below 65%"]
    assert below["value"] == pytest.approx(100 * 11 / 21)
    assert (below["which"], below["answers"]) == ("11 of 21 scored answers", 21)


def test_the_headline_names_tied_models_together():
    bench = bench_make(
        models={"Even 1": "Even", "Even 2": "Even", "Odd": "Odd"},
        questions=[Q("t1"), Q("t2", topic="scams")],
        answers={
            ("Even 1", "t1"): [0.5],
            ("Even 1", "t2"): [0.7],
            ("Even 2", "t1"): [0.7],
            ("Even 2", "t2"): [0.5],
            ("Odd", "t1"): [0.2],
            ("Odd", "t2"): [0.2],
        },
        name="Ties",
    )
    rows = {r["figure"]: r for r in benchmark_report_for(run=bench.grading).tables["headline"].rows}
    assert rows["Best model"]["which"] == "Even 1 and Even 2"
    assert rows["Best model"]["value"] == pytest.approx(60.0)
    assert rows["Best model"]["models"] == 2
    assert rows["Worst model"]["which"] == "Odd"
    assert rows["Best topic"]["which"] == "accounts and scams"


def test_table_3_equals_the_means_of_the_stored_scores(drawn):
    report = benchmark_report_for(run=drawn.grading)
    means = question_means(drawn.grading)
    labels = question_labels(drawn.grading)
    samples = defaultdict(list)
    for model, question, *_labels, score in stored_scores(drawn.grading):
        samples[(model, question)].append(score)
    for row in model_rows(report.tables["table-3"]):
        mine = means[row["model"]]
        assert row["mean"] == pytest.approx(100 * statistics.fmean(mine.values()))
        sds = [statistics.stdev(s) for (m, _q), s in samples.items() if m == row["model"]]
        assert row["sd"] == pytest.approx(100 * statistics.fmean(sds))
        for topic in ("accounts", "scams", "harassment", "privacy tools"):
            in_topic = [v for q, v in mine.items() if labels[q][0].lower() == topic]
            key = "topic-" + topic.replace(" ", "-")
            assert row[key] == pytest.approx(100 * statistics.fmean(in_topic)), key


def test_the_published_worked_example_scores_55_8_percent():
    bench = bench_make(
        models={"Worked": "W"},
        questions=[Q("w1", criteria=WORKED_CRITERIA)],
        answers={("Worked", "w1"): [WORKED_VERDICTS]},
        name="Worked",
    )
    score = ResponseScore.objects.get(grading_run=bench.grading)
    assert (score.earned_points, score.max_points) == (24, 43)
    report = benchmark_report_for(run=bench.grading)
    row = report.tables["table-3"].formatted_rows()[0]
    assert row[:3] == ["Worked", "55.8%", "\u2014"]  # one sample: no SD
    rates = report.tables["table-4"].rows[0]
    # Met: 3 of 3 positive factual, 0 of 3 positive presentation, 0 of 3 negative factual
    # (avoided), 2 of 2 negative presentation (not avoided).
    groups = (
        "positive-factual",
        "positive-presentation",
        "negative-factual",
        "negative-presentation",
    )
    assert [rates[k] for k in groups] == [100, 0, 0, 100]
    assert [rates[f"{k}-n"] for k in groups] == [3, 3, 3, 2]


def test_table_4_counts_the_judgments_of_scored_answers_in_the_database(drawn, hand):
    for bench in (drawn, hand):
        report = benchmark_report_for(run=bench.grading)
        for model_name, model in bench.models.items():
            row = by_model(report.tables["table-4"], model_name)
            judged = Judgment.objects.filter(
                grading_run=bench.grading,
                response__model=model,
                status=CallState.DONE,
                response__scores__grading_run=bench.grading,
            )
            assert row["positive-factual-n"] == judged.count()
            assert row["positive-factual"] == pytest.approx(
                100 * judged.filter(met=True).count() / judged.count()
            )
    # Beta's errored answer's 19 done judgments are not counted: only its 5 scored answers.
    assert (
        by_model(benchmark_report_for(run=hand.grading).tables["table-4"], BETA)[
            "positive-factual-n"
        ]
        == 5 * 20
    )


def test_table_3_sorts_by_any_column_with_missing_values_last(hand_report):
    table = hand_report.tables["table-3"]
    # The All models row (54.75) stays last, below the models it sums up.
    down = table_sorted(table, key="mean", descending=True)
    assert [r["model"][:7] for r in down.rows] == [A1, A2, "offline", "All mod"]
    up = table_sorted(table, key="mean", descending=False)
    assert [r["model"][:7] for r in up.rows] == ["offline", A2, A1, "All mod"]
    by_name = table_sorted(table, key="model", descending=True)
    assert by_name.rows[0]["model"].startswith("offline")
    assert table_sorted(table, key="nothing", descending=True) is table
    with_gap = [dict(r) for r in table.rows]
    with_gap[0]["sd"] = None
    gapped = table_sorted(
        type(table)(**{**table.__dict__, "rows": with_gap}), key="sd", descending=False
    )
    assert gapped.rows[-1]["sd"] is None


# --- Table 1: one model per family ------------------------------------------------------------

FAMILIES = {
    "Alpha 1": "Alpha",
    "Alpha 2": "Alpha",
    "Alpha 3": "Alpha",
    "Beta old": "Beta",
    "Beta new": "Beta",
    "Solo": "Gamma",
}


def families_world():
    """Alpha: two models with a release date and a third, added last, with none; Beta: no
    release dates, the one named "old" added last; Gamma: one model."""
    answers = {(name, "f1"): [0.05 * (i + 10)] for i, name in enumerate(FAMILIES)}
    bench = bench_make(models=FAMILIES, questions=[Q("f1")], answers=answers, name="Families")
    dates = {
        "Alpha 1": (date(2024, 9, 1), 1),
        "Alpha 2": (date(2024, 5, 1), 2),
        "Alpha 3": (None, 3),
        "Beta old": (None, 5),
        "Beta new": (None, 4),
        "Solo": (None, 6),
    }
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for name, (released, day) in dates.items():
        ModelConfig.objects.filter(pk=bench.models[name].pk).update(
            released_on=released, created_at=start + timedelta(days=day)
        )
    return bench


def table1(bench, chosen=None) -> dict[str, dict]:
    report = benchmark_report(benchmark_data(run=bench.grading), table1=chosen)
    return {r["family"]: r for r in report.tables["table-1"].rows}


def test_table_1_shows_each_familys_newest_by_release_date_then_by_creation():
    bench = families_world()
    rows = table1(bench)
    assert list(rows) == ["Alpha", "Beta", "Gamma"]
    # Alpha 1 has the latest release date; Alpha 3, added last, has none.
    assert rows["Alpha"]["model"] == "Alpha 1"
    assert rows["Alpha"]["released"] == "2024-09-01"
    assert rows["Alpha"]["rule"] == (
        "The newest release date (2024-09-01); 1 of the family's models has none"
    )
    # No release date in Beta: the one added last, whatever its name or id.
    assert rows["Beta"]["model"] == "Beta old"
    assert rows["Beta"]["rule"].startswith("The newest added to Assay")
    assert rows["Gamma"]["rule"] == "The family's only model in this run"
    # The scores are Table 3's.
    table3 = benchmark_report_for(run=bench.grading).tables["table-3"]
    for row in rows.values():
        assert row["mean"] == by_model(table3, row["model"])["mean"]
        assert row["model_id"] == bench.models[row["model"]].pk
    # Dated later, Alpha 2 is the newest.
    ModelConfig.objects.filter(pk=bench.models["Alpha 2"].pk).update(released_on=date(2025, 2, 1))
    assert table1(bench)["Alpha"]["model"] == "Alpha 2"
    # Two release dates alike: the one added last of them.
    ModelConfig.objects.filter(pk=bench.models["Alpha 1"].pk).update(released_on=date(2025, 2, 1))
    assert table1(bench)["Alpha"]["model"] == "Alpha 2"


def test_a_chosen_model_replaces_its_familys_default_in_table_1():
    bench = families_world()
    chosen = bench.models["Alpha 3"].pk
    rows = table1(bench, [chosen])
    assert rows["Alpha"]["model"] == "Alpha 3"
    assert rows["Alpha"]["rule"] == "Chosen instead of the family's newest (Alpha 1)"
    assert rows["Beta"]["model"] == "Beta old"  # the other families keep their default
    report = benchmark_report(benchmark_data(run=bench.grading), table1=[chosen])
    assert [p.rule for p in report.table1] == ["chosen", "created", "only"]
    assert report.settings["table-1"]["picks"]["Alpha"] == {"model": chosen, "rule": "chosen"}
    # Choosing the newest is the default itself.
    assert table1(bench, [bench.models["Alpha 1"].pk])["Alpha"]["rule"].startswith("The newest")


def test_a_bad_table_1_choice_is_refused_with_a_message():
    bench = families_world()
    data = benchmark_data(run=bench.grading)
    a1, a3, solo = (bench.models[n].pk for n in ("Alpha 1", "Alpha 3", "Solo"))
    chosen, refused = table1_parse(
        ["", "x1", "999999999", str(a3), str(a1), str(solo)], data.models
    )
    assert chosen == [a3, solo]
    assert refused == [
        "“x1” is not a model id.",
        "“999999999” names no model that answered in this sampling run.",
        "“Alpha 1” and “Alpha 3” are both of the family Alpha: Table 1 shows one model per "
        "family, so it shows “Alpha 3”.",
    ]
    with pytest.raises(AnalysisError, match="one model of the family Alpha"):
        benchmark_report(data, table1=[a1, a3])
    with pytest.raises(AnalysisError, match="answered in this sampling run"):
        benchmark_report(data, table1=[10**9])


def test_the_fingerprint_follows_a_release_date(hand):
    first = benchmark_fingerprint(run=hand.grading)
    ModelConfig.objects.filter(pk=hand.models[A1].pk).update(released_on=date(2025, 3, 1))
    assert benchmark_fingerprint(run=hand.grading) != first


# --- below 65% --------------------------------------------------------------------------------


def test_answers_below_65_are_counted_per_model_and_0_65_is_not_below(hand_report):
    table = hand_report.tables["below-65"]
    assert [(r["below"], r["scored"]) for r in table.rows] == [(2, 10), (6, 6), (3, 5), (11, 21)]
    assert by_model(table, BETA)["share"] == pytest.approx(60.0)  # its 0.65 is not below
    low = hand_report.tables["low-responses"].rows
    assert len(low) == 11
    assert all(r["score"] < 65 for r in low)
    assert 65.0 not in [r["score"] for r in low]


def test_questions_below_65_average_each_models_mean_first(hand, hand_report):
    rows = hand_report.tables["low-questions"].rows
    # q4: Alpha 1 .8 (three samples) and Alpha 2 .35: (.8 + .35) / 2 = 57.5; pooling the
    # four answers would give 68.75, above the line.
    assert [(r["question"], round(r["mean"], 2)) for r in rows] == [
        ("q3", 30.0),
        ("q1", 46.67),
        ("q4", 57.5),
    ]
    assert rows[0]["question_id"] == hand.questions["q3"].pk
    assert rows[2]["models"] == 2


# --- tests: by hand ---------------------------------------------------------------------------


def test_wilcoxon_of_five_pairs_by_hand_and_as_scipy(hand, hand_report):
    (row,) = hand_report.tables["wilcoxon"].rows  # the one family pair: Alpha 1 and Alpha 2
    assert row["pair"] == "Alpha 1 vs Alpha 2"
    # Differences .1, .4, -.2, .45, .5: ranks 1, 3, 2, 4, 5; W- = 2. Exactly, P(W <= 2) is
    # 3 of the 32 sign patterns ({}, {1}, {2}), twice for two sides: 0.1875.
    assert row["statistic"] == pytest.approx(2.0)
    assert row["p"] == pytest.approx(0.1875)
    assert row["n"] == 5
    means = question_means(hand.grading)
    common = sorted(set(means[A1]) & set(means[A2]))
    scipy = stats.wilcoxon([means[A1][q] for q in common], [means[A2][q] for q in common])
    assert (row["statistic"], row["p"]) == pytest.approx((scipy.statistic, scipy.pvalue))
    assert row["p_bh"] == pytest.approx(0.1875)  # one test: BH leaves it as it is


def test_the_default_pairs_are_the_models_of_one_family(hand):
    data = benchmark_data(run=hand.grading)
    ids = {m.name: m.id for m in data.models}
    assert default_pairs(data.models) == [(ids[A1], ids[A2])]


def test_ks_by_hand_and_questions_without_verified_labels_are_left_out(hand_report):
    prior = by_model(hand_report.tables["ks-prior"], A1)
    # Verified questions: prior attempt q1 (.6), q3 (.3); none q2 (.9), q5 (.975); q4 left out.
    # The two samples do not overlap: D = 1, and the exact p for 2 against 2 is 2/C(4,2) = 1/3.
    assert (prior["n1"], prior["n2"], prior["left_out"]) == (2, 2, 1)
    assert prior["statistic"] == pytest.approx(1.0)
    assert prior["p"] == pytest.approx(1 / 3)
    assert stats.ks_2samp([0.6, 0.3], [0.9, 0.975]).pvalue == pytest.approx(1 / 3)
    assert any(
        "left out: 1 of the run's 5 questions" in n for n in hand_report.tables["ks-prior"].notes
    )


def test_ks_of_each_need_against_its_absence_by_hand(hand_report):
    # Alpha 1, verified questions: q1 .6 (sensemaking), q2 .9 (neither), q3 .3 (both),
    # q5 .975 (guidance); q4 left out. A question with both needs is in the first group of
    # both tests, one with neither in the second of both.
    sense = by_model(hand_report.tables["ks-sensemaking"], A1)
    # Sensemaking {.6, .3} against not {.9, .975}: apart, D = 1, exact p 2/C(4,2) = 1/3.
    assert (sense["n1"], sense["n2"], sense["left_out"]) == (2, 2, 1)
    assert (sense["statistic"], sense["p"]) == pytest.approx((1.0, 1 / 3))
    guide = by_model(hand_report.tables["ks-guidance"], A1)
    # Guidance {.3, .975} against not {.6, .9}: the ECDFs differ by 1/2 at most, the least D
    # two against two can have, so p = 1.
    assert (guide["n1"], guide["n2"], guide["left_out"]) == (2, 2, 1)
    assert (guide["statistic"], guide["p"]) == pytest.approx((0.5, 1.0))
    for row, (a, b) in ((sense, ([0.6, 0.3], [0.9, 0.975])), (guide, ([0.3, 0.975], [0.6, 0.9]))):
        expected = stats.ks_2samp(a, b)
        assert (row["statistic"], row["p"]) == pytest.approx((expected.statistic, expected.pvalue))
    for name, need in (("ks-sensemaking", "sensemaking"), ("ks-guidance", "guidance")):
        table = hand_report.tables[name]
        assert any(
            f"As in the paper: the questions asking for {need} against those that do not" in n
            for n in table.notes
        ), name
        assert [c.label for c in table.columns[4:6]] == [
            f"Asks for {need}: questions",
            "Does not: questions",
        ]
    assert "ks-need" not in hand_report.tables


def test_skewness_and_kurtosis_by_hand():
    from apps.analysis.benchmark import shape

    values = np.array([0.0, 0.0, 0.0, 1.0])
    # Mean 1/4; m2 = 3/16, m3 = 3/32: g1 = m3 / m2^1.5 = 2/sqrt(3). m4 = 21/256: excess
    # kurtosis m4 / m2^2 - 3 = 7/3 - 3 = -2/3.
    skew = shape(values, measure="skewness")
    assert skew["statistic"] == pytest.approx(2 / math.sqrt(3))
    assert skew["p"] is None and "at least 8" in skew["note"]
    kurtosis = shape(values, measure="kurtosis")
    assert kurtosis["statistic"] == pytest.approx(-2 / 3)
    assert kurtosis["p"] is None and "at least 5" in kurtosis["note"]


def test_spearman_across_points_by_hand():
    from apps.analysis.benchmark import spearman_across

    # Means .2 .4 .6 .8 1.0 against medians in the same order but one swap: ranks 1 2 3 5 4,
    # d^2 = 2, rho = 1 - 6 * 2 / (5 * 24) = 0.9.
    means = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
    medians = np.array([0.1, 0.3, 0.5, 0.9, 0.7])
    found = spearman_across(means, medians, what="median")
    assert found["statistic"] == pytest.approx(0.9)
    assert found["p"] == pytest.approx(stats.spearmanr(means, medians).pvalue)
    assert "fewer than 10: the p is not meaningful" in found["note"]


def test_a_rho_over_too_few_points_says_so_instead_of_a_number(hand_report):
    # Alpha 1 over its three topics has rho = 1 with p = 0: fewer than MIN_POINTS points,
    # so the page shows neither, but how few there are.
    table = hand_report.tables["spearman-topics"]
    index = next(
        i for i, r in enumerate(table.rows) if r["scope"] == A1 and r["relation"].endswith("median")
    )
    row = table.rows[index]
    assert row["statistic"] == TooFew(3) and row["p"] is None and row["p_bh"] is None
    assert (row["n"], row["unit"], row["method"]) == (3, "topics", "Added by Assay")
    assert row["note"] == (
        f"Too few points: 3 topics with scored questions (at least {MIN_POINTS} needed)."
    )
    shown = dict(zip([c.key for c in table.columns], table.formatted_rows()[index], strict=True))
    assert (shown["statistic"], shown["p"]) == ("too few points (n = 3)", MISSING)
    csv = dict(zip([c.key for c in table.columns], list(table.raw_rows())[index], strict=True))
    assert csv["statistic"] is None


def test_a_rho_over_fewer_than_10_points_keeps_its_p_but_says_it_is_not_meaningful(hand_report):
    # The paper's test over the hand world's 9 (model, topic) cells: the same caution.
    for cell_row in hand_report.tables["spearman"].rows:
        assert cell_row["n"] == 9 and cell_row["p"] is not None
        assert "Over 9 (model, topic) cells, fewer than 10" in cell_row["note"]


# --- tests: every statistic against scipy on the stored rows ----------------------------------


def test_every_test_equals_scipy_on_the_stored_rows(drawn):
    report = benchmark_report_for(run=drawn.grading)
    means = question_means(drawn.grading)
    labels = question_labels(drawn.grading)
    scores = defaultdict(list)
    for model, _q, *_labels, score in stored_scores(drawn.grading):
        scores[model].append(score)

    for row in report.tables["kruskal"].rows:
        groups = defaultdict(list)
        for question, mean in means[row["model"]].items():
            groups[labels[question][0]].append(mean)
        expected = stats.kruskal(*groups.values())
        assert (row["statistic"], row["p"]) == pytest.approx((expected.statistic, expected.pvalue))
        assert row["topics"] == 4

    settled = (LabelStatus.VERIFIED, LabelStatus.RESOLVED)
    for name, split in (
        ("ks-prior", lambda lab: lab[1]),
        ("ks-sensemaking", lambda lab: lab[2]),
        ("ks-guidance", lambda lab: lab[3]),
    ):
        for row in report.tables[name].rows:
            mine = means[row["model"]]
            kept = [q for q in mine if labels[q][4] in settled]
            a = [mine[q] for q in kept if split(labels[q])]
            b = [mine[q] for q in kept if not split(labels[q])]
            expected = stats.ks_2samp(a, b)
            assert (row["statistic"], row["p"]) == pytest.approx(
                (expected.statistic, expected.pvalue)
            )
            assert (row["n1"], row["n2"], row["left_out"]) == (
                len(a),
                len(b),
                len(mine) - len(kept),
            )

    for row in report.tables["spearman-topics"].rows:
        # Four topics: fewer than MIN_POINTS (the cells' test above is over 16 points).
        assert row["n"] == 4 and row["statistic"] == TooFew(4) and row["p"] is None

    for row in report.tables["skewness"].rows:
        values = scores[row["model"]]
        assert row["statistic"] == pytest.approx(stats.skew(values, bias=True))
        test = stats.skewtest(values)
        assert (row["z"], row["p"], row["n"]) == pytest.approx((test.statistic, test.pvalue, 72))
    for row in report.tables["kurtosis"].rows:
        values = scores[row["model"]]
        assert row["statistic"] == pytest.approx(stats.kurtosis(values, fisher=True, bias=True))
        test = stats.kurtosistest(values)
        assert (row["z"], row["p"]) == pytest.approx((test.statistic, test.pvalue))

    wilcoxon = report.tables["wilcoxon"].rows
    assert [r["pair"] for r in wilcoxon] == ["Delta 1 vs Delta 2", "Gamma large vs Gamma small"]
    for row in wilcoxon:
        first, second = row["pair"].split(" vs ")
        common = sorted(set(means[first]) & set(means[second]))
        expected = stats.wilcoxon(
            [means[first][q] for q in common], [means[second][q] for q in common]
        )
        assert (row["statistic"], row["p"], row["n"]) == pytest.approx(
            (expected.statistic, expected.pvalue, 24)
        )


def test_the_spearman_over_model_topic_cells_equals_spearmanr_on_the_stored_rows(drawn):
    report = benchmark_report_for(run=drawn.grading)
    means = question_means(drawn.grading)
    labels = question_labels(drawn.grading)
    cells = defaultdict(list)  # (model, topic) -> the model's per-question means in the topic
    for model, mine in means.items():
        for question, mean in mine.items():
            cells[(model, labels[question][0])].append(mean)
    keys = sorted(cells)
    cell_means = [np.mean(cells[k]) for k in keys]
    others = {
        "IQR": [np.subtract(*np.percentile(cells[k], [75, 25])) for k in keys],
        "median": [np.median(cells[k]) for k in keys],
    }
    table = report.tables["spearman"]
    assert [r["relation"] for r in table.rows] == [
        "A cell's mean and its IQR",
        "A cell's mean and its median",
    ]
    for row in table.rows:
        expected = stats.spearmanr(cell_means, others[row["relation"].rsplit(" ", 1)[1]])
        assert (row["statistic"], row["p"]) == pytest.approx((expected.statistic, expected.pvalue))
        # 4 models x 4 topics; enough points for a p that means something.
        assert (row["n"], row["unit"], row["method"]) == (
            16,
            "(model, topic) cells",
            "As published",
        )
        assert row["note"] == ""
    shown = [c.label for c in table.columns]
    assert "n" in shown and "Unit" in shown
    assert table.n.startswith("16 (model, topic) cells of ")
    assert report.settings["spearman"]["unit"] == "(model, topic) cells"
    assert report.settings["spearman"]["n"] == 16


def test_every_familys_bh_column_equals_false_discovery_control(drawn):
    report = benchmark_report_for(run=drawn.grading)
    families = [
        "wilcoxon",
        "kruskal",
        "ks-prior",
        "ks-sensemaking",
        "ks-guidance",
        "spearman",
        "spearman-topics",
        "skewness",
        "kurtosis",
    ]
    for name in families:
        table = report.tables[name]
        tested = [r for r in table.rows if r["p"] is not None]
        # Across four topics every rho is too few points: nothing to adjust.
        assert tested or name == "spearman-topics", name
        expected = stats.false_discovery_control([r["p"] for r in tested], method="bh")
        assert [r["p_bh"] for r in tested] == pytest.approx(list(expected)), name
        assert any(f"This family holds {len(table.rows)} test" in n for n in table.notes), name
        assert any("p-values are unadjusted" in n for n in table.notes), name


def test_chosen_pairs_are_tested_and_a_pair_that_is_not_one_is_refused(drawn):
    data = benchmark_data(run=drawn.grading)
    ids = {m.name: m.id for m in data.models}
    pair = (ids["Gamma small"], ids["Delta 2"])
    report = benchmark_report_for(run=drawn.grading, pairs=[pair])
    (row,) = report.tables["wilcoxon"].rows
    assert row["pair"] == "Gamma small vs Delta 2"
    assert not report.default_pairs
    with pytest.raises(AnalysisError):
        benchmark_report(data, pairs=[(pair[0], pair[0])])
    with pytest.raises(AnalysisError):
        benchmark_report(data, pairs=[(pair[0], 10**9)])
    a, b = pair
    asked = ["1-x", f"{a}-{a}", f"{a}-999999", f"{a}-{b}", f"{a}-{b}"]
    parsed, refused = pairs_parse(asked, data.models)
    assert parsed == [pair]
    assert len(refused) == 3
    assert "is not a pair" in refused[0] and "with itself" in refused[1]
    assert "no answers in this sampling run" in refused[2]


# --- undefined cases --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sparse(django_db_setup, django_db_blocker):
    """Two models of one family with the same scores (every difference zero); a third with
    two questions only, both scored alike; one topic; nobody mentions a prior attempt."""
    answers = {
        ("Same 1", "s1"): [0.5, 0.6],
        ("Same 1", "s2"): [0.7],
        ("Same 1", "s3"): [0.2],
        ("Same 2", "s1"): [0.55],
        ("Same 2", "s2"): [0.7],
        ("Same 2", "s3"): [0.2],
        ("Flat", "s1"): [0.4],
        ("Flat", "s2"): [0.4],
    }
    with bench_committed(
        django_db_blocker,
        models={"Same 1": "Same", "Same 2": "Same", "Flat": "Same"},
        questions=[Q("s1"), Q("s2"), Q("s3")],
        answers=answers,
        name="Sparse",
    ) as bench:
        yield bench


def test_undefined_tests_say_why_and_hold_no_nan(sparse):
    report = benchmark_report_for(run=sparse.grading)
    wilcoxon = {r["pair"]: r for r in report.tables["wilcoxon"].rows}
    # Over fewer than MIN_POINTS questions no pair is tested: too few points, with n.
    assert wilcoxon["Same 1 vs Same 2"]["statistic"] == TooFew(3)
    assert wilcoxon["Same 1 vs Same 2"]["note"] == (
        f"Too few points: 3 questions both models answered (at least {MIN_POINTS} needed)."
    )
    assert wilcoxon["Flat vs Same 1"]["statistic"] == TooFew(2)
    kruskal = by_model(report.tables["kruskal"], "Flat")
    assert "1 topic with scored questions" in kruskal["note"]
    ks = by_model(report.tables["ks-prior"], "Same 1")
    assert ks["note"] == NOT_ENOUGH + "no question in the group “Mentions a prior attempt”."
    spearman = report.tables["spearman-topics"].rows[0]
    assert f"1 topic with scored questions (at least {MIN_POINTS} needed)" in spearman["note"]
    skew = by_model(report.tables["skewness"], "Flat")
    assert "every score is the same" in skew["note"]
    families = (
        "wilcoxon",
        "kruskal",
        "ks-prior",
        "ks-sensemaking",
        "ks-guidance",
        "spearman",
        "spearman-topics",
        "skewness",
        "kurtosis",
    )
    for name in families:
        for row in report.tables[name].rows:
            if row["note"].startswith(NOT_ENOUGH):
                assert row["statistic"] is None and row["p"] is None and row["p_bh"] is None
            if row["note"].startswith("Too few points"):
                assert row["statistic"] == TooFew(row["n"]) and row["p"] is None
            for value in row.values():
                assert not (isinstance(value, float) and math.isnan(value)), (name, row)
    for table in report.tables.values():
        for raw in table.raw_rows():
            assert not any(isinstance(v, float) and math.isnan(v) for v in raw)


def test_an_empty_grading_run_gives_a_report_of_dashes():
    bench = bench_make(
        models={"Quiet": "Q"},
        questions=[Q("e1")],
        answers={("Quiet", "e1"): [UNGRADED]},
        name="Empty",
    )
    report = benchmark_report_for(run=bench.grading)
    assert report.scored == 0 and report.missing == 1
    row = report.tables["table-3"].rows[0]
    assert row["mean"] is None and row["answers"] == 0
    assert report.tables["low-questions"].rows == []
    assert report.tables["skewness"].rows[0]["note"] == NOT_ENOUGH + "0 answers."
    for figure in report.figures.values():
        assert "No data" in figure.svg()


# --- missing scores, calibration, figures ---------------------------------------------------


def test_errored_judgments_are_counted_as_missing_with_their_reason(hand_report):
    beta = by_model(hand_report.tables["missing"], BETA)
    assert (beta["answers"], beta["scored"], beta["missing"]) == (8, 5, 3)
    assert (beta["errored"], beta["unanswered"], beta["pending"]) == (1, 1, 1)
    labels = [c.label for c in hand_report.tables["missing"].columns]
    assert "A judgment is an error: retry it" in labels
    (error,) = hand_report.tables["errors"].rows
    assert (error["kind"], error["judgments"], error["answers"]) == ("invalid_output", 1, 1)
    assert error["label"] == "Answer failed validation"
    assert hand_report.errored == 1 and hand_report.missing == 3


def test_the_calibration_headline_is_the_calibration_reports(hand):
    q1 = hand.rubrics["q1"]
    n = q1.criteria.count()
    labels = {
        (A1, "q1", 0): [i < 9 for i in range(n)],
        (A1, "q2", 0): [i < 17 for i in range(n)],
        (A2, "q3", 0): [i < 12 for i in range(n)],
        (BETA, "q5", 1): [i < 15 for i in range(n)],
        (A2, "q4", 0): [None] * n,
    }
    calibration = calibration_make(hand, labels=labels)
    report = benchmark_report_for(run=hand.grading)
    (row,) = report.tables["calibration"].rows
    expected = run_statistics(calibration_set=calibration.calibration_set, grading_run=hand.grading)
    correlation, agreement = expected.scores[0].correlation, expected.agreements[0].agreement
    # Four answers compared: fewer than MIN_POINTS, so no r, but how few; the labels' agreement
    # is over their 44 labels.
    assert expected.scores[0].n == 4 and correlation is not None
    assert (row["r"], row["p"], row["answers"]) == (TooFew(4), None, 4)
    assert (row["accuracy"], row["kappa"], row["f1"]) == pytest.approx(
        (100 * agreement.accuracy, agreement.kappa, agreement.f1_macro)
    )
    assert row["left_out"] == n  # q4's labels are not settled
    assert row["calibration_id"] == calibration.pk
    rater = next(r for r in report.tables["headline"].rows if r["key"] == "rater")
    assert (rater["r"], rater["answers"]) == (TooFew(4), 4)


def test_the_headline_quotes_the_calibrations_r_over_enough_answers(drawn):
    keys = [("Gamma small", "r00"), ("Gamma large", "r01"), ("Delta 1", "r02")]
    keys += [("Delta 2", "r03"), ("Gamma small", "r04"), ("Delta 1", "r05")]
    labels = {}
    for k, (model, key) in enumerate(keys):
        n = drawn.rubrics[key].criteria.count()
        labels[model, key, 0] = [(i + k) % 3 != 0 for i in range(n)]
    calibration = calibration_make(drawn, labels=labels)
    report = benchmark_report_for(run=drawn.grading)
    expected = run_statistics(
        calibration_set=calibration.calibration_set, grading_run=drawn.grading
    ).scores[0]
    assert expected.n == 6 >= MIN_POINTS
    (row,) = report.tables["calibration"].rows
    assert (row["r"], row["answers"]) == (pytest.approx(expected.correlation.r), 6)
    rater = next(r for r in report.tables["headline"].rows if r["key"] == "rater")
    assert (rater["r"], rater["answers"], rater["which"]) == (
        pytest.approx(expected.correlation.r),
        6,
        calibration.calibration_set.name,
    )


def test_the_headline_says_the_auto_rater_is_not_yet_measured_without_a_calibration(
    hand_report,
):
    rater = next(r for r in hand_report.tables["headline"].rows if r["key"] == "rater")
    assert (rater["r"], rater["answers"]) == (None, None)
    assert rater["which"].startswith("Not yet measured")


def test_each_figures_data_is_what_it_draws(drawn):
    report = benchmark_report_for(run=drawn.grading)
    scores = defaultdict(list)
    for model, _q, *_labels, score in stored_scores(drawn.grading):
        scores[model].append(score)
    table = report.figures["figure-3"].table
    for model, values in scores.items():
        counts = [r["count"] for r in table.rows if r["model"] == model]
        assert counts == list(np.histogram(values, bins=SCORE_BINS)[0])
    means = question_means(drawn.grading)
    table = report.figures["figure-4"].table
    for model, mine in means.items():
        counts = [r["count"] for r in table.rows if r["model"] == model]
        assert counts == list(np.histogram(list(mine.values()), bins=SCORE_BINS)[0])
    sds = report.figures["figure-6"].table
    assert sum(r["count"] for r in sds.rows) == 4 * 24
    assert [r["low"] for r in sds.rows[: len(SD_BINS) - 1]] == SD_BINS[:-1]
    topic = report.figures["figure-5"].table
    table3 = {r["model"]: r for r in report.tables["table-3"].rows}
    for row in topic.rows:
        key = "topic-" + row["topic"].lower().replace(" ", "-")
        assert row["mean"] == pytest.approx(table3[row["model"]][key])


# --- the cache, and two runs side by side ----------------------------------------------------


def test_the_report_is_kept_until_a_score_changes(hand):
    run = hand.grading
    before = benchmark_report_for(run=run)
    with CaptureQueriesContext(connection) as kept:
        again = benchmark_report_for(run=run)
    assert again.tables["table-3"].rows == before.tables["table-3"].rows
    reads = [q["sql"] for q in kept.captured_queries if "grading_responsescore" in q["sql"]]
    assert all("SUM" in sql or "COUNT" in sql for sql in reads)  # the fingerprint only

    # Alpha 2's q2 answer, regraded: 10 criteria met of 20 becomes 20 of 20.
    answer = hand.answer(A2, "q2")
    fingerprint = benchmark_fingerprint(run=run)
    Judgment.objects.filter(grading_run=run, response=answer).update(met=True)
    scores_compute(grading_run_id=run.pk, response_ids=[answer.pk])
    assert benchmark_fingerprint(run=run) != fingerprint
    after = benchmark_report_for(run=run)
    assert by_model(after.tables["table-3"], A2)["mean"] == pytest.approx(46.5 + 50 / 5)


def test_the_fingerprint_follows_labels_and_names(hand):
    run = hand.grading
    first = benchmark_fingerprint(run=run)
    Question.objects.filter(pk=hand.questions["q4"].pk).update(label_status=LabelStatus.VERIFIED)
    second = benchmark_fingerprint(run=run)
    assert second != first
    ModelConfig.objects.filter(pk=hand.models[A1].pk).update(display_name="Renamed")
    assert benchmark_fingerprint(run=run) != second


def test_two_grading_runs_side_by_side(hand):
    # A second grader of the same answers: every Alpha 1 answer scored .1 higher (capped),
    # Alpha 2's the same, beta not graded at all.
    answers = {
        key: [min(1.0, round(v + 0.1, 2)) for v in values] if key[0] == A1 else values
        for key, values in HAND_ANSWERS.items()
        if key[0] != BETA
    }
    other = grading_add(hand, answers=answers, name="Second grader")
    comparison = benchmark_comparison_for(run=hand.grading, other=other)
    overall = {r["model"].split(" (")[0]: r for r in comparison.tables["overall"].rows}
    assert overall[A1]["mean_a"] == pytest.approx(71.5)
    # (.7 + 1.0 + .4 + .9 + 1.0) / 5
    assert overall[A1]["mean_b"] == pytest.approx(80.0)
    assert overall[A1]["difference"] == pytest.approx(8.5)
    assert overall[A2]["difference"] == pytest.approx(0.0)
    assert overall[BETA]["mean_b"] is None and overall[BETA]["difference"] is None

    first, second = question_means(hand.grading), question_means(other)
    rows = {r["model"].split(" (")[0]: r for r in comparison.tables["correlation"].rows}
    common = sorted(set(first[A1]) & set(second[A1]))
    x, y = [first[A1][q] for q in common], [second[A1][q] for q in common]
    assert rows[A1]["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert rows[A1]["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert rows[A1]["n"] == 5
    assert "0 questions in both runs" in rows[BETA]["note"]
    runs = comparison.tables["runs"].rows
    assert [r["grader"] for r in runs] == [
        f"{hand.grading.grader.display_name} (offline demo model)",
        "offline-grader (Second grader) (offline demo model)",
    ]
    rates = [r for r in comparison.tables["rates"].rows if r["model"] == A1]
    assert rates[0]["rate_b"] - rates[0]["rate_a"] == pytest.approx(rates[0]["difference"])
