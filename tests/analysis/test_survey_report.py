"""The survey report's numbers, checked against the stored answers: every expected value is
worked out here from `Answer` rows (or by hand) with the `krippendorff` package and
scipy.stats.spearmanr, never by the code under test."""

import math
from collections import defaultdict

import krippendorff
import numpy as np
import pytest
from scipy import stats

from apps.analysis import services
from apps.analysis.method import Fidelity
from apps.analysis.models import BootstrapStatus, SurveyBootstrap
from apps.analysis.survey import (
    RESAMPLES,
    SEED,
    proxy_consensus,
    survey_report,
    survey_statistics,
)
from apps.analysis.survey_data import survey_data, survey_fingerprint
from apps.analysis.tables import TooFew
from apps.surveys.models import Answer, ParticipantKind, ReviewStatus, SurveyItem
from stats import agreement
from stats.bootstrap import resample_draws
from stats.points import MIN_POINTS
from tests.analysis.builders import person, proxy, rate
from tests.analysis.conftest import ITEMS, SCALES
from tests.factories import ModelConfigFactory
from tests.stats.test_correlation import spearman_bootstrap

pytestmark = [
    pytest.mark.django_db,
    # a side with one value (the hand-made case) has no rho, and scipy says so
    pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning"),
]
POOLED = "Pooled: " + ", ".join(SCALES)
MEDIANS = "Across proxies, each the median of its runs (Assay's addition)"
GROUPS = {
    "helpfulness (H2, H3)": ["H2", "H3"],
    "privacy (P1, P2, P3, P4)": ["P1", "P2", "P3", "P4"],
}


# --- the expected values, from the stored rows ----------------------------------------------


def stored(study) -> list[tuple]:
    """(who, rater, scenario index, item, value) for every answer of the study: who is
    "people" or the proxy's model id; yes 1 and no 0. No exclusions: the studies these tests
    read have none."""
    names = sorted(study.study_scenarios.values_list("scenario__name", flat=True))
    rows = Answer.objects.filter(assignment__study_scenario__study=study).values_list(
        "assignment__participant__kind",
        "assignment__participant__model_id",
        "assignment__participant_id",
        "assignment__study_scenario__scenario__name",
        "item__code",
        "value",
    )
    out = []
    for kind, model_id, rater, name, code, value in rows:
        who = "people" if kind == ParticipantKind.HUMAN else model_id
        number = {"yes": 1.0, "no": 0.0}.get(value) if code == "H1" else float(value)
        out.append((who, rater, names.index(name), code, number))
    return out


def lower_medians(records) -> list[tuple]:
    """Each proxy as one rater: the lower median of its runs' ratings of each unit."""
    runs = defaultdict(list)
    for who, _rater, s, code, value in records:
        if who != "people":
            runs[who, s, code].append(value)
    return [
        ("proxies", who, s, code, sorted(values)[(len(values) - 1) // 2])
        for (who, s, code), values in runs.items()
    ]


def reliability(records, *, who, codes, scenarios: int) -> np.ndarray:
    raters = sorted({r for w, r, *_ in records if w == who})
    units = [(s, code) for s in range(scenarios) for code in codes]
    matrix = np.full((len(raters), len(units)), np.nan)
    for w, rater, s, code, value in records:
        if w == who and code in codes:
            matrix[raters.index(rater), units.index((s, code))] = value
    return matrix


def packages_alpha(matrix, codes) -> float:
    if codes == ["H1"]:
        return krippendorff.alpha(
            reliability_data=matrix, level_of_measurement="nominal", value_domain=[0.0, 1.0]
        )
    return krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1.0, 2, 3, 4, 5]
    )


def means(records, who, scenarios: int) -> dict[tuple[int, str], float]:
    """(scenario, item) -> the mean of `who`'s ratings (people, or a proxy over its runs)."""
    found = defaultdict(list)
    for w, _rater, s, code, value in records:
        if w == who:
            found[s, code].append(value)
    return {unit: float(np.mean(values)) for unit, values in found.items()}


def alpha_rows(report) -> dict[tuple[str, str], dict]:
    return {(row["who"], row["items"]): row for row in report.tables["alpha"].rows}


def item_sets():
    return [(code, [code]) for code in ITEMS] + [(POOLED, SCALES)]


