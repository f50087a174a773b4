"""The rubrics the provider has been told about, so that its answers to their questions can
address (or miss, or violate) their criteria.

A benchmark asks a model the question alone, as HelpBench does, so the criteria cannot come
in the prompt: whoever wants answers that speak to a rubric registers it first, with
POST /v1/offline/rubrics {"rubrics": [{"question": "...", "criteria": [{"text": "...",
"polarity": "positive", "kind": "factual", "points": 3}, ...]}, ...]} (the demo does, each
time it loads). A question is known by its words, whatever their spacing or case; registering
it again replaces its criteria. An answer to a question nobody registered is written from the
provider's own banks of advice, as before. Registrations live as long as the process.
"""

from dataclasses import dataclass

MAX_RUBRICS = 10_000
MAX_CRITERIA = 100
POLARITIES = ("positive", "negative")
KINDS = ("factual", "presentation")


@dataclass(frozen=True)
class KnownCriterion:
    text: str
    polarity: str
    kind: str
    points: int


def question_key(question: str) -> str:
    return " ".join(question.split()).lower()


class RubricError(ValueError):
    """A registration the provider cannot read; answered with a 400 that says why."""


def _criterion(item: object) -> KnownCriterion:
    if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"]:
        raise RubricError('Every criterion needs a "text".')
    polarity = item.get("polarity", "positive")
    kind = item.get("kind", "factual")
    points = item.get("points", 1)
    if polarity not in POLARITIES:
        raise RubricError(f"A criterion's polarity is positive or negative, not {polarity!r}.")
    if kind not in KINDS:
        raise RubricError(f"A criterion's kind is factual or presentation, not {kind!r}.")
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise RubricError("A criterion's points are a whole number, 1 or more.")
    return KnownCriterion(text=item["text"], polarity=polarity, kind=kind, points=points)


class RubricBook:
    def __init__(self) -> None:
        self._rubrics: dict[str, tuple[str, tuple[KnownCriterion, ...]]] = {}

    def register(self, body: object) -> int:
        """Read and keep a registration's rubrics (all or none); how many it held."""
        listed = body.get("rubrics") if isinstance(body, dict) else None
        if not isinstance(listed, list):
            raise RubricError('Send {"rubrics": [{"question": ..., "criteria": [...]}, ...]}.')
        read = {}
        for entry in listed:
            question = entry.get("question") if isinstance(entry, dict) else None
            criteria = entry.get("criteria") if isinstance(entry, dict) else None
            if not isinstance(question, str) or not question.strip():
                raise RubricError('Every rubric needs its "question".')
            if not isinstance(criteria, list) or len(criteria) > MAX_CRITERIA:
                raise RubricError(f'"criteria" is a list of at most {MAX_CRITERIA}.')
            read[question_key(question)] = (question, tuple(_criterion(c) for c in criteria))
        if len(self._rubrics.keys() | read.keys()) > MAX_RUBRICS:
            raise RubricError(f"The provider keeps at most {MAX_RUBRICS} rubrics.")
        self._rubrics.update(read)
        return len(read)

    def criteria(self, question: str) -> tuple[KnownCriterion, ...]:
        found = self._rubrics.get(question_key(question))
        return found[1] if found else ()

    def as_json(self) -> dict:
        return {
            "object": "offline.rubrics",
            "count": len(self._rubrics),
            "rubrics": [
                {"question": question, "criteria": [c.__dict__ for c in criteria]}
                for question, criteria in self._rubrics.values()
            ],
        }
