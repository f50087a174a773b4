import io
import re

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command

from stats import agreement
from stats.bootstrap import resample_draws
from tests.stats.test_agreement import KRIPPENDORFF_2011

OBSERVERS = "ABCD"
COLUMNS = ["--unit", "unit", "--rater", "observer", "--value", "score"]


def long_csv(matrix, *, labels=None) -> str:
    """One row per rating of a raters x units matrix; `labels` maps a value to its text."""
    lines = ["unit,observer,score,group"]
    for row, observer in enumerate(OBSERVERS[: matrix.shape[0]]):
        for unit in range(matrix.shape[1]):
            value = matrix[row, unit]
            if not np.isnan(value):
                text = labels[value] if labels else f"{value:g}"
                lines.append(f"u{unit + 1},{observer},{text},g{unit // 3}")
    return "\n".join(lines) + "\n"


def run(path, *args) -> str:
    out = io.StringIO()
    call_command("agreement", str(path), *args, stdout=out)
    return out.getvalue()


def printed_alpha(output: str) -> float:
    return float(re.search(r"alpha = (-?\d+\.\d+)", output).group(1))


@pytest.fixture
def worked_example(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(long_csv(KRIPPENDORFF_2011))
    return path


@pytest.mark.parametrize("level", agreement.LEVELS)
def test_prints_the_packages_alpha_and_what_it_rests_on(worked_example, level):
    output = run(worked_example, *COLUMNS, "--level", level)

    expected = krippendorff.alpha(reliability_data=KRIPPENDORFF_2011, level_of_measurement=level)
    assert printed_alpha(output) == pytest.approx(expected, abs=5e-5)
    assert f"ratings.csv, {level} level" in output
    # 12 units, unit 12 has one rating (observer B's 3); 41 ratings by observers A-D
    assert "12 units, 11 pairable (rated twice or more); 4 raters; 41 ratings" in output
    assert "interval" not in output.split("\n", 1)[1]


def test_nominal_values_may_be_text_labels(tmp_path):
    names = {1.0: "never", 2.0: "rarely", 3.0: "sometimes", 4.0: "often", 5.0: "always"}
    path = tmp_path / "labels.csv"
    path.write_text(long_csv(KRIPPENDORFF_2011, labels=names))

    output = run(path, *COLUMNS, "--level", "nominal")

    assert printed_alpha(output) == pytest.approx(0.7434, abs=5e-5)


def bootstrap_line(output: str) -> tuple[float, float]:
    found = re.search(r"95% interval (-?\d+\.\d+) to (-?\d+\.\d+)", output)
    return float(found.group(1)), float(found.group(2))


def test_the_bootstrap_resamples_units_with_the_seed_given(worked_example):
    output = run(worked_example, *COLUMNS, "--level", "interval", "--bootstrap", "300")

    # Units are numbered as they first appear in the file: A rates u1-u9, then B u10 and u12.
    in_file_order = KRIPPENDORFF_2011[:, [*range(10), 11, 10]]
    draws = resample_draws(12, resamples=300, seed=0)
    expected = agreement.alpha_bootstrap(
        in_file_order, level="interval", clusters=np.arange(12), draws=draws
    )
    assert bootstrap_line(output) == pytest.approx((expected.low, expected.high), abs=5e-5)
    assert "300 resamples of units, seed 0" in output
    reseeded = run(
        worked_example, *COLUMNS, "--level", "interval", "--bootstrap", "300", "--seed", "9"
    )
    assert "seed 9" in reseeded and bootstrap_line(reseeded) != bootstrap_line(output)


def test_the_bootstrap_resamples_the_clusters_of_a_column(worked_example):
    output = run(
        worked_example, *COLUMNS, "--level", "ordinal", "--bootstrap", "200", "--cluster", "group"
    )

    # units u1-u3 are g0, u4-u6 g1, ...: four clusters, in the order they first appear
    draws = resample_draws(4, resamples=200, seed=0)
    expected = agreement.alpha_bootstrap(
        KRIPPENDORFF_2011, level="ordinal", clusters=np.arange(12) // 3, draws=draws
    )
    assert bootstrap_line(output) == pytest.approx((expected.low, expected.high), abs=5e-5)
    assert "200 resamples of clusters of column 'group'" in output


def test_resamples_where_alpha_is_undefined_are_counted(tmp_path):
    path = tmp_path / "two.csv"
    path.write_text("unit,observer,score\nu1,A,1\nu1,B,1\nu2,A,2\nu2,B,3\n")

    output = run(path, *COLUMNS, "--level", "interval", "--bootstrap", "100")

    draws = resample_draws(2, resamples=100, seed=0)
    only_first = int((draws == 0).all(axis=1).sum())
    assert only_first > 0
    assert f"{only_first} resample(s) left out: alpha is undefined" in output


def refusal(path, *args) -> str:
    with pytest.raises(CommandError) as raised:
        run(path, *args)
    return str(raised.value)


def test_a_missing_file_is_named(tmp_path):
    message = refusal(tmp_path / "absent.csv", *COLUMNS, "--level", "nominal")

    assert message == f"Cannot read {tmp_path / 'absent.csv'}: No such file or directory"


def test_a_file_that_is_not_utf8_text_is_refused(tmp_path):
    path = tmp_path / "binary.csv"
    path.write_bytes(b"unit,observer,score\n\xff\xfe\x00,A,1\n")

    assert "it is not UTF-8 text" in refusal(path, *COLUMNS, "--level", "nominal")


def test_a_missing_column_is_named_with_the_files_columns(worked_example):
    message = refusal(worked_example, *COLUMNS[:-1], "rating", "--level", "nominal")

    assert message == (
        f"{worked_example} has no column 'rating'; its columns are: "
        "'unit', 'observer', 'score', 'group'"
    )


def test_an_empty_value_is_refused_with_its_line(tmp_path):
    path = tmp_path / "gap.csv"
    path.write_text("unit,observer,score\nu1,A,1\nu1,B,\nu2,A,2\n")

    message = refusal(path, *COLUMNS, "--level", "nominal")

    assert message == f"{path}, line 3: the column 'score' is empty."


@pytest.mark.parametrize(
    ("level", "why"),
    [
        ("interval", "the interval level needs numbers"),
        ("ratio", "the ratio level needs numbers"),
        ("ordinal", "ordinal values must be numbers so that they can be ordered"),
    ],
)
def test_a_value_that_is_not_a_number_is_refused_where_numbers_are_needed(tmp_path, level, why):
    path = tmp_path / "text.csv"
    path.write_text("unit,observer,score\nu1,A,1\nu1,B,2\nu2,A,high\nu2,B,3\n")

    message = refusal(path, *COLUMNS, "--level", level)

    assert message == f"{path}, line 4: the value 'high' is not a number, and {why}."


def test_nothing_pairable_is_said_so(tmp_path):
    path = tmp_path / "singles.csv"
    path.write_text("unit,observer,score\nu1,A,1\nu2,B,2\nu3,A,2\n")

    message = refusal(path, *COLUMNS, "--level", "nominal")

    assert message == (
        f"{path}: every one of its 3 units has a single rating, so no two ratings of a unit can "
        "be compared: alpha needs units rated twice or more."
    )


def test_a_rater_rating_a_unit_twice_is_refused_with_the_lines(tmp_path):
    path = tmp_path / "twice.csv"
    path.write_text("unit,observer,score\nu1,A,1\nu1,B,2\nu2,A,2\nu1,A,3\n")

    message = refusal(path, *COLUMNS, "--level", "ordinal")

    assert message == (
        f"{path}: rater 'A' rated unit 'u1' more than once (lines 2, 5); alpha takes one "
        "rating per rater and unit."
    )


def test_a_unit_in_two_clusters_is_refused(tmp_path):
    path = tmp_path / "clusters.csv"
    path.write_text("unit,observer,score,group\nu1,A,1,g1\nu1,B,2,g2\nu2,A,2,g1\n")

    message = refusal(
        path, *COLUMNS, "--level", "ordinal", "--bootstrap", "10", "--cluster", "group"
    )

    assert message == (
        f"{path}: unit 'u1' is in more than one cluster of column 'group' ('g1' on line 2, "
        "'g2' on line 3)."
    )


def test_data_where_every_pairable_rating_agrees_have_no_alpha(tmp_path):
    path = tmp_path / "agree.csv"
    path.write_text("unit,observer,score\nu1,A,4\nu1,B,4\nu2,A,4\nu2,B,4\nu3,A,1\n")

    message = refusal(path, *COLUMNS, "--level", "interval")

    assert "alpha is undefined: every rating of the units rated twice or more" in message


def test_a_bootstrap_without_resamples_is_refused(worked_example):
    message = refusal(worked_example, *COLUMNS, "--level", "nominal", "--bootstrap", "0")

    assert message == "--bootstrap needs at least one resample."