def assert_alpha_row(row, matrix, codes):
    rated = ~np.isnan(matrix)
    assert row["alpha"] == pytest.approx(packages_alpha(matrix, codes), abs=1e-9)
    assert row["level"] == ("nominal" if codes == ["H1"] else "ordinal")
    assert row["units"] == int((rated.sum(axis=0) >= 2).sum())
    assert row["raters"] == int(rated.any(axis=1).sum())
    assert row["ratings"] == int(rated.sum())


# --- 1. alpha ---------------------------------------------------------------------------------


def test_alpha_between_people_equals_the_package_per_item_and_pooled(rated_study):
    records = stored(rated_study.study)
    rows = alpha_rows(survey_report(survey_data(study=rated_study.study)))

    for label, codes in item_sets():
        matrix = reliability(records, who="people", codes=codes, scenarios=8)
        assert_alpha_row(rows["Between people", label], matrix, codes)
    pooled = rows["Between people", POOLED]
    # 10 people, 4 scenarios each, 6 scale items; every unit is rated by 5 people.
    assert (pooled["raters"], pooled["ratings"], pooled["units"]) == (10, 240, 48)


def test_alpha_within_each_proxy_takes_its_runs_as_raters(rated_study):
    records = stored(rated_study.study)
    rows = alpha_rows(survey_report(survey_data(study=rated_study.study)))

    for model in rated_study.models:
        for label, codes in item_sets():
            matrix = reliability(records, who=model.pk, codes=codes, scenarios=8)
            row = rows[f"Within {model.display_name}, across its runs", label]
            assert_alpha_row(row, matrix, codes)
            assert row["raters"] == 3


def test_alpha_across_proxies_takes_every_run_of_every_proxy_as_a_coder(make_study):
    """The published row: 5 proxy models x 5 runs, 25 coders, straight from the Answer rows."""
    study = make_study(live=False, count=5)  # five scenarios: H1 alone has MIN_POINTS units
    rng = np.random.default_rng(7)
    level = rng.integers(1, 6, size=(5, len(ITEMS)))
    for name in ("one", "two", "three", "four", "five"):
        model = ModelConfigFactory(name=f"offline-{name}")
        for run in range(5):
            answers = {}
            for s in range(5):
                values = np.clip(level[s] + rng.integers(-1, 2, size=len(ITEMS)), 1, 5)
                answers[s] = {
                    code: ("yes" if v >= 3 else "no") if code == "H1" else str(v)
                    for code, v in zip(ITEMS, values, strict=True)
                }
            rate(proxy(study, model, run), answers)

    rows = alpha_rows(survey_report(survey_data(study=study)))

    coders = sorted(
        set(
            Answer.objects.filter(
                assignment__participant__study=study,
                assignment__participant__kind=ParticipantKind.PROXY,
            ).values_list("assignment__participant_id", flat=True)
        )
    )
    assert len(coders) == 25
    for label, codes in item_sets():
        units = [(s, code) for s in range(5) for code in codes]
        matrix = np.full((len(coders), len(units)), np.nan)
        for rater, name, code, value in Answer.objects.filter(
            assignment__participant_id__in=coders, item__code__in=codes
        ).values_list(
            "assignment__participant_id",
            "assignment__study_scenario__scenario__name",
            "item__code",
            "value",
        ):
            s = sorted(study.study_scenarios.values_list("scenario__name", flat=True)).index(name)
            number = {"yes": 1.0, "no": 0.0}[value] if code == "H1" else float(value)
            matrix[coders.index(rater), units.index((s, code))] = number
        if codes == ["H1"]:
            expected = krippendorff.alpha(
                reliability_data=matrix, level_of_measurement="nominal", value_domain=[0.0, 1.0]
            )
        else:
            expected = krippendorff.alpha(
                reliability_data=matrix,
                level_of_measurement="ordinal",
                value_domain=[1.0, 2.0, 3.0, 4.0, 5.0],
            )
        row = rows["Across proxies", label]
        assert row["alpha"] == pytest.approx(expected, abs=1e-9), label
        assert (row["raters"], row["ratings"]) == (25, 25 * len(units))
        assert row["units"] == len(units)


