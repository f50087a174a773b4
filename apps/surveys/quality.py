"""Quality flags that help researchers review submissions. Flags inform; people decide.

Prolific's rules say which flags are grounds for a rejection (`Flag.grounds`):

- too fast: far below the typical time. Prolific's guidance: more than 3 standard deviations
  under the mean completion time of the study's participants. The mean and SD are of the
  other finished, non-rejected participants (with the participant in them, one extreme time
  inflates the SD that judges it: among 10 people no one can be 3 SD below a mean that
  includes them). Under MIN_SAMPLE other participants an SD says little; until then a
  submission is too fast under a third of the study's estimated time (duration.py);
- attention checks: in a study of 5 minutes or more (its estimated time), Prolific allows a
  rejection only after at least two failed checks; a shorter study may reject on one. A
  failure short of that is shown to the researcher, not grounds;
- low-effort explanations: too short, the same text repeated, or not made of words.
"""

import math
import re
from collections import Counter
from dataclasses import dataclass

MIN_EXPLANATION_CHARS = 15
MIN_EXPLANATION_WORDS = 3
REPEAT_LIMIT = 3  # the same explanation this many times or more is repetition
FAST_SDS = 3
MIN_SAMPLE = 10  # other finished participants before the mean and SD are used
FAST_FRACTION_OF_ESTIMATE = 1 / 3
ATTENTION_LONG_STUDY_MINUTES = 5
LABELS = {
    "too_fast": "Too fast",
    "attention": "Failed attention checks",
    "attention_once": "Missed an attention check",
    "low_effort": "Low-effort explanations",
}
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_VOWEL = re.compile(r"[aeiouyàáâäãåèéêëìíîïòóôöõùúûüœæ]", re.IGNORECASE)


@dataclass(frozen=True)
class Flag:
    code: str
    message: str
    grounds: bool = True  # Prolific's rules allow a rejection on it

    @property
    def label(self) -> str:
        return LABELS.get(self.code, self.code.replace("_", " ").capitalize())


def attention_failures_needed(*, minutes: int) -> int:
    """How many failed attention checks Prolific's rules need before a rejection."""
    return 2 if minutes >= ATTENTION_LONG_STUDY_MINUTES else 1


@dataclass(frozen=True)
class Times:
    """Completion times in seconds, as count, sum and sum of squares: a review page takes
    one participant out of them for each participant it judges."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    @classmethod
    def of(cls, seconds: list[float]) -> "Times":
        return cls(len(seconds), math.fsum(seconds), math.fsum(s * s for s in seconds))

    def without(self, seconds: float) -> "Times":
        return Times(self.n - 1, self.total - seconds, self.squares - seconds * seconds)

    @property
    def mean(self) -> float:
        return self.total / self.n

    @property
    def sd(self) -> float:  # the sample SD
        return math.sqrt(max(self.squares - self.total**2 / self.n, 0.0) / (self.n - 1))


def too_fast_under(*, others: Times, estimated_minutes: int) -> tuple[float, str]:
    """(seconds under which a submission is too fast, the rule that gave them), given the
    other finished, non-rejected participants' times."""
    if others.n >= MIN_SAMPLE:
        mean, sd = others.mean, others.sd
        return mean - FAST_SDS * sd, (
            f"more than {FAST_SDS} SD under the mean of the other {others.n} participants "
            f"({mean / 60:.1f} ± {sd / 60:.1f} min)"
        )
    return estimated_minutes * 60 * FAST_FRACTION_OF_ESTIMATE, (
        f"under a third of the estimated {estimated_minutes} min (fewer than {MIN_SAMPLE} "
        "other participants to compare with)"
    )


def _normalised(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def looks_like_words(text: str) -> bool:
    """Most tokens are letters with a vowel and no long run of one character ("asdfgh",
    "xxxxxxx" and "jjj kkk" are not words)."""
    tokens = _WORD.findall(text)
    if not tokens:
        return False
    wordlike = [
        t
        for t in tokens
        if _VOWEL.search(t) and not re.search(r"(.)\1\1", t.lower()) and len(t) <= 30
    ]
    return len(wordlike) / len(tokens) >= 0.6


def explanation_problems(explanations: list[str]) -> list[str]:
    problems = []
    given = [e.strip() for e in explanations if e.strip()]
    short = [
        e
        for e in given
        if len(e) < MIN_EXPLANATION_CHARS or len(_WORD.findall(e)) < MIN_EXPLANATION_WORDS
    ]
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


def too_fast_summary(*, times: Times, estimated_minutes: int) -> str:
    """The too-fast rule as it stands for a study whose counted participants took `times`."""
    rule = (
        f"Too fast: more than {FAST_SDS} SD under the mean completion time of the study's "
        f"other finished, non-rejected participants (Prolific's guidance), once there are "
        f"{MIN_SAMPLE} of them to compare with; until then, under a third of the estimated "
        f"{estimated_minutes} min ({estimated_minutes * FAST_FRACTION_OF_ESTIMATE:.1f} min), "
        "because an SD of a few times says little."
    )
    if times.n > MIN_SAMPLE:
        mean, sd = times.mean / 60, times.sd / 60
        return f"{rule} Now {times.n} participants: {mean:.1f} ± {sd:.1f} min."
    return f"{rule} Now {times.n} participant{'s' if times.n != 1 else ''}."


def participant_flags(
    *,
    seconds: float | None,
    others: Times,
    estimated_minutes: int,
    attention_failures: int,
    attention_checks: int,
    explanations: list[str],
) -> list[Flag]:
    """`others`: the other finished, non-rejected participants' times."""
    flags = []
    if seconds is not None:
        under, rule = too_fast_under(others=others, estimated_minutes=estimated_minutes)
        if seconds < under:
            flags.append(Flag("too_fast", f"finished in {seconds / 60:.1f} min: {rule}"))
    if attention_failures:
        needed = attention_failures_needed(minutes=estimated_minutes)
        failed = f"failed {attention_failures} of {attention_checks} attention checks"
        if attention_failures >= needed:
            flags.append(Flag("attention", failed))
        else:
            flags.append(
                Flag(
                    "attention_once",
                    f"{failed}; a study of {ATTENTION_LONG_STUDY_MINUTES} minutes or more "
                    f"needs {needed} failed checks before Prolific allows a rejection",
                    grounds=False,
                )
            )
    problems = explanation_problems(explanations)
    if problems:
        flags.append(Flag("low_effort", "; ".join(problems)))
    return flags
