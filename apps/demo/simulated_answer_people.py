"""Simulated people for the answer-study demo: made-up ratings of a benchmark's answers, so that
the answer-study report has data on first start. Never a real participant: each is stored with
`simulated=True`, and every page that shows them says so.

Each simulated person rates `units_per_person` units, and every unit gets the study's ratings
per unit. What they answer starts from what a reader would notice in the answer, as the
benchmark measured it: the answer's rubric score and the auto-rater's verdicts on the shared
presentation criteria. A person sees a presentation criterion as the rater did with the
chance `criterion_agreement`; helpfulness rises with the score and with the presentation
criteria met, each by its own weight (hashed from the criterion's text, so that some matter to
people more than others); around that, each (answer, item) has a shift that all its raters
share, each person a leaning of their own, and each answer more noise. In a pair, a person
prefers the answer with the higher score by a logistic of the difference, and calls them
equal when the two seem close. Sizes are `ANSWER_PEOPLE_PARAMETERS`; seeded: the same rows
every time, for the same draw.
"""

import hashlib
import math
import random

from django.db import transaction
from django.utils import timezone

from apps.answer_studies.models import CriterionItem, StudyAnswer, StudyPair
from apps.grading.models import Judgment, ResponseScore
from apps.surveys.models import (
    AgeBand,
    Answer,
    Assignment,
    AssignmentStatus,
    Education,
    Gender,
    Income,
    ItemGroup,
    ItemKind,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    ReviewStatus,
    Study,
    SurveyItem,
    UnitKind,
)

from .simulated_people import Parameter

# The simulated people's parameters, here and nowhere else; the demo records them on its
# study. A table, one parameter a line (name, value, what it does): hence fmt: skip.
ANSWER_PEOPLE_PARAMETERS = (
    Parameter("seed", 20261205, "seed of every draw: the same people and answers each time"),
    Parameter("units_per_person", 6, "answers and pairs each simulated person rates"),
    Parameter("score_weight", 2.2, "scale points of helpfulness between a rubric score of 0 "
              "and one of 1"),
    Parameter("presentation_weight", 1.2, "the most scale points the presentation criteria "
              "met add together (each criterion's part hashed from its text, 0 to this)"),
    Parameter("criterion_agreement", 0.75, "chance that a person sees a presentation "
              "criterion as the auto-rater judged it"),
    Parameter("answer_item_shift", 0.35, "SD of a shift each (answer, item) has, shared by "
              "all its raters, in scale points"),
    Parameter("person_leaning", 0.45, "SD of each person's own leaning on every scale item, "
              "in scale points"),
    Parameter("answer_noise", 0.9, "SD of the noise on each scale answer, in scale points"),
    Parameter("pair_slope", 6.0, "logistic slope of preferring answer A on the difference "
              "of the two rubric scores"),
    Parameter("equal_band", 0.12, "a pair is called equal when the chance of preferring A "
              "is this close to a half"),
)  # fmt: skip
ANSWER_PEOPLE = {parameter.name: parameter.value for parameter in ANSWER_PEOPLE_PARAMETERS}
REASONS = {
    "low": ("It doesn't really answer what they asked.", "Too vague to act on."),
    "mid": ("Useful, but I'd want more detail.", "Some good points, some missing."),
    "high": ("Clear steps they can follow right away.", "It answers the question well."),
    "pair": ("That one is clearer and more specific.", "It covers more of what they need."),
    "equal": ("Both say about the same thing.",),
}


def _weight(text: str) -> float:
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return ANSWER_PEOPLE["presentation_weight"] * int.from_bytes(digest, "big") / 2**64


def _level(value: float, points: int) -> str:
    share = (value - 1) / max(1, points - 1)
    return "low" if share < 0.4 else "mid" if share < 0.7 else "high"


def _signals(study: Study) -> tuple[dict, dict, dict]:
    """(unit -> its answer's score, unit -> {criterion item code: rater's verdict},
    unit -> (score of A, score of B))."""
    draw = study.answer_draw
    shown = {a.unit_id: a.response_id for a in StudyAnswer.objects.filter(unit__study=study)}
    pairs = {
        p.unit_id: (p.response_a_id, p.response_b_id)
        for p in StudyPair.objects.filter(unit__study=study)
    }
    responses = set(shown.values()) | {r for pair in pairs.values() for r in pair}
    scores = dict(
        ResponseScore.objects.filter(
            grading_run=draw.grading_run, response_id__in=responses
        ).values_list("response_id", "score")
    )
    codes = {
        c.criterion_id: c.item.code
        for c in CriterionItem.objects.filter(item__study=study).select_related("item")
    }
    met: dict[int, dict[str, bool]] = {}
    for response_id, shared, verdict in Judgment.objects.filter(
        grading_run=draw.grading_run,
        response_id__in=shown.values(),
        criterion__shared_source_id__in=codes,
        met__isnull=False,
    ).values_list("response_id", "criterion__shared_source_id", "met"):
        met.setdefault(response_id, {})[codes[shared]] = verdict
    return (
        {unit: scores.get(r) for unit, r in shown.items()},
        {unit: met.get(r, {}) for unit, r in shown.items()},
        {unit: (scores.get(a), scores.get(b)) for unit, (a, b) in pairs.items()},
    )