def test_alpha_across_proxy_medians_is_a_labelled_extra_row(rated_study):
    records = lower_medians(stored(rated_study.study))
    rows = alpha_rows(survey_report(survey_data(study=rated_study.study)))

    for label, codes in item_sets():
        matrix = reliability(records, who="proxies", codes=codes, scenarios=8)
        row = rows[MEDIANS, label]
        assert_alpha_row(row, matrix, codes)
        assert row["raters"] == 2
        assert row["units"] == 8 * len(codes)
        # The published row beside it: the 2 models' 3 runs each, 6 coders.
        assert rows["Across proxies", label]["raters"] == 6


def test_across_proxies_an_even_number_of_runs_takes_the_lower_median(make_study):
    study = make_study(live=False, count=2)
    runs = {
        "offline-terse": [
            {0: {"H1": "yes", "H2": "2"}, 1: {"H1": "yes", "H2": "5"}},
            {0: {"H1": "no", "H2": "4"}, 1: {"H1": "yes", "H2": "5"}},
        ],
        "offline-friendly": [
            {0: {"H1": "no", "H2": "3"}, 1: {"H1": "yes", "H2": "1"}},
            {0: {"H1": "no", "H2": "3"}, 1: {"H1": "no", "H2": "5"}},
        ],
    }
    for name, answers in runs.items():
        model = ModelConfigFactory(name=name)
        for run, values in enumerate(answers):
            rate(proxy(study, model, run), values)

    data = survey_data(study=study)
    rows = alpha_rows(survey_report(data))

    # terse: s0 H1 yes/no -> no (a tie goes to no), H2 2/4 -> 2; s1 yes, 5.
    # friendly: s0 no, 3; s1 H1 yes/no -> no, H2 1/5 -> 1.
    consensus = proxy_consensus(data.answers)
    found = {
        (data.group(g).label.split(" @")[0], s, i): v
        for g, s, i, v in consensus[["group", "scenario", "item", "value"]].itertuples(index=False)
    }
    assert found == {
        ("offline-terse", 0, "H1"): 0,
        ("offline-terse", 0, "H2"): 2,
        ("offline-terse", 1, "H1"): 1,
        ("offline-terse", 1, "H2"): 5,
        ("offline-friendly", 0, "H1"): 0,
        ("offline-friendly", 0, "H2"): 3,
        ("offline-friendly", 1, "H1"): 0,
        ("offline-friendly", 1, "H2"): 1,
    }
    h1 = np.array([[0.0, 1.0], [0.0, 0.0]])
    h2 = np.array([[2.0, 5.0], [3.0, 1.0]])
    specs = {spec.key: spec for spec in survey_statistics(data)}
    assert specs["alpha:proxies-median:H1"].estimate() == pytest.approx(packages_alpha(h1, ["H1"]))
    assert specs["alpha:proxies-median:H2"].estimate() == pytest.approx(packages_alpha(h2, ["H2"]))
    # Two scenarios: the page shows how few units there are, not the alpha.
    assert rows[MEDIANS, "H2"]["alpha"] == TooFew(2)
    assert rows[MEDIANS, "H2"]["ratings"] == 4


def test_the_alpha_table_has_one_row_per_agreement_and_item_set(rated_study):
    rows = list(alpha_rows(survey_report(survey_data(study=rated_study.study))))

    whos = ["Between people"]
    whos += [f"Within {m.display_name}, across its runs" for m in rated_study.models]
    whos += ["Across proxies", MEDIANS]
    # The proxies are listed by name: offline-friendly before offline-terse.
    whos[1:3] = sorted(whos[1:3])
    assert rows == [(who, label) for who in whos for label, _codes in item_sets()]


# --- 2. rho -----------------------------------------------------------------------------------


def rho_rows(report) -> dict[tuple[str, str], dict]:
    return {(row["proxy"], row["items"]): row for row in report.tables["rho"].rows}


