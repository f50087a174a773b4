"""Studies with stored answers for the survey report's tests (tests/analysis/test_survey_*.py)."""

from dataclasses import dataclass, field

import numpy as np
import pytest

from apps.surveys.models import Participant, ReviewStatus, Study, SurveyItem
from tests.analysis.builders import person, proxy, rate
from tests.factories import ModelConfigFactory

SCALES = ["H2", "H3", "P1", "P2", "P3", "P4"]
ITEMS = ["H1", *SCALES]


@dataclass
class Rated:
    study: Study
    models: list = field(default_factory=list)
    people: list = field(default_factory=list)
    left_out: dict = field(default_factory=dict)  # reason -> participant


@pytest.fixture
def rated_study(make_study):
    """8 scenarios; 10 people rating 4 scenarios each (every scenario rated by 5), and two
    proxy models with 3 runs each rating every scenario, on the 7 default items. Answers
    scatter around a per-(scenario, item) level, so that agreement is neither 0 nor 1."""
    study = make_study(live=False, count=8)
    rng = np.random.default_rng(20240611)
    level = rng.integers(1, 6, size=(8, len(ITEMS)))

    def answers(scenarios, noise):
        out = {}
        for s in scenarios:
            values = {}
            for k, code in enumerate(ITEMS):
                value = int(np.clip(level[s, k] + rng.integers(-noise, noise + 1), 1, 5))
                values[code] = ("yes" if value >= 3 else "no") if code == "H1" else str(value)
            out[s] = values
        return out

    rated = Rated(study=study)
    for number in range(10):
        participant = person(study, number + 1)
        rate(participant, answers([(number * 3 + k) % 8 for k in range(4)], noise=2))
        rated.people.append(participant)
    for name in ("offline-terse", "offline-friendly"):
        model = ModelConfigFactory(name=name)
        for run in range(3):
            rate(proxy(study, model, run), answers(range(8), noise=1))
        rated.models.append(model)
    return rated


@pytest.fixture
def hand_study(make_study):
    """2 scenarios, the values chosen so that every expected number can be worked out by hand.

    People (3 kept), answering H1, H2 and P1:
                  scenario 0         scenario 1
                  H1   H2   P1       H1   H2   P1
      person 1    yes  1    2        no   4    5
      person 2    yes  1    3        no   5    5
      person 3    no   1    5        no   4    5
    One proxy model with 2 runs, answering H2 only: scenario 0: 2 and 4; scenario 1: 3 and 3.
    Two more people are left out, one rejected in review and one who failed an attention
    check; both answer at the extremes, so any table that counted them would change. Everyone
    answers the attention check AC1, which no table may show.
    """
    study = make_study(live=False, count=2)
    SurveyItem.objects.create(
        study=study,
        code="AC1",
        wording="Please choose 'No'.",
        kind="yes_no",
        attention_check=True,
        expected_value="no",
        order=99,
    )
    rated = Rated(study=study)
    kept = [
        (
            {"age": "18-24", "gender": "man", "education": "bachelor"},
            ("yes", "1", "2"),
            ("no", "4", "5"),
        ),
        ({}, ("yes", "1", "3"), ("no", "5", "5")),
        ({}, ("no", "1", "5"), ("no", "4", "5")),
    ]
    for number, (fields, first, second) in enumerate(kept, start=1):
        participant = person(study, number, **fields)
        rate(
            participant,
            {
                0: dict(zip(["H1", "H2", "P1"], first, strict=True), AC1="no"),
                1: dict(zip(["H1", "H2", "P1"], second, strict=True), AC1="no"),
            },
            explanation=f"Person {number} explains",
        )
        rated.people.append(participant)
    model = ModelConfigFactory(name="offline-terse")
    for run, values in enumerate([("2", "3"), ("4", "3")]):
        rate(
            proxy(study, model, run),
            {0: {"H2": values[0]}, 1: {"H2": values[1]}},
            explanation=f"Proxy run {run} explains",
        )
    rated.models.append(model)

    extreme = {
        0: {"H1": "yes", "H2": "5", "P1": "1", "AC1": "no"},
        1: {"H1": "yes", "H2": "1", "P1": "1", "AC1": "no"},
    }
    rejected = person(study, 10, age="65+", gender="non_binary")
    rate(rejected, extreme)
    # In review, not through `participant_reject`: that also marks the assignments rejected,
    # and the report must leave the person out on the review alone.
    Participant.objects.filter(pk=rejected.pk).update(review_status=ReviewStatus.REJECTED)
    failed = person(study, 11, age="65+", gender="non_binary", attention_failed=True)
    rate(failed, extreme | {0: {**extreme[0], "AC1": "yes"}})
    rated.left_out = {"rejected in review": rejected, "failed an attention check": failed}
    return rated