def _value(item: SurveyItem, latent: float, rng: random.Random) -> tuple[str, float]:
    """(the answer to the item, where it sits on 1..points) for a latent on the 1..5 scale."""
    if item.kind == ItemKind.YES_NO:
        yes = rng.random() < 1 / (1 + math.exp(-(latent - 3.0) * 1.5))
        return ("yes", 4.5) if yes else ("no", 1.5)
    points = len(item.scale_labels)
    scaled = 1 + (latent - 1) * (points - 1) / 4
    value = min(points, max(1, round(scaled)))
    return str(value), float(value)


def simulated_answer_people_add(*, study: Study) -> int:
    """Add the simulated people and their ratings (once: a study that has them is left as it
    is). How many people were added."""
    if study.participants.filter(simulated=True).exists():
        return 0
    rng = random.Random(ANSWER_PEOPLE["seed"])
    items = list(SurveyItem.objects.filter(study=study, attention_check=False))
    presentation = {
        c.item.code: _weight(c.criterion.text)
        for c in CriterionItem.objects.filter(item__study=study).select_related("item", "criterion")
    }
    units = list(study.study_scenarios.order_by("pk"))
    scores, verdicts, pair_scores = _signals(study)
    k, per_person = study.ratings_per_scenario, int(ANSWER_PEOPLE["units_per_person"])
    # Slots: every unit k times, round after round; a person takes the next `per_person`
    # slots, so never the same unit twice, and every unit gets exactly k ratings.
    slots = [unit for _ in range(k) for unit in units]
    shifts = {
        (u.pk, i.code): rng.gauss(0, ANSWER_PEOPLE["answer_item_shift"])
        for u in units
        for i in items
    }
    now = timezone.now()
    people = 0
    with transaction.atomic():
        for start in range(0, len(slots), per_person):
            person = Participant.objects.create(
                study=study,
                kind=ParticipantKind.HUMAN,
                simulated=True,
                prolific_pid=f"{rng.getrandbits(96):024x}",
                status=ParticipantStatus.FINISHED,
                review_status=ReviewStatus.APPROVED,
                consented_at=now,
                finished_at=now,
                age=rng.choice(AgeBand.values[:-1]),
                gender=rng.choice(Gender.values[:2] * 4 + Gender.values[2:]),
                education=rng.choice(Education.values[1:-1]),
                income=rng.choice(Income.values),
            )
            people += 1
            leaning = rng.gauss(0, ANSWER_PEOPLE["person_leaning"])
            answers = []
            for position, unit in enumerate(slots[start : start + per_person], start=1):
                assignment = Assignment.objects.create(
                    participant=person,
                    study_scenario=unit,
                    position=position,
                    status=AssignmentStatus.COMPLETED,
                    reserved_at=now,
                    reserved_until=now,
                    answered_at=now,
                    completed_at=now,
                )
                for item in items:
                    if item.unit_kind != unit.kind:
                        continue
                    value, text = _answer(
                        item,
                        unit,
                        leaning,
                        shifts,
                        scores,
                        verdicts,
                        pair_scores,
                        presentation,
                        rng,
                    )
                    answers.append(
                        Answer(
                            assignment=assignment,
                            item=item,
                            value=value,
                            explanation=text if item.explanation_required else "",
                            first_saved_at=now,
                            saved_at=now,
                        )
                    )
            Answer.objects.bulk_create(answers)
    return people


def _answer(item, unit, leaning, shifts, scores, verdicts, pair_scores, presentation, rng):
    """(value, explanation) of one person's answer to one item of one unit."""
    if unit.kind == UnitKind.PAIR:
        a, b = pair_scores.get(unit.pk, (None, None))
        p_a = 1 / (1 + math.exp(-ANSWER_PEOPLE["pair_slope"] * ((a or 0) - (b or 0))))
        p_a = min(1.0, max(0.0, p_a + shifts[(unit.pk, item.code)] / 4))
        if abs(p_a - 0.5) < ANSWER_PEOPLE["equal_band"] and rng.random() < 0.5:
            return "equal", rng.choice(REASONS["equal"])
        return ("a" if rng.random() < p_a else "b"), rng.choice(REASONS["pair"])
    seen = verdicts.get(unit.pk, {})
    if item.code in presentation:
        rater = seen.get(item.code)
        agree = rng.random() < ANSWER_PEOPLE["criterion_agreement"]
        said = (rater if agree else not rater) if rater is not None else rng.random() < 0.5
        return ("yes" if said else "no"), ""
    score = scores.get(unit.pk) or 0.0
    met = sum(weight for code, weight in presentation.items() if seen.get(code))
    latent = 1.6 + ANSWER_PEOPLE["score_weight"] * score + met / max(1, len(presentation))
    if item.group == ItemGroup.WOULD_USE:
        latent -= 0.3
    latent += shifts[(unit.pk, item.code)] + leaning + rng.gauss(0, ANSWER_PEOPLE["answer_noise"])
    value, sits = _value(item, latent, rng)
    points = len(item.scale_labels) if item.kind == ItemKind.SCALE else 5
    return value, rng.choice(REASONS[_level(sits, points)])