def test_rho_equals_spearmanr_of_the_per_scenario_means_per_item_and_group(rated_study):
    records = stored(rated_study.study)
    people = means(records, "people", 8)
    rows = rho_rows(survey_report(survey_data(study=rated_study.study)))

    assert len(rows) == 2 * (len(ITEMS) + len(GROUPS))
    for model in rated_study.models:
        proxy = means(records, model.pk, 8)
        sets = [(code, [code]) for code in ITEMS] + list(GROUPS.items())
        for label, codes in sets:
            units = [(s, code) for s in range(8) for code in codes]
            expected = stats.spearmanr([proxy[u] for u in units], [people[u] for u in units])
            row = rows[f"{model.display_name} (offline demo model)", label]
            assert row["rho"] == pytest.approx(expected.statistic, abs=1e-12)
            assert row["p"] == pytest.approx(expected.pvalue, rel=1e-9)
            assert (row["scenarios"], row["pairs"]) == (8, len(units))


def test_a_group_holds_the_items_of_that_group_whatever_their_codes(rated_study):
    """The published grouping is by what an item measures (SurveyItem.group), not by the
    first letter of its code: here the researcher counts P2 among the helpfulness items."""
    study = rated_study.study
    SurveyItem.objects.filter(study=study, code="P2").update(group="helpfulness")
    records = stored(study)
    people = means(records, "people", 8)
    report = survey_report(survey_data(study=study))
    rows = rho_rows(report)

    groups = {
        "helpfulness (H2, H3, P2)": ["H2", "H3", "P2"],
        "privacy (P1, P3, P4)": ["P1", "P3", "P4"],
    }
    for model in rated_study.models:
        proxy = means(records, model.pk, 8)
        for label, codes in groups.items():
            units = [(s, code) for s in range(8) for code in codes]
            expected = stats.spearmanr([proxy[u] for u in units], [people[u] for u in units])
            row = rows[f"{model.display_name} (offline demo model)", label]
            assert row["rho"] == pytest.approx(expected.statistic, abs=1e-12)
            assert row["pairs"] == len(units)
    # The page says which items each group holds, by code.
    notes = report.tables["rho"].notes
    assert any("helpfulness: H2, H3, P2; privacy: P1, P3, P4" in note for note in notes)
    assert report.methods["rho"].settings["groups"] == {
        "helpfulness": ["H2", "H3", "P2"],
        "privacy": ["P1", "P3", "P4"],
    }


def test_an_item_in_no_group_is_in_no_groups_rho(rated_study):
    study = rated_study.study
    SurveyItem.objects.filter(study=study, code__in=["H2", "H3"]).update(group="")

    rows = rho_rows(survey_report(survey_data(study=study)))

    assert {items for _proxy, items in rows} == {*ITEMS, "privacy (P1, P2, P3, P4)"}


def test_rho_leaves_out_a_scenario_no_person_rated(make_study):
    study = make_study(live=False, count=4)
    from tests.analysis.builders import proxy
    from tests.factories import ModelConfigFactory

    model = ModelConfigFactory(name="offline-terse")
    people = [person(study, n) for n in (1, 2)]
    # scenario 3 is rated by the proxy only
    rate(people[0], {0: {"H2": "1"}, 1: {"H2": "2"}, 2: {"H2": "5"}})
    rate(people[1], {0: {"H2": "2"}, 1: {"H2": "4"}, 2: {"H2": "4"}})
    rate(proxy(study, model, 0), {s: {"H2": v} for s, v in enumerate("1353")})

    data = survey_data(study=study)
    row = rho_rows(survey_report(data))[f"{model.display_name} (offline demo model)", "H2"]

    # people's means 1.5, 3, 4.5 against the proxy's 1, 3, 5 (scenario 3's 3 has no pair)
    expected = stats.spearmanr([1, 3, 5], [1.5, 3, 4.5])
    spec = next(s for s in survey_statistics(data) if s.key == f"rho:model:{model.pk}:H2")
    assert spec.estimate()[0] == pytest.approx(expected.statistic)
    assert (row["scenarios"], row["pairs"]) == (3, 3)
    # Three pairs are too few to show a rho (a perfect 1 here, with p 0): the page says so.
    assert (row["rho"], row["p"]) == (TooFew(3), None)
    assert row["note"] == f"Too few points: 3 pairs of means (at least {MIN_POINTS} needed)."


# --- 3. ranges, the SD curve, distributions and demographics, by hand -------------------------


def by_who(table) -> dict[str, dict]:
    return {row["who"]: row for row in table.rows}


def by_item_and_who(table) -> dict[tuple[str, str], dict]:
    return {(row["item"], row["who"]): row for row in table.rows}


