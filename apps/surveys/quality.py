"""Quality flags that help researchers review submissions. Flags inform; people decide.

- too fast: the whole survey took under a third of the study's median (a common screening
  rule for online panels; the median is over finished, non-rejected participants);
- failed attention check: an attention-check item answered otherwise than instructed;
- low-effort explanations: too short, the same text repeated, or not made of words.
"""

import re
import statistics
from collections import Counter
from dataclasses import dataclass

MIN_EXPLANATION_CHARS = 15
MIN_EXPLANATION_WORDS = 3
REPEAT_LIMIT = 3  # the same explanation this many times or more is repetition
FAST_FRACTION = 1 / 3
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_VOWEL = re.compile(r"[aeiouyàáâäãåèéêëìíîïòóôöõùúûüœæ]", re.IGNORECASE)


@dataclass(frozen=True)
class Flag:
    code: str
    message: str


def median_seconds(durations: list[float]) -> float | None:
    return statistics.median(durations) if durations else None


def _normalised(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def looks_like_words(text: str) -> bool:
    """Most tokens are letters with a vowel and no long run of one character ("asdfgh",
    "xxxxxxx" and "jjj kkk" are not words)."""
    tokens = _WORD.findall(text)
    if not tokens:
        return False
    wordlike = [
        t for t in tokens
        if _VOWEL.search(t) and not re.search(r"(.)\1\1", t.lower()) and len(t) <= 30
    ]  # fmt: skip
    return len(wordlike) / len(tokens) >= 0.6


def explanation_problems(explanations: list[str]) -> list[str]:
    problems = []
    given = [e.strip() for e in explanations if e.strip()]
    short = [
        e for e in given
        if len(e) < MIN_EXPLANATION_CHARS or len(_WORD.findall(e)) < MIN_EXPLANATION_WORDS
    ]  # fmt: skip
    if short:
        problems.append(f"{len(short)} of {len(given)} explanations are very short")
    repeats = Counter(_normalised(e) for e in given if _normalised(e))
    worst, times = repeats.most_common(1)[0] if repeats else ("", 0)
    if times >= REPEAT_LIMIT:
        problems.append(f"the same explanation is given {times} times (“{worst[:40]}”)")
    nonsense = [e for e in given if not looks_like_words(e)]
    if nonsense:
        problems.append(f"{len(nonsense)} explanations do not look like words")
    return problems


def participant_flags(
    *, seconds: float | None, median: float | None, attention_failed: bool, explanations: list[str]
) -> list[Flag]:
    flags = []
    if seconds is not None and median and seconds < median * FAST_FRACTION:
        flags.append(
            Flag(
                "too_fast",
                f"finished in {seconds / 60:.1f} min; the median is {median / 60:.1f} min",
            )
        )
    if attention_failed:
        flags.append(Flag("attention", "failed an attention check"))
    problems = explanation_problems(explanations)
    if problems:
        flags.append(Flag("low_effort", "; ".join(problems)))
    return flags
