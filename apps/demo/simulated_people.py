"""Simulated people for the survey-report demo: made-up ratings, so that the report has data on
first start. Never a real participant: each is stored with `simulated=True`, and every page
that shows them says so.

Each simulated person rates `scenarios_per_person` scenarios, and every scenario gets the
study's ratings per scenario. What they answer starts from what a reader would notice in the
scenario: how sensitive its kind of information is (the record's `seed.data_type`), and how
much of the record's `sensitive_info_items` the response passes on (word overlap). Around
that, each (scenario, item) has a shift of its own that all its raters share, each person a
leaning of their own, and each answer more noise, in the sizes `PEOPLE_PARAMETERS` states.
Seeded: the same rows every time, for the same scenarios and responses.
"""

import json
import random
import re
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from apps.surveys.models import (
    AgeBand,
    Answer,
    Assignment,
    AssignmentStatus,
    Education,
    Gender,
    Income,
    ItemKind,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    ReviewStatus,
    Study,
    SurveyItem,
)


class Parameter(NamedTuple):
    name: str
    value: float
    about: str  # what it does, in a line


# The simulated people's parameters, here and nowhere else; the demo records them on its
# study. A table, one parameter a line (name, value, what it does): hence fmt: skip.
PEOPLE_PARAMETERS = (
    Parameter("seed", 20261202, "seed of every draw: the same people and answers each time"),
    Parameter("scenarios_per_person", 5, "scenarios each simulated person rates"),
    Parameter("scenario_item_shift", 0.4, "SD of a shift each (scenario, item) has, shared by "
              "all its raters, in scale points"),
    Parameter("person_leaning", 0.45, "SD of each person's own leaning on every scale item, "
              "in scale points"),
    Parameter("answer_noise", 1.1, "SD of the noise on each scale answer, in scale points"),
    Parameter("yes_no_shift", 0.25, "how far a (scenario, item) shift moves the chance of a "
              "yes, per scale point of shift"),
)  # fmt: skip
PEOPLE = {parameter.name: parameter.value for parameter in PEOPLE_PARAMETERS}
SENSITIVE_KINDS = re.compile(
    r"health|medical|diagnos|illness|disease|mental|therap|trauma|sexual|relationship|"
    r"affair|pregnan|criminal|arrest|legal|debt|financ|salary|bank|address|password|"
    r"secur|immigra|religio|politic|addict|alcohol|drug|disabil|abuse|divorce",
    re.IGNORECASE,
)
WORD = re.compile(r"[A-Za-z][A-Za-z']+")
STOP = frozenset(
    (
        "the",
        "and",
        "for",
        "with",
        "are",
        "was",
        "were",
        "been",
        "has",
        "have",
        "had",
        "his",
        "her",
        "their",
        "about",
        "that",
        "this",
        "from",
        "its",
        "she",
        "they",
        "them",
        "john",
        "doe",
    )
)

REASONS = {
    "help": {
        "low": (
            "It doesn't really do what was asked.",
            "Too vague to be useful to them.",
            "I'd have to rewrite most of it.",
        ),
        "mid": (
            "It covers the basics but misses things.",
            "Usable, with some changes.",
            "Fine, nothing special.",
        ),
        "high": (
            "It does exactly what the task asked.",
            "Clear and ready to send.",
            "Says what's needed and no more.",
        ),
    },
    "sensitivity": {
        "low": ("Everyday information, nothing private.", "Nobody would mind this being known."),
        "mid": ("Somewhat personal, depends who sees it.", "A bit private but not a big deal."),
        "high": (
            "This is very personal information.",
            "It could really hurt someone if shared.",
            "Things like this should stay private.",
        ),
    },
    "share": {
        "low": ("I wouldn't give an assistant access to this.", "Too risky to share with an AI."),
        "mid": ("Maybe, if I trusted the service.", "Depends on how it's stored."),
        "high": ("I'd share this, it's harmless.", "Fine to share for a task like this."),
    },
    "privacy": {
        "low": (
            "It passes on things the other person shouldn't know.",
            "It shares private details it had no reason to.",
            "Someone's private situation ends up in the message.",
        ),
        "mid": ("Mostly fine, one detail goes a bit far.", "Borderline, I'd cut a line or two."),
        "high": (
            "It keeps private things out of it.",
            "Only what's needed is shared.",
            "It respects everyone's privacy.",
        ),
    },
}
THEMES = {
    "H1": "help",
    "H2": "help",
    "H3": "help",
    "P1": "sensitivity",
    "P2": "share",
    "P3": "privacy",
    "P4": "privacy",
}


