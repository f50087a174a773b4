"""An answer study built row by row for the answer-study report's tests: a graded sampling run
(answers, rubrics holding shared presentation criteria, the auto-rater's judgments and the
scores), the study's answer and pair units linked to its answers, items, and people's and
proxies' ratings stored as the surveys app stores them.

Every value is chosen here and kept in `Hand`, so that a test computes its reference from the
raw values, not from the report's frames."""

import datetime as dt
from dataclasses import dataclass, field

import numpy as np
from django.utils import timezone

from apps.answer_studies.models import AnswerDraw, CriterionItem, StudyAnswer, StudyPair
from apps.grading.models import CallState, GradingMode, GradingRun, Judgment, ResponseScore
from apps.llm.models import ModelConfig, PromptTemplate, Purpose, RunStatus
from apps.rubrics.models import (
    Criterion,
    Kind,
    Origin,
    Polarity,
    Rubric,
    RubricState,
    SharedCriterion,
    SharedCriterionSet,
)
from apps.runs.models import Response, ResponseStatus, SamplingRun
from apps.surveys.models import (
    Answer,
    Assignment,
    AssignmentStatus,
    ItemGroup,
    ItemKind,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    Study,
    StudyKind,
    StudyScenario,
    SurveyItem,
    UnitKind,
)
from tests.factories import ModelConfigFactory, question_make

MODELS = ["Alpha", "Beta", "Gamma", "Delta"]
QUESTIONS = 4
CRITERIA = ["C1", "C2", "C3"]  # presentation items, each from a shared criterion
HELP_LABELS = ["Not at all", "Slightly", "Somewhat", "Very", "Extremely"]


@dataclass
class Hand:
    study: Study
    grading: GradingRun
    models: dict[str, ModelConfig]
    answers: list[dict] = field(default_factory=list)  # per answer unit: unit, model, score...
    pairs: list[dict] = field(default_factory=list)  # per pair unit: unit, model_a, model_b
    help: dict = field(default_factory=dict)  # (rater key, unit index) -> HELP 1..5
    said: dict = field(default_factory=dict)  # (rater key, unit index, item) -> 0 / 1
    met: dict = field(default_factory=dict)  # (unit index, item) -> rater's verdict
    judged: list = field(default_factory=list)  # (rater key, pair unit index, outcome)
    proxy_help: dict = field(default_factory=dict)  # group key -> {(run, unit): value}
    scores: dict = field(default_factory=dict)  # model name -> every score in the run


def _items(study: Study) -> dict[str, SurveyItem]:
    specs = [
        ("HELP", ItemKind.SCALE, HELP_LABELS, ItemGroup.HELPFULNESS, UnitKind.ANSWER, False),
        ("USE", ItemKind.SCALE, HELP_LABELS, ItemGroup.WOULD_USE, UnitKind.ANSWER, False),
        *[
            (c, ItemKind.YES_NO, [], ItemGroup.PRESENTATION, UnitKind.ANSWER, False)
            for c in CRITERIA
        ],
        ("PREF", ItemKind.PAIR, [], ItemGroup.PREFERENCE, UnitKind.PAIR, False),
        ("AC2", ItemKind.PAIR, [], "", UnitKind.PAIR, True),
    ]
    items = {}
    for order, (code, kind, labels, group, unit_kind, check) in enumerate(specs):
        items[code] = SurveyItem.objects.create(
            study=study,
            code=code,
            wording=f"Wording of {code}",
            kind=kind,
            scale_labels=labels,
            group=group,
            unit_kind=unit_kind,
            order=order,
            attention_check=check,
            expected_value="a" if check else "",
        )
    return items


def _assign(participant, unit, position, values: dict, items, now) -> None:
    status = (
        AssignmentStatus.PROXY
        if participant.kind == ParticipantKind.PROXY
        else AssignmentStatus.COMPLETED
    )
    assignment = Assignment.objects.create(
        participant=participant,
        study_scenario=unit,
        position=position,
        status=status,
        reserved_at=now,
        reserved_until=now + dt.timedelta(hours=1),
        answered_at=now,
        completed_at=now,
    )
    Answer.objects.bulk_create(
        Answer(
            assignment=assignment, item=items[code], value=value, first_saved_at=now, saved_at=now
        )
        for code, value in values.items()
    )


