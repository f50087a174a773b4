from apps.surveys.duration import estimate
from apps.surveys.quality import (
    Times,
    attention_failures_needed,
    explanation_problems,
    looks_like_words,
    participant_flags,
)

GOOD = [
    "It leaves out Michael's father's illness, which Emily has no reason to know.",
    "The reply answers the question and keeps the health details private.",
    "I would send this, though I would add a line about the deadline.",
]
# Twelve other participants, 40 to 51 minutes: mean 45.5 min, SD 3.6 min.
TWELVE = Times.of([(40 + i) * 60.0 for i in range(12)])


def flags(seconds=2700, others=TWELVE, minutes=47, failures=0, checks=2, explanations=GOOD):
    return participant_flags(
        seconds=seconds,
        others=others,
        estimated_minutes=minutes,
        attention_failures=failures,
        attention_checks=checks,
        explanations=explanations,
    )


def test_thoughtful_explanations_raise_no_flag():
    assert flags() == []


def test_too_fast_is_more_than_3_sd_under_the_mean_of_the_others():
    # 45.5 - 3 * 3.606 = 34.7 min: a third of the mean (15.2 min) would miss 30 minutes.
    fast = flags(seconds=30 * 60)
    assert [(f.code, f.label, f.grounds) for f in fast] == [("too_fast", "Too fast", True)]
    assert "more than 3 SD under the mean of the other 12 participants" in fast[0].message
    assert flags(seconds=36 * 60) == []


def test_with_few_others_too_fast_is_under_a_third_of_the_estimated_time():
    few = Times.of([600.0, 3000.0])
    fast = flags(seconds=15 * 60, others=few, minutes=47)
    assert [f.code for f in fast] == ["too_fast"]
    assert "a third of the estimated 47 min" in fast[0].message
    assert flags(seconds=16 * 60, others=few, minutes=47) == []


def test_one_failed_check_is_shown_but_not_grounds_in_a_study_of_5_minutes_or_more():
    (once,) = flags(failures=1, minutes=5)
    assert (once.code, once.label, once.grounds) == (
        "attention_once",
        "Missed an attention check",
        False,
    )
    (twice,) = flags(failures=2, minutes=47)
    assert (twice.label, twice.grounds, twice.message) == (
        "Failed attention checks",
        True,
        "failed 2 of 2 attention checks",
    )
    (short,) = flags(failures=1, minutes=4)
    assert short.grounds, "a study under 5 minutes may reject on one failed check"
    assert [attention_failures_needed(minutes=m) for m in (4, 5, 47)] == [1, 2, 2]


def test_the_estimate_scales_the_published_47_minutes_by_scenarios_and_explanations():
    assert estimate(scenarios=5, explanations=6).minutes == 47
    assert estimate(scenarios=10, explanations=6).minutes == 94
    assert estimate(scenarios=5, explanations=3).minutes == 24
    assert estimate(scenarios=1, explanations=0).minutes == 2  # read and answered all the same


def test_short_repeated_and_nonsense_explanations_are_low_effort():
    assert explanation_problems(["ok", "fine", *GOOD]) == ["2 of 5 explanations are very short"]
    repeated = ["It is good and helpful enough."] * 3 + GOOD
    assert "the same explanation is given 3 times" in explanation_problems(repeated)[0]
    assert explanation_problems(["asdfgh jkl qwrtp zxcvbn", *GOOD]) == [
        "1 explanations do not look like words"
    ]


def test_words_in_other_languages_and_with_accents_are_words():
    assert looks_like_words("Très utile, mais il révèle des détails médicaux.")
    assert not looks_like_words("xxxxxxx xxxxx")
    assert not looks_like_words("12345 !!!")
