"""What each offline model tends to do when it answers a help question or grades an answer:
the one table of their differences, and the spread that makes questions, criteria and
samples differ.

An answer is built from statements, each of which addresses one criterion of the question's
rubric (or, for a negative criterion, does what it warns against), plus statements that give
the answer its presentation: a preamble before the advice, a tangent beyond the question, a
flippant remark, an order instead of advice, a promise that a measure is complete. Whether an
answer holds a statement is a draw with the chance

    logistic(shift(p, sigma) + sigma_q*z_question + sigma_c*z_criterion
             + sigma_mq*z_model_question + sigma_s*z_sample)

where p is the model's propensity below, each z a standard normal (the first three hashed
from the question, the criterion and the model's name, so that they are the same in every
sample; the last drawn once per answer, so that one answer is better than the next), and
`shift` the logit that makes the chance's mean over all of them exactly p. So a model's
stated propensity is the share of answers, over many questions, criteria and samples, that
hold the statement: what tests/offline_llm checks.

The values are plausible guesses at how assistants differ, chosen before anything was
measured and not fitted to any published result: a terse model gets to the point and stays
on it but covers less and gives orders; a thorough one covers most and wanders off the
question; a friendly one is warm, sometimes casual, and more often promises too much.
Models the table does not name (any other name the provider is asked for) get the default
row moved by up to 0.08 either way, fixed by a hash of their name.
"""

import hashlib
import math
import random
from dataclasses import asdict, dataclass, fields
from functools import lru_cache

from .names import name_hash, short_name


@dataclass(frozen=True)
class Propensities:
    """One model's chances; each a share of answers (or, for grader_error, of verdicts)."""

    address: float  # holds the statement of a positive factual criterion
    violate: float  # holds the statement a negative factual criterion warns against
    lead: float  # opens with its advice (else: a preamble of background first)
    focus: float  # keeps to the question (else: a tangent beyond it)
    unprofessional: float  # holds a flippant, unprofessional remark
    imperative: float  # orders the reader about
    overstate: float  # says a measure is complete or guaranteed
    grader_error: float  # grading: turns a verdict round

    def chance(self, kind: str) -> float:
        return getattr(self, kind)


# A table, one model a line, columns as in `Propensities`: hence fmt: skip.
MODEL_PROPENSITIES: dict[str, Propensities] = {
    #                             address violate lead  focus unprof imper overst grader_error
    "offline-terse":    Propensities(0.55, 0.10, 0.85, 0.85, 0.03, 0.25, 0.08, 0.05),
    "offline-thorough": Propensities(0.75, 0.14, 0.45, 0.40, 0.02, 0.10, 0.15, 0.04),
    "offline-friendly": Propensities(0.65, 0.08, 0.60, 0.65, 0.06, 0.04, 0.25, 0.06),
    "offline-grader":   Propensities(0.60, 0.10, 0.65, 0.65, 0.03, 0.10, 0.15, 0.03),
}  # fmt: skip
DEFAULT = Propensities(0.60, 0.10, 0.65, 0.65, 0.03, 0.10, 0.15, 0.06)
OTHER_MODEL_SPREAD = 0.08
GRADER_ERROR_RANGE = (0.02, 0.12)

ABOUT = {
    "address": "share of answers that hold the statement addressing a positive factual criterion",
    "violate": "share of answers that hold the statement a negative factual criterion warns "
    "against",
    "lead": "share of answers that open with their advice (the others open with background)",
    "focus": "share of answers that keep to the question (the others add a tangent)",
    "unprofessional": "share of answers with a flippant, unprofessional remark",
    "imperative": "share of answers that order the reader about instead of advising",
    "overstate": "share of answers that say a measure makes the reader completely safe",
    "grader_error": "share of this model's verdicts, grading, that it turns round",
}
KINDS = tuple(field.name for field in fields(Propensities) if field.name != "grader_error")


@dataclass(frozen=True)
class Spread:
    """How far questions, criteria, models and samples move a chance (logit SDs)."""

    question_sd: float = 0.6
    criterion_sd: float = 0.8
    model_question_sd: float = 0.4
    sample_sd: float = 0.5

    @property
    def total(self) -> float:
        return math.sqrt(sum(value**2 for value in asdict(self).values()))


SPREAD = Spread()
SPREAD_ABOUT = {
    "question_sd": "logit SD of a question's difficulty: the same for every model and criterion",
    "criterion_sd": "logit SD of one criterion's (or presentation feature's) difficulty on one "
    "question: the same for every model",
    "model_question_sd": "logit SD of one model's affinity to one question",
    "sample_sd": "logit SD of one answer's luck, shared by all its statements",
}


def propensities_for(model: str) -> Propensities:
    name = short_name(model)
    if name in MODEL_PROPENSITIES:
        return MODEL_PROPENSITIES[name]
    moved = {}
    for index, field in enumerate(fields(Propensities)):
        base = getattr(DEFAULT, field.name)
        if field.name == "grader_error":
            low, high = GRADER_ERROR_RANGE
            moved[field.name] = low + (name_hash(f"{name}:{index}") % 101) / 100 * (high - low)
        else:
            offset = ((name_hash(f"{name}:{index}") % 161) - 80) / 1000  # -0.08 .. 0.08
            moved[field.name] = min(0.97, max(0.01, base + offset))
    return Propensities(**{key: round(value, 3) for key, value in moved.items()})


def stable_normal(*parts: str) -> float:
    digest = hashlib.blake2b("\x00".join(parts).encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big")).gauss(0, 1)


def _logistic(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


# The normal density on a fine grid: enough for the mean of logistic(s + sigma*Z) to 1e-6.
_GRID = [(-7 + 14 * i / 700) for i in range(701)]
_WEIGHTS = [math.exp(-z * z / 2) for z in _GRID]
_WEIGHT_SUM = sum(_WEIGHTS)


@lru_cache(maxsize=256)
def shift(p: float, sigma: float) -> float:
    """The logit s with mean of logistic(s + sigma*Z) over Z ~ N(0, 1) equal to p."""
    low, high = -30.0, 30.0
    for _ in range(80):
        middle = (low + high) / 2
        mean = sum(w * _logistic(middle + sigma * z) for z, w in zip(_GRID, _WEIGHTS, strict=True))
        if mean / _WEIGHT_SUM < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def chance(
    *, model: str, kind: str, question: str, criterion: str, luck: float, spread: Spread = SPREAD
) -> float:
    """The chance that this answer holds a statement of `kind` for `criterion` (a criterion's
    text, or a presentation feature's name) on `question`; `luck` is the answer's z."""
    p = propensities_for(model).chance(kind)
    name = short_name(model)
    x = shift(p, spread.total)
    x += spread.question_sd * stable_normal("question", question)
    x += spread.criterion_sd * stable_normal("criterion", kind, question, criterion)
    x += spread.model_question_sd * stable_normal("model", name, question)
    x += spread.sample_sd * luck
    return _logistic(x)


def model_fields(model: str) -> dict[str, float]:
    return asdict(propensities_for(model))