def hand_study_make(*, seed: int = 7) -> Hand:
    """4 models x 4 questions = 16 answers, each with a rubric of one factual and three shared
    presentation criteria graded by the auto-rater; 6 pairs (every two models once); 5 people
    rating every answer (HELP, USE, C1-C3) and judging every pair; one proxy model as asked (2
    runs) and a sweep variant of it ("temperature 1.0", 2 runs), each rating HELP and judging
    the pairs. One more person, rejected in review, rates everything at the extremes."""
    rng = np.random.default_rng(seed)
    now = timezone.now()
    models = {
        name: ModelConfigFactory(display_name=name, family=name, litellm_model=f"openai/{name}")
        for name in MODELS
    }
    shared_set = SharedCriterionSet.objects.create(
        version=(SharedCriterionSet.objects.order_by("-version").first().version + 100)
        if SharedCriterionSet.objects.exists()
        else 100
    )
    shared = {
        code: SharedCriterion.objects.create(
            criterion_set=shared_set,
            text=f"Shared presentation criterion {code}",
            polarity=Polarity.POSITIVE if code != "C3" else Polarity.NEGATIVE,
            points=1,
            order=k,
        )
        for k, code in enumerate(CRITERIA)
    }
    sampling = SamplingRun.objects.create(
        name="Hand: sampling",
        status=RunStatus.FINISHED,
        prompt=PromptTemplate.objects.filter(purpose=Purpose.SAMPLE).order_by("-version").first(),
    )
    grader = ModelConfigFactory(display_name="Grader", litellm_model="openai/grader")
    grading = GradingRun.objects.create(
        name="Hand: grading",
        sampling_run=sampling,
        grader=grader,
        mode=GradingMode.CHECKLIST,
        prompt=PromptTemplate.objects.filter(purpose=Purpose.GRADE_CHECKLIST)
        .order_by("-version")
        .first(),
        status=RunStatus.FINISHED,
        params={"temperature": 0},
    )
    study = Study.objects.create(name="Hand answer study", kind=StudyKind.ANSWERS)
    items = _items(study)
    for code in CRITERIA:
        CriterionItem.objects.create(item=items[code], criterion=shared[code], prefilled="x")
    AnswerDraw.objects.create(
        study=study,
        sampling_run=sampling,
        grading_run=grading,
        seed=seed,
        answers_per_stratum=1,
        pairs_per_model_pair=1,
    )
    hand = Hand(study=study, grading=grading, models=models)

    responses = {}
    for q in range(QUESTIONS):
        question = question_make(topic=("accounts", "scams")[q % 2], external_id=f"hand-q{q}")
        rubric = Rubric.objects.create(
            question=question,
            version=1,
            state=RubricState.APPROVED,
            shared_set=shared_set,
            updated_at=now,
            approved_at=now,
            verified_at=now,
        )
        factual = Criterion.objects.create(
            rubric=rubric,
            text=f"Factual of q{q}",
            polarity=Polarity.POSITIVE,
            kind=Kind.FACTUAL,
            points=1,
            order=0,
        )
        criteria = {
            code: Criterion.objects.create(
                rubric=rubric,
                text=shared[code].text,
                polarity=shared[code].polarity,
                kind=Kind.PRESENTATION,
                points=1,
                order=k + 1,
                origin=Origin.SHARED,
                shared_source=shared[code],
            )
            for k, code in enumerate(CRITERIA)
        }
        for name, model in models.items():
            response = Response.objects.create(
                run=sampling,
                model=model,
                question=question,
                status=ResponseStatus.DONE,
                text=f"Answer of {name} to q{q}.",
                completed_at=now,
            )
            responses[(name, q)] = response
            verdicts = {"factual": bool(rng.integers(0, 2))}
            verdicts |= {code: bool(rng.integers(0, 2)) for code in CRITERIA}
            Judgment.objects.create(
                grading_run=grading,
                response=response,
                criterion=factual,
                rubric=rubric,
                status=CallState.DONE,
                met=verdicts["factual"],
            )
            for code, criterion in criteria.items():
                Judgment.objects.create(
                    grading_run=grading,
                    response=response,
                    criterion=criterion,
                    rubric=rubric,
                    status=CallState.DONE,
                    met=verdicts[code],
                )
            earned = int(rng.integers(0, 5))
            score = earned / 4
            ResponseScore.objects.create(
                grading_run=grading,
                response=response,
                rubric=rubric,
                earned_points=earned,
                max_points=4,
                score=score,
            )
            hand.scores.setdefault(name, []).append(score)
            hand.answers.append(
                {"model": name, "question": q, "response": response, "score": score}
                | {"met": {code: verdicts[code] for code in CRITERIA}}
            )
    # One more answer graded in the run, not drawn: the whole run's mean counts it.
    extra_question = question_make(topic="accounts", external_id="hand-extra")
    extra_rubric = Rubric.objects.create(
        question=extra_question,
        version=1,
        state=RubricState.APPROVED,
        shared_set=shared_set,
        updated_at=now,
        approved_at=now,
        verified_at=now,
    )
    extra = Response.objects.create(
        run=sampling,
        model=models["Alpha"],
        question=extra_question,
        status=ResponseStatus.DONE,
        text="Not drawn.",
        completed_at=now,
    )
    ResponseScore.objects.create(
        grading_run=grading,
        response=extra,
        rubric=extra_rubric,
        earned_points=4,
        max_points=4,
        score=1.0,
    )
    hand.scores["Alpha"].append(1.0)

    units = []
    for k, answer in enumerate(hand.answers):
        unit = StudyScenario.objects.create(
            study=study,
            kind=UnitKind.ANSWER,
            label=f"Answer {k + 1:03d}",
            question_text=f"Question {answer['question']}",
            answer_text=answer["response"].text,
        )
        StudyAnswer.objects.create(
            unit=unit, response=answer["response"], band="below", score=answer["score"]
        )
        answer["unit"] = unit
        units.append(unit)
    model_pairs = [(a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1 :]]
    for k, (a, b) in enumerate(model_pairs):
        q = k % QUESTIONS
        unit = StudyScenario.objects.create(
            study=study,
            kind=UnitKind.PAIR,
            label=f"Pair {k + 1:03d}",
            question_text=f"Question {q}",
            answer_text=responses[(a, q)].text,
            answer_b_text=responses[(b, q)].text,
        )
        StudyPair.objects.create(
            unit=unit, response_a=responses[(a, q)], response_b=responses[(b, q)]
        )
        hand.pairs.append({"unit": unit, "model_a": a, "model_b": b})

    # The units' indices, as the report orders them (the study's unit order).
    index = {u.pk: i for i, u in enumerate(StudyScenario.objects.filter(study=study))}
    for answer in hand.answers:
        answer["index"] = index[answer["unit"].pk]
        for code in CRITERIA:
            hand.met[(answer["index"], code)] = answer["met"][code]
    for pair in hand.pairs:
        pair["index"] = index[pair["unit"].pk]

    def person(number: int) -> Participant:
        return Participant.objects.create(
            study=study,
            prolific_pid=f"{number:024x}",
            kind=ParticipantKind.HUMAN,
            status=ParticipantStatus.FINISHED,
            age="25-34",
            gender="woman",
        )

    # Each answer has a level people scatter around, so that agreement is neither 0 nor 1.
    level = rng.integers(1, 6, size=len(hand.answers))
    strength = {"Alpha": 1.2, "Beta": 0.4, "Gamma": -0.3, "Delta": -1.0}
    for number in range(5):
        participant = person(number + 1)
        key = f"person{number}"
        position = 0
        for k, answer in enumerate(hand.answers):
            value = int(np.clip(level[k] + rng.integers(-1, 2), 1, 5))
            said = {code: int(rng.integers(0, 2)) for code in CRITERIA}
            hand.help[(key, answer["index"])] = value
            for code in CRITERIA:
                hand.said[(key, answer["index"], code)] = said[code]
            position += 1
            _assign(
                participant,
                answer["unit"],
                position,
                {"HELP": str(value), "USE": str(int(rng.integers(1, 6)))}
                | {code: "yes" if said[code] else "no" for code in CRITERIA},
                items,
                now,
            )
        for pair in hand.pairs:
            outcome = _judge(rng, strength[pair["model_a"]] - strength[pair["model_b"]])
            hand.judged.append((key, pair["index"], outcome))
            position += 1
            _assign(participant, pair["unit"], position, {"PREF": outcome, "AC2": "a"}, items, now)

    rejected = person(99)
    position = 0
    for answer in hand.answers:
        position += 1
        _assign(
            rejected,
            answer["unit"],
            position,
            {"HELP": "5", "USE": "5"} | dict.fromkeys(CRITERIA, "yes"),
            items,
            now,
        )
    for pair in hand.pairs:
        position += 1
        _assign(rejected, pair["unit"], position, {"PREF": "b", "AC2": "a"}, items, now)
    Participant.objects.filter(pk=rejected.pk).update(review_status="rejected")

    proxy_model = ModelConfigFactory(display_name="Proxy", litellm_model="openai/proxy")
    hand.models["proxy"] = proxy_model
    # A sweep's variants are runs of the same model: their run indices follow the plain ones.
    for offset, (variant, noise) in enumerate((("", 1), ("temperature 1.0", 2))):
        group = f"model:{proxy_model.pk}" + (f"/{variant}" if variant else "")
        hand.proxy_help[group] = {}
        for run in range(2):
            participant = Participant.objects.create(
                study=study,
                kind=ParticipantKind.PROXY,
                model=proxy_model,
                run_index=2 * offset + run,
                variant=variant,
                status=ParticipantStatus.FINISHED,
            )
            position = 0
            for k, answer in enumerate(hand.answers):
                value = int(np.clip(level[k] + rng.integers(-noise, noise + 1), 1, 5))
                hand.proxy_help[group][(run, answer["index"])] = value
                position += 1
                _assign(participant, answer["unit"], position, {"HELP": str(value)}, items, now)
            for pair in hand.pairs:
                outcome = _judge(rng, strength[pair["model_a"]] - strength[pair["model_b"]])
                hand.judged.append((group, pair["index"], outcome))
                position += 1
                _assign(participant, pair["unit"], position, {"PREF": outcome}, items, now)
    return hand


def _judge(rng, gap: float) -> str:
    """An outcome drawn by the Bradley-Terry chance of A's win, with one in five a tie."""
    if rng.random() < 0.2:
        return "equal"
    return "a" if rng.random() < 1 / (1 + np.exp(-gap)) else "b"