def spans(row) -> list[float]:
    """A range row's five percentages, nan where the item's scale has no such range."""
    return [row[f"r{s}"] for s in range(5)]


def test_ranges_are_shown_for_each_item_apart(hand_study):
    report = survey_report(survey_data(study=hand_study.study))
    rows = by_item_and_who(report.figures["ranges"].table)
    proxy = f"{hand_study.models[0].display_name} (offline demo model)"
    nan = math.nan

    # A row per item and side, items in their order, people first.
    assert list(rows) == [(code, who) for code in ITEMS for who in ("People", proxy)]
    # People, each item apart:
    #   H1: s0 yes, yes, no -> 1; s1 no, no, no -> 0 (a yes/no item has ranges 0 and 1 only)
    #   H2: s0 1, 1, 1 -> 0;      s1 4, 5, 4 -> 1
    #   P1: s0 2, 3, 5 -> 3;      s1 5, 5, 5 -> 0
    assert spans(rows["H1", "People"]) == pytest.approx([50, 50, nan, nan, nan], nan_ok=True)
    assert spans(rows["H2", "People"]) == [50.0, 50.0, 0.0, 0.0, 0.0]
    assert spans(rows["P1", "People"]) == [50.0, 0.0, 0.0, 50.0, 0.0]
    assert [rows[code, "People"]["units"] for code in ("H1", "H2", "P1")] == [2, 2, 2]
    # The proxy's runs, H2 only: s0 2, 4 -> 2; s1 3, 3 -> 0.
    assert spans(rows["H2", proxy]) == [50.0, 0.0, 50.0, 0.0, 0.0]
    # An item nobody answered has no units and no shares (not shares of 0).
    for key in [("H3", "People"), ("P4", "People"), ("H1", proxy), ("P1", proxy)]:
        assert rows[key]["units"] == 0
        assert all(math.isnan(v) for v in spans(rows[key])), key


def test_the_sd_curves_are_for_each_likert_item_apart_on_minus_one_one(hand_study):
    report = survey_report(survey_data(study=hand_study.study))
    table = report.figures["sd-cdf"].table
    proxy = f"{hand_study.models[0].display_name} (offline demo model)"

    curves = defaultdict(list)
    for row in table.rows:
        curves[row["item"], row["who"]] += [row["sd"], row["share"]]  # (sd, share) pairs
    # Mapped: 1..5 -> -1, -0.5, 0, 0.5, 1; population SDs (ddof 0). People:
    #   H2 s0 -1, -1, -1     SD 0
    #   H2 s1  0.5, 1, 0.5   mean 2/3, deviations -1/6, 1/3, -1/6: SD sqrt(1/18)
    #   P1 s0 -0.5, 0, 1     mean 1/6, deviations -2/3, -1/6, 5/6: SD sqrt(7/18)
    #   P1 s1  1, 1, 1       SD 0
    assert curves["H2", "People"] == pytest.approx([0.0, 0.5, math.sqrt(1 / 18), 1.0])
    assert curves["P1", "People"] == pytest.approx([0.0, 0.5, math.sqrt(7 / 18), 1.0])
    # The proxy's H2: s0 -0.5, 0.5 -> SD 0.5; s1 0, 0 -> SD 0.
    assert curves["H2", proxy] == pytest.approx([0.0, 0.5, 0.5, 1.0])
    # Likert items only: the yes/no H1 is on no curve.
    assert set(curves) == {("H2", "People"), ("P1", "People"), ("H2", proxy)}
    assert "H1" not in {row["item"] for row in table.rows}
    # Which SD is a setting kept on the report: the paper does not say, so it is ours.
    method = report.methods["sd-cdf"]
    assert method.settings["ddof"] == 0 and method.settings["items"] == SCALES
    ddof = report.methods["sd-ddof"]
    assert ddof.settings == {"ddof": 0} and ddof.fidelity == Fidelity.OURS
    assert ddof in table.methods
    assert any("ddof=0" in note for note in table.notes)


