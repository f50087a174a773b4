"""How far a rewrite moved from its original post: the two measures the published study
reported (means 0.56 and 0.04), computed the way the bank's pages say.

- Cosine similarity of TF-IDF vectors (scikit-learn's `TfidfVectorizer` with its defaults:
  lower-cased words of two or more letters, smoothed idf, l2-normalised rows), fitted on the
  whole bank, every question's original and final text, so that words every question shares
  weigh little. The published study reports its mean cosine without saying what vectors it
  was computed on: TF-IDF is Assay's choice, and every page that shows the figure says so
  (COSINE_CHOICE).
- Cosine of embeddings, the researcher's choice: the cosine of the vectors an embedding
  model the researcher picks makes of the original and of the rewrite (`vector_cosine`;
  the vectors come through apps/llm's gateway and are kept there).
- Word 3-gram overlap: the Jaccard index of the sets A and B of lower-cased word 3-grams of
  the two texts, the 3-grams in both over the 3-grams in either.
"""

import re
from collections.abc import Sequence

# scikit-learn is imported where the vectors are fitted: this module is loaded by every web
# and worker process (the question services import it), and scikit-learn with the scipy and
# pandas it brings weighs about 100 MB in a process that never rewrites a question.

# Published means (HelpBench) shown beside ours for reference.
PUBLISHED_COSINE_MEAN = 0.56
PUBLISHED_TRIGRAM_MEAN = 0.04

COSINE_METHOD = (
    "cosine similarity of TF-IDF vectors (scikit-learn TfidfVectorizer, default settings), "
    "fitted on every original and final text in the bank"
)
COSINE_METHOD_SHORT = "TF-IDF"
COSINE_CHOICE = (
    "The published study reports a mean cosine similarity of 0.56 but does not say how it "
    "computed it, so TF-IDF is Assay's choice, not the paper's method."
)
EMBEDDING_COSINE_METHOD = (
    "cosine of the embedding vectors of the original and of the rewrite (their dot product "
    "over the product of their lengths), made by the embedding model the researcher chose, "
    "through litellm"
)
EMBEDDING_COSINE_CHOICE = (
    "The researcher's choice of method and model, beside Assay's TF-IDF cosine; the "
    "published study does not say how its cosine was computed."
)
TRIGRAM_METHOD = (
    "Jaccard overlap of word 3-grams: shared 3-grams over all distinct 3-grams of the two "
    "texts, words lower-cased"
)

_WORD = re.compile(r"[\w']+")


def word_trigrams(text: str) -> set[tuple[str, str, str]]:
    """The distinct 3-grams of consecutive lower-cased words (punctuation is not a word)."""
    tokens = _WORD.findall(text.lower())
    return {tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)}


def trigram_jaccard(first: str, second: str) -> float:
    a, b = word_trigrams(first), word_trigrams(second)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def tfidf_cosines(pairs: Sequence[tuple[str, str]], *, corpus: Sequence[str]) -> list[float]:
    """The cosine similarity of each (original, rewrite) pair, in TF-IDF vectors fitted on
    `corpus` (the bank's texts)."""
    if not pairs:
        return []
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer()
    try:
        vectorizer.fit(list(corpus))
    except ValueError:  # a corpus with no word of two letters: nothing to compare
        return [0.0] * len(pairs)
    left = vectorizer.transform([a for a, _ in pairs])
    right = vectorizer.transform([b for _, b in pairs])
    # Rows are l2-normalised, so the row-wise dot product is the cosine.
    return [float(v) for v in left.multiply(right).sum(axis=1).A1]


def vector_cosine(first: Sequence[float], second: Sequence[float]) -> float:
    """The cosine of two vectors: their dot product over the product of their lengths.
    ValueError, with the reason, where it is undefined (a vector of zeros) or the two
    differ in length: never a number in its place."""
    import numpy as np

    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or not a.size:
        raise ValueError(f"the vectors have {a.size} and {b.size} dimensions: no cosine")
    norms = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    if norms == 0.0:
        raise ValueError("a vector is all zeros, so the cosine is undefined")
    return float(np.dot(a, b) / norms)