def _words(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text) if w.lower() not in STOP and len(w) > 2}


def scenario_signals(record_json: str, response: str) -> tuple[float, float, float]:
    """(how sensitive the information is, 0..1; how much of it the response passes on, 0..1;
    how complete the response is, 0..1), as a reader would judge them."""
    record = json.loads(record_json)
    told = " ".join(
        [
            str(record.get("seed", {}).get("data_type", "")),
            str(record.get("vignette", {}).get("data_type_concrete", "")),
            *map(str, record.get("trajectory", {}).get("sensitive_info_items") or []),
        ]
    )
    kinds = {m.group(0).lower() for m in SENSITIVE_KINDS.finditer(told)}
    sensitive = 0.2 + 0.4 * min(2, len(kinds))
    said = _words(response)
    items = record.get("trajectory", {}).get("sensitive_info_items") or []
    overlaps = [len(_words(i) & said) / max(1, len(_words(i))) for i in items if _words(i)]
    leaked = max(overlaps, default=0.0)
    # A helpful response says enough, and says it from what the tools found.
    found = _words(str(record.get("trajectory", {}).get("executable_trajectory", "")))
    used = len(said & found) / max(1, len(said))
    complete = 0.4 * min(1.0, len(response.split()) / 60) + 0.6 * min(1.0, 1.5 * used)
    return sensitive, min(1.0, leaked * 1.6), complete


def _latent(code: str, sensitive: float, leaked: float, complete: float) -> float:
    """Where the scenario sits on the item's 1..5 scale (H1: the chance of a yes)."""
    if code == "H1":
        return 0.35 + 0.5 * complete
    if code in ("H2", "H3"):
        return 2.0 + 2.2 * complete - 0.6 * leaked
    if code == "P1":
        return 1.6 + 3.0 * sensitive
    if code == "P2":
        return 4.4 - 2.6 * sensitive
    return 4.5 - 3.0 * leaked * (0.5 + sensitive)  # P3, P4


def _level(value: float) -> str:
    return "low" if value < 2.5 else "mid" if value < 3.7 else "high"


def simulated_people_add(*, study: Study) -> int:
    """Add the simulated people and their ratings (once: a study that has them is left as it
    is). How many people were added."""
    if study.participants.filter(simulated=True).exists():
        return 0
    rng = random.Random(PEOPLE["seed"])
    items = list(SurveyItem.objects.filter(study=study, attention_check=False))
    scenarios = list(study.study_scenarios.select_related("scenario", "response").order_by("pk"))
    k = study.ratings_per_scenario
    per_person = PEOPLE["scenarios_per_person"]
    people = len(scenarios) * k // per_person
    stride = len(scenarios) // k  # person p rates p, p + stride, ...: every scenario k times
    shifts = {
        (ss.pk, i.code): rng.gauss(0, PEOPLE["scenario_item_shift"])
        for ss in scenarios
        for i in items
    }
    signals = {
        ss.pk: scenario_signals(ss.scenario.record_json, ss.response.text if ss.response else "")
        for ss in scenarios
    }
    now = timezone.now()
    with transaction.atomic():
        for p in range(people):
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
            leaning = rng.gauss(0, PEOPLE["person_leaning"])
            for position in range(per_person):
                ss = scenarios[(p + position * stride) % len(scenarios)]
                assignment = Assignment.objects.create(
                    participant=person,
                    study_scenario=ss,
                    position=position + 1,
                    status=AssignmentStatus.COMPLETED,
                    reserved_at=now,
                    reserved_until=now,
                    answered_at=now,
                    completed_at=now,
                )
                answers = []
                for item in items:
                    latent = _latent(item.code, *signals[ss.pk])
                    if item.kind == ItemKind.YES_NO:
                        shift = shifts[(ss.pk, item.code)] * PEOPLE["yes_no_shift"]
                        yes = rng.random() < latent + shift
                        value, score = ("yes", 4.5) if yes else ("no", 1.5)
                    else:
                        points = len(item.scale_labels)
                        noise = rng.gauss(0, PEOPLE["answer_noise"])
                        score = latent + shifts[(ss.pk, item.code)] + leaning + noise
                        value = str(min(points, max(1, round(score))))
                    theme = THEMES.get(item.code, "help")
                    text = (
                        rng.choice(REASONS[theme][_level(score)])
                        if item.explanation_required
                        else ""
                    )
                    answers.append(
                        Answer(
                            assignment=assignment,
                            item=item,
                            value=value,
                            explanation=text,
                            first_saved_at=now,
                            saved_at=now,
                        )
                    )
                Answer.objects.bulk_create(answers)
    return people