def test_equal_sds_make_one_step_of_the_curve_whatever_order_the_answers_came_in(make_study):
    """numpy's SD of -1, -1, -1, -1, -0.5 is 0.2 or 0.20000000000000004 by where the -0.5
    stands; on the curve they are one standard deviation."""
    study = make_study(live=False, count=5)
    people = [person(study, n) for n in range(1, 6)]
    for k, participant in enumerate(people):  # scenario s: person s alone answers 2
        rate(participant, {s: {"H2": "2" if s == k else "1"} for s in range(5)})

    table = survey_report(survey_data(study=study)).figures["sd-cdf"].table

    rows = [(r["sd"], r["share"]) for r in table.rows if r["item"] == "H2"]
    assert rows == [(pytest.approx(0.2, abs=1e-15), 1.0)]


def test_the_pooled_views_are_labelled_extras_over_the_scale_items(hand_study):
    report = survey_report(survey_data(study=hand_study.study))
    proxy = f"{hand_study.models[0].display_name} (offline demo model)"

    ranges = report.figures["ranges-pooled"].table
    assert "Assay's addition" in ranges.title
    rows = by_who(ranges)
    # People's scale units: s0 H2 -> 0, s0 P1 -> 3, s1 H2 -> 1, s1 P1 -> 0.
    assert (spans(rows["People"]), rows["People"]["units"]) == ([50.0, 25.0, 0.0, 25.0, 0.0], 4)
    assert spans(rows[proxy]) == [50.0, 0.0, 50.0, 0.0, 0.0]

    sds = report.figures["sd-cdf-pooled"].table
    assert "Assay's addition" in sds.title
    curves = defaultdict(list)
    for row in sds.rows:
        curves[row["who"]] += [row["sd"], row["share"]]
    # The four scale units above (H1 is not on a scale and stays out).
    assert curves["People"] == pytest.approx(
        [0.0, 2 / 4, math.sqrt(1 / 18), 3 / 4, math.sqrt(7 / 18), 1.0]
    )
    assert report.methods["ranges-pooled"].fidelity == Fidelity.OURS


def test_answer_distributions_are_percentages_of_each_sides_answers(hand_study):
    report = survey_report(survey_data(study=hand_study.study))
    proxy = f"{hand_study.models[0].display_name} (offline demo model)"

    h2 = by_who(report.figures["distribution-H2"].table)
    # People's H2: 1, 1, 1, 4, 5, 4.
    people = h2["People (n=6)"]
    assert [people[f"p{p}"] for p in range(5)] == pytest.approx([50, 0, 0, 100 / 3, 100 / 6])
    assert people["answers"] == 6
    # The proxy's H2: 2, 3, 4, 3.
    assert [h2[f"{proxy} (n=4)"][f"p{p}"] for p in range(5)] == [0, 25, 50, 25, 0]

    h1 = by_who(report.figures["distribution-H1"].table)
    # People's H1: yes, yes, no, no, no, no; the columns are No then Yes.
    assert [h1["People (n=6)"]["p0"], h1["People (n=6)"]["p1"]] == pytest.approx([400 / 6, 200 / 6])
    assert [c.label for c in report.figures["distribution-H1"].table.columns[1:3]] == ["No", "Yes"]
    # The proxy never answered H1: no share, not a share of 0.
    assert math.isnan(h1[f"{proxy} (n=0)"]["p0"])

    p1 = by_who(report.figures["distribution-P1"].table)["People (n=6)"]
    # 2, 3, 5, 5, 5, 5
    assert [p1[f"p{p}"] for p in range(5)] == pytest.approx([0, 100 / 6, 100 / 6, 0, 400 / 6])


def test_demographics_count_the_people_kept(hand_study):
    table = survey_report(survey_data(study=hand_study.study)).tables["demographics"]
    rows = {row["what"]: (row["people"], row["percent"]) for row in table.rows}

    # Person 1: 18-24, man, bachelor's; persons 2 and 3: 25-34, woman, no education given.
    # Nobody gave an income. The two people left out (65+, non-binary) are not counted.
    expected = {
        "Age: 18-24": 1,
        "Age: 25-34": 2,
        "Gender: Man": 1,
        "Gender: Woman": 2,
        "Education: Bachelor's degree": 1,
        "Education: Not answered": 2,
        "Household income: Not answered": 3,
    }
    for what, count in expected.items():
        assert rows[what] == pytest.approx((count, 100 * count / 3))
    assert {what for what, (count, _p) in rows.items() if count} == set(expected)
    # Every offered answer is listed, with 0 where nobody gave it.
    assert rows["Age: 65 or older"] == (0, 0.0)
    assert rows["Gender: Non-binary"] == (0, 0.0)
    assert table.n == "3 people after exclusions"


