"""How long a study takes a participant, scaled from the published study.

The published participants rated 5 scenarios with 6 explanations each (every item but H1
asks for one) and took 47 minutes on average, consent and questions about them included:
about 1.6 minutes per explanation written, reading its scenario included. A study's
estimate scales that by its own scenarios and explanations. The consent page tells
participants this estimate, and Prolific's attention-check rule (quality.py) turns on it.
"""

from dataclasses import dataclass, replace

from .models import StudyKind

PUBLISHED_MINUTES = 47
PUBLISHED_SCENARIOS = 5
PUBLISHED_EXPLANATIONS = 6  # per scenario
MINUTES_PER_EXPLANATION = PUBLISHED_MINUTES / (PUBLISHED_SCENARIOS * PUBLISHED_EXPLANATIONS)


@dataclass(frozen=True)
class Estimate:
    minutes: int
    scenarios: int
    explanations: int  # per scenario
    page: str = "scenario"  # what a participant's page shows: a scenario, or (answers) a page

    @property
    def basis(self) -> str:
        return (
            f"{self.scenarios} {self.page}{'s' if self.scenarios != 1 else ''} with "
            f"{self.explanations} explanation{'s' if self.explanations != 1 else ''} each; the "
            f"published study's participants took {PUBLISHED_MINUTES} minutes on average for "
            f"{PUBLISHED_SCENARIOS} scenarios with {PUBLISHED_EXPLANATIONS} explanations each "
            f"(about {MINUTES_PER_EXPLANATION:.1f} minutes per explanation)"
        )


def estimate(*, scenarios: int, explanations: int) -> Estimate:
    """`explanations`: how many of the items on a scenario page ask for one. A scenario that
    asks none still has to be read and answered: it counts as one."""
    minutes = max(1, round(MINUTES_PER_EXPLANATION * scenarios * max(explanations, 1)))
    return Estimate(minutes=minutes, scenarios=scenarios, explanations=explanations)


def study_estimate(*, study, items) -> Estimate:
    """The estimate for `study` asking `items` (its SurveyItems; attention checks are one
    extra question on one page, not counted). A page asks the items of its kind of unit
    (a study of answers has answers and pairs): the kind that asks the most explanations
    sets the estimate, so that it is never short."""
    per_kind: dict[str, int] = {}
    for item in items:
        if item.explanation_required and not item.attention_check:
            per_kind[item.unit_kind] = per_kind.get(item.unit_kind, 0) + 1
    explanations = max(per_kind.values(), default=0)
    found = estimate(scenarios=study.scenarios_per_participant, explanations=explanations)
    if study.kind == StudyKind.ANSWERS:  # pages of answers and pairs, as participants call them
        return replace(found, page="page")
    return found
