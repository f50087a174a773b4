"""The two rewrite measures, against values worked out by hand."""

import math
from collections import Counter

import numpy as np
import pytest

from apps.questions.similarity import tfidf_cosines, trigram_jaccard, vector_cosine, word_trigrams


def test_trigram_jaccard_matches_a_hand_computed_pair():
    # "my account was hacked today" -> my account was / account was hacked / was hacked today
    # "My account was hacked, help!" -> my account was / account was hacked / was hacked help
    # Shared 2, distinct 4: 2 / 4.
    assert trigram_jaccard("my account was hacked today", "My account was hacked, help!") == 0.5


def test_trigrams_are_lower_cased_words_without_punctuation_and_counted_once():
    assert word_trigrams("I can't log in. I can't log in!") == {
        ("i", "can't", "log"),
        ("can't", "log", "in"),
        ("log", "in", "i"),
        ("in", "i", "can't"),
    }
    assert trigram_jaccard("two words", "two words") == 0.0  # no 3-gram on either side
    assert trigram_jaccard("a b c", "d e f") == 0.0


def _cosine_by_hand(corpus, first, second):
    # scikit-learn's defaults: tokens of 2+ word characters, lower-cased; idf smoothed,
    # idf(t) = ln((1 + n) / (1 + df(t))) + 1; raw counts times idf; l2-normalised.
    def tokens(text):
        import re

        return re.findall(r"(?u)\b\w\w+\b", text.lower())

    docs = [set(tokens(d)) for d in corpus]
    n = len(corpus)
    idf = {t: math.log((1 + n) / (1 + sum(t in d for d in docs))) + 1 for d in docs for t in d}

    def vector(text):
        counts = Counter(t for t in tokens(text) if t in idf)
        v = {t: c * idf[t] for t, c in counts.items()}
        norm = math.sqrt(sum(x * x for x in v.values()))
        return {t: x / norm for t, x in v.items()}

    a, b = vector(first), vector(second)
    return sum(a[t] * b.get(t, 0.0) for t in a)


def test_tfidf_cosine_on_a_tiny_bank_equals_the_value_computed_independently():
    bank = [
        (
            "My email was hacked and the password changed.",
            "Someone hacked my email and changed the password.",
        ),
        ("A scam text asked for a customs fee.", "I got a text asking me to pay a customs fee."),
    ]
    corpus = [t for pair in bank for t in pair]
    cosines = tfidf_cosines(bank, corpus=corpus)
    expected = [_cosine_by_hand(corpus, a, b) for a, b in bank]
    assert cosines == pytest.approx(expected, abs=1e-9)
    assert 0 < cosines[0] < 1 and 0 < cosines[1] < 1


def test_identical_texts_have_cosine_one_and_disjoint_ones_zero():
    corpus = ["alpha beta gamma", "delta epsilon"]
    same, disjoint = tfidf_cosines(
        [("alpha beta gamma", "alpha beta gamma"), ("alpha beta", "delta epsilon")], corpus=corpus
    )
    assert same == pytest.approx(1.0)
    assert disjoint == 0.0


def test_the_cosine_of_two_vectors_is_numpys_and_undefined_ones_are_refused():
    a, b = [0.3, -1.2, 2.0, 0.0], [1.0, 0.5, 0.25, -4.0]
    expected = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert vector_cosine(a, b) == pytest.approx(expected, abs=1e-15)
    assert vector_cosine(a, [2 * x for x in a]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="all zeros"):
        vector_cosine(a, [0.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="4 and 3 dimensions"):
        vector_cosine(a, b[:3])