# --- 4. exclusions ------------------------------------------------------------------------------


def test_people_left_out_are_counted_and_absent_from_every_table(hand_study):
    data = survey_data(study=hand_study.study)
    report = survey_report(data)

    assert report.excluded == {"rejected in review": 1, "failed an attention check": 1}
    assert report.people == 3
    left_out = {p.pk for p in hand_study.left_out.values()}
    assert not left_out & set(data.answers["rater"])
    # Three people rated 2 scenarios x 3 items: had either been counted, the people's H2
    # (the extremes 5 and 1) would not be 1, 1, 1, 4, 5, 4.
    alpha = alpha_rows(report)
    assert alpha["Between people", "H2"]["raters"] == 3
    assert alpha["Between people", "H2"]["ratings"] == 6
    assert by_who(report.figures["distribution-H2"].table)["People (n=6)"]["answers"] == 6


def test_a_person_who_failed_an_attention_check_and_was_rejected_counts_once(hand_study):
    rejected = hand_study.left_out["rejected in review"]
    rejected.attention_failed = True
    rejected.save(update_fields=["attention_failed"])

    report = survey_report(survey_data(study=hand_study.study))

    assert report.excluded == {"rejected in review": 1, "failed an attention check": 1}


def test_attention_checks_appear_in_no_table(hand_study):
    report = survey_report(survey_data(study=hand_study.study))

    tables = [*report.tables.values(), *(f.table for f in report.figures.values())]
    for table in tables:
        assert "AC1" not in table.name
        for row in table.raw_rows():
            assert not any("AC1" in str(cell) for cell in row), table.name
    assert report.distributions == ["distribution-H1", *[f"distribution-{c}" for c in SCALES]]
    # 3 people x 2 scenarios x 3 items, and the proxy's 2 runs x 2 scenarios x H2.
    assert report.answers == 18 + 4


def test_proxies_answers_never_count_among_peoples(hand_study):
    data = survey_data(study=hand_study.study)
    report = survey_report(data)

    people = data.answers[data.answers["group"] == "people"]
    assert set(people["rater"]) == {p.pk for p in hand_study.people}
    rho = rho_rows(report)[f"{hand_study.models[0].display_name} (offline demo model)", "H2"]
    # People's H2 means: s0 1, s1 13/3; the proxy's: s0 3, s1 3: two pairs, too few.
    assert rho["rho"] == TooFew(2) and rho["pairs"] == 2
    assert report.data_n == "2 scenarios, 3 people, 18 answers; 1 proxy model in 2 runs, 4 answers"


# --- 5. the bootstrap intervals, kept per fingerprint -------------------------------------------


def computed(study) -> SurveyBootstrap:
    bootstrap, queue = services.survey_bootstrap_request(study=study)
    assert queue
    return services.survey_bootstrap_compute(bootstrap_id=bootstrap.pk)


def test_the_bootstrap_fills_every_alpha_and_rho_interval(rated_study):
    study = rated_study.study
    bootstrap = computed(study)

    assert bootstrap.status == BootstrapStatus.DONE
    report = survey_report(survey_data(study=study), intervals=bootstrap.intervals)
    for name in ("alpha", "rho"):
        for row in report.tables[name].rows:
            shown = row["alpha"] if name == "alpha" else row["rho"]
            assert row["low"] is not None and row["high"] is not None, row
            assert row["low"] <= shown <= row["high"], row
    assert report.intervals_missing == 0
    assert bootstrap.done == bootstrap.total == len(bootstrap.intervals)


def test_asking_again_for_the_same_data_returns_the_kept_row(rated_study):
    study = rated_study.study
    first = computed(study)

    again, queue = services.survey_bootstrap_request(study=study)

    assert (again.pk, queue) == (first.pk, False)
    assert again.status == BootstrapStatus.DONE
    assert SurveyBootstrap.objects.filter(study=study).count() == 1


