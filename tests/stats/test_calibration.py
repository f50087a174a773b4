"""The calibration measures equal scikit-learn called directly, and a case computed by
hand; undefined values are None, never NaN."""

import random

import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from stats.calibration import label_agreement


def test_agreement_of_a_two_by_two_table_computed_by_hand():
    # Expert (truth) against rater: 4 both met, 1 rater met / expert not, 2 rater not /
    # expert met, 3 both not met; n = 10.
    # accuracy = (4 + 3) / 10 = 0.7. Chance agreement: rater says met 5/10, expert 6/10,
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, so kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    # F1(met) = 2*4 / (2*4 + 1 + 2) = 8/11; F1(not met) = 2*3 / (2*3 + 2 + 1) = 2/3;
    # macro F1 = (8/11 + 2/3) / 2 = 23/33.
    rater = [True] * 4 + [True] + [False] * 2 + [False] * 3
    expert = [True] * 4 + [False] + [True] * 2 + [False] * 3
    found = label_agreement(rater, expert)
    assert found.n == 10
    assert found.accuracy == pytest.approx(0.7)
    assert found.kappa == pytest.approx(0.4)
    assert found.f1_macro == pytest.approx(23 / 33)


def test_agreement_equals_scikit_learn_on_the_same_data():
    rng = random.Random(11)
    expert = [rng.random() < 0.6 for _ in range(200)]
    rater = [e if rng.random() < 0.8 else not e for e in expert]
    found = label_agreement(rater, expert)
    assert found.kappa == pytest.approx(cohen_kappa_score(expert, rater))
    assert found.f1_macro == pytest.approx(f1_score(expert, rater, average="macro"))
    assert found.accuracy == pytest.approx(
        sum(a == b for a, b in zip(rater, expert, strict=True)) / 200
    )


def test_agreement_with_one_class_only_has_no_kappa_or_f1_and_under_three_is_none():
    found = label_agreement([True, True, True], [True, True, True])
    assert (found.accuracy, found.kappa, found.f1_macro) == (1.0, None, None)
    assert label_agreement([True, False], [True, False]) is None
