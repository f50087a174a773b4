from apps.surveys.quality import explanation_problems, looks_like_words, participant_flags

GOOD = [
    "It leaves out Michael's father's illness, which Emily has no reason to know.",
    "The reply answers the question and keeps the health details private.",
    "I would send this, though I would add a line about the deadline.",
]


def test_thoughtful_explanations_raise_no_flag():
    assert (
        participant_flags(seconds=900, median=1000, attention_failed=False, explanations=GOOD) == []
    )


def test_very_fast_completion_is_flagged_under_a_third_of_the_median():
    flags = participant_flags(seconds=300, median=1000, attention_failed=False, explanations=GOOD)
    assert [f.code for f in flags] == ["too_fast"]
    assert (
        participant_flags(seconds=340, median=1000, attention_failed=False, explanations=GOOD) == []
    )


def test_failed_attention_check_is_flagged():
    flags = participant_flags(seconds=None, median=None, attention_failed=True, explanations=GOOD)
    assert [f.code for f in flags] == ["attention"]


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