def test_the_intervals_equal_the_agreement_bootstrap_on_the_same_draws(rated_study):
    study = rated_study.study
    intervals = computed(study).intervals
    records = stored(study)
    draws = resample_draws(8, resamples=RESAMPLES, seed=SEED)

    matrix = reliability(records, who="people", codes=SCALES, scenarios=8)
    expected = agreement.alpha_bootstrap(
        matrix,
        level="ordinal",
        clusters=np.repeat(np.arange(8), len(SCALES)),
        draws=draws,
        value_domain=[1, 2, 3, 4, 5],
    )
    low, high, used, undefined = intervals["alpha:people:pooled"]
    assert (low, high) == pytest.approx((expected.low, expected.high), abs=1e-12)
    assert (used, undefined) == (expected.resamples_used, expected.resamples_undefined)

    model = rated_study.models[0]
    people, proxy = means(records, "people", 8), means(records, model.pk, 8)
    expected = spearman_bootstrap(
        [proxy[s, "P1"] for s in range(8)], [people[s, "P1"] for s in range(8)], draws=draws
    )
    low, high, used, undefined = intervals[f"rho:model:{model.pk}:P1"]
    assert (low, high) == pytest.approx((expected.low, expected.high), abs=1e-12)
    assert (used, undefined) == (expected.resamples_used, expected.resamples_undefined)


def test_a_new_answer_changes_the_fingerprint_and_sets_the_intervals_aside(rated_study):
    study = rated_study.study
    kept = computed(study)

    rate(person(study, 99), {0: {"H2": "3"}})

    assert survey_fingerprint(study=study) != kept.fingerprint
    again, queue = services.survey_bootstrap_request(study=study)
    assert queue and again.pk != kept.pk and again.status == BootstrapStatus.QUEUED


def test_rejecting_a_person_changes_the_fingerprint(rated_study):
    study = rated_study.study
    before = survey_fingerprint(study=study)

    participant = rated_study.people[0]
    participant.review_status = ReviewStatus.REJECTED
    participant.save(update_fields=["review_status"])

    assert survey_fingerprint(study=study) != before


def test_a_bootstrap_whose_data_changed_before_it_ran_fails_and_says_so(rated_study):
    study = rated_study.study
    bootstrap, _queue = services.survey_bootstrap_request(study=study)
    rate(person(study, 99), {0: {"H2": "3"}})

    assert services.survey_bootstrap_compute(bootstrap_id=bootstrap.pk) is None

    bootstrap.refresh_from_db()
    assert bootstrap.status == BootstrapStatus.FAILED
    assert bootstrap.error == (
        "The study's data changed before the intervals were computed: ask again."
    )
    assert bootstrap.intervals == {}


# --- too few points, and why an alpha is missing -------------------------------------------


def test_the_report_counts_one_person_and_one_scenario_in_the_singular(make_study):
    study = make_study(live=False, count=3)
    rate(person(study, 1), {0: {"H2": "2"}})
    report = survey_report(survey_data(study=study))
    assert report.data_n == "3 scenarios, 1 person, 1 answer"
    assert report.tables["alpha"].n == "3 scenarios, 1 rater, 1 answer"


def test_an_alpha_not_shown_says_why_from_the_ratings(make_study):
    study = make_study(live=False, count=6)
    first, second = person(study, 1), person(study, 2)
    # H2: the two people agree on every one of six scenarios, all "3": no variation. H3: they
    # both rate two scenarios only: two units, too few. H1: one person alone.
    rate(first, {s: {"H2": "3", **({"H3": str(s + 1)} if s < 2 else {})} for s in range(6)})
    rate(second, {s: {"H2": "3", **({"H3": "4"} if s < 2 else {})} for s in range(6)})
    rate(person(study, 3), {0: {"H1": "yes"}})
    rows = alpha_rows(survey_report(survey_data(study=study)))

    h2 = rows["Between people", "H2"]
    assert h2["alpha"] is None and h2["units"] == 6 >= MIN_POINTS
    assert h2["note"].startswith("No alpha: no variation, every rating")
    h3 = rows["Between people", "H3"]
    assert (h3["alpha"], h3["units"]) == (TooFew(2), 2)
    assert (
        h3["note"] == f"Too few points: 2 units rated twice or more (at least {MIN_POINTS} needed)."
    )
    h1 = rows["Between people", "H1"]
    assert h1["alpha"] is None and h1["note"] == "No alpha: fewer than two raters (1)."
