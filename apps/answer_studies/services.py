"""Making an answer study: a draft surveys `Study` whose units are a seeded, stratified draw
of a sampling run's answers (and pairs of two models' answers to one question), with items
prefilled for them. How the draw works, and why: docs/answer-studies.md."""

import random
from dataclasses import dataclass
from itertools import combinations

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.grading.models import GradingRun
from apps.llm.selectors import prompt_render
from apps.questions.models import Question
from apps.runs.models import Response, SamplingRun
from apps.surveys.models import (
    ItemGroup,
    ItemKind,
    Study,
    StudyKind,
    StudyScenario,
    SurveyItem,
    UnitKind,
)
from apps.surveys.services.studies import STUDY_FIELDS

from . import selectors, texts
from .errors import AnswerStudyError
from .models import AnswerDraw, CriterionItem, StudyAnswer, StudyPair

MAX_PER_STRATUM = 1000
# The fields of a study the caller may set besides those the draw sets (its texts, codes,
# Prolific id, reservation timeout); missing texts and codes are the defaults (texts.py).
TEXT_FIELDS = frozenset(STUDY_FIELDS) - {
    "name",
    "scenarios_per_participant",
    "ratings_per_scenario",
}


@dataclass(frozen=True)
class DrawnAnswer:
    response: Response
    band: str
    score: float


@dataclass(frozen=True)
class DrawnPair:
    a: Response
    b: Response


def answers_draw(
    *, grading_run: GradingRun, seed: int, answers_per_stratum: int
) -> tuple[list[DrawnAnswer], list[dict]]:
    """The answers drawn and each stratum's record (model, topic, band, available, drawn).

    Each stratum is drawn on its own: `random.Random(f"{seed}/{model pk}/{topic pk}/{band}")`
    samples min(n, available) of its answers, taken in ascending pk. A string seeds Python's
    generator through SHA-512, the same on every machine and run, so the same rows and
    settings draw the same answers, and a stratum's draw does not move when another's answers
    change."""
    by_stratum: dict[tuple[int, int, str], list[DrawnAnswer]] = {}
    for score in selectors.scores_drawable(grading_run=grading_run):
        band = selectors.band_of(score.score)
        key = (score.response.model_id, score.response.question.topic_id, band.key)
        by_stratum.setdefault(key, []).append(DrawnAnswer(score.response, band.key, score.score))
    drawn, record = [], []
    for stratum in selectors.strata_available(grading_run=grading_run):
        candidates = by_stratum.get(stratum.key, [])
        rng = random.Random(f"{seed}/{stratum.model_id}/{stratum.topic_id}/{stratum.band}")
        taken = rng.sample(candidates, min(answers_per_stratum, len(candidates)))
        drawn.extend(taken)
        record.append(
            {
                "model_id": stratum.model_id,
                "model": stratum.model,
                "topic_id": stratum.topic_id,
                "topic": stratum.topic,
                "band": stratum.band,
                "available": len(candidates),
                "drawn": len(taken),
            }
        )
    return drawn, record


def pairs_draw(
    *, sampling_run: SamplingRun, seed: int, pairs_per_model_pair: int
) -> list[DrawnPair]:
    """`pairs_per_model_pair` pairs for every two of the run's models: distinct questions
    that both answered, one answer of each, drawn by `random.Random(f"{seed}/pairs/{pk}/{pk}")`
    (questions and answers in ascending pk). Each model is answer A in half of its pairs with
    the other (the odd one out by the same generator), in a shuffled order. Refused, naming
    the two models, when they share fewer questions than asked: every two models meet equally
    often, or the rankings the pairs feed would lean on some pairs more than others."""
    if pairs_per_model_pair == 0:
        return []
    models = list(sampling_run.model_configs.order_by("pk"))
    if len(models) < 2:
        raise AnswerStudyError("Pairs need two models or more; this run has one.")
    answers: dict[tuple[int, int], list[Response]] = {}
    for response in (
        selectors.answers_shown(sampling_run=sampling_run).select_related("question").order_by("pk")
    ):
        answers.setdefault((response.model_id, response.question_id), []).append(response)
    pairs = []
    for first, second in combinations(models, 2):
        shared = sorted(q for (m, q) in answers if m == first.pk and (second.pk, q) in answers)
        if len(shared) < pairs_per_model_pair:
            raise AnswerStudyError(
                f"{first.display_name} and {second.display_name} both answered "
                f"{len(shared)} question(s) of this run, fewer than the {pairs_per_model_pair} "
                "pairs asked for each two models. Ask for fewer pairs."
            )
        rng = random.Random(f"{seed}/pairs/{first.pk}/{second.pk}")
        questions = rng.sample(shared, pairs_per_model_pair)
        half = pairs_per_model_pair // 2
        first_is_a = [True] * half + [False] * half
        if pairs_per_model_pair % 2:
            first_is_a.append(rng.random() < 0.5)
        rng.shuffle(first_is_a)
        for question_id, a_first in zip(questions, first_is_a, strict=True):
            one = rng.choice(answers[(first.pk, question_id)])
            other = rng.choice(answers[(second.pk, question_id)])
            pairs.append(DrawnPair(one, other) if a_first else DrawnPair(other, one))
    return pairs


def labelled(things: list, *, seed: int, what: str) -> list[tuple[str, object]]:
    """(label, thing) in a shuffled order, "Answer 001" first: the number says nothing of the
    model or the stratum. Shuffled by `random.Random(f"{seed}/{what}-labels")`."""
    order = list(things)
    random.Random(f"{seed}/{what}-labels").shuffle(order)
    width = max(3, len(str(len(order))))
    return [(f"{what.capitalize()} {n:0{width}d}", thing) for n, thing in enumerate(order, 1)]


def question_as_asked(*, sampling_run: SamplingRun, question: Question) -> str:
    """The question as the run's pinned prompt put it to the model: the user message that
    runs.services.sampling sent (the question in the prompt version's words, if it adds any)."""
    messages = prompt_render(template=sampling_run.prompt, variables={"question": question.text})
    return [m["content"] for m in messages if m["role"] == "user"][-1]


def _items(*, study: Study, shared_set, answers: bool, pairs: bool) -> None:
    """The study's items for the units it has, each editable on the study's items page: for
    answers, helpfulness, would-use, one yes / no per shared presentation criterion (with its
    CriterionItem) and an attention check; for pairs, the preference and an attention check."""
    answer_items = [
        SurveyItem(
            code="HELP",
            wording=texts.HELPFULNESS,
            kind=ItemKind.SCALE,
            scale_labels=texts.HELPFULNESS_LABELS,
            group=ItemGroup.HELPFULNESS,
            order=1,
        ),
        SurveyItem(
            code="USE",
            wording=texts.WOULD_USE,
            kind=ItemKind.SCALE,
            scale_labels=texts.WOULD_USE_LABELS,
            group=ItemGroup.WOULD_USE,
            order=2,
        ),
        SurveyItem(
            code="AC1",
            wording=texts.ANSWER_CHECK,
            kind=ItemKind.SCALE,
            scale_labels=texts.HELPFULNESS_LABELS,
            explanation_required=False,
            attention_check=True,
            expected_value=texts.ANSWER_CHECK_VALUE,
            on_page=2,
            order=90,
        ),
    ]
    criteria = list(shared_set.criteria.order_by("order", "pk")) if shared_set else []
    prefilled = [texts.criterion_question(c.text) for c in criteria]
    criterion_items = [
        SurveyItem(
            code=f"C{n}",
            wording=wording,
            kind=ItemKind.YES_NO,
            group=ItemGroup.PRESENTATION,
            explanation_required=False,
            order=10 + n,
        )
        for n, wording in enumerate(prefilled, 1)
    ]
    pair_items = [
        SurveyItem(
            code="PREF",
            wording=texts.PREFERENCE,
            kind=ItemKind.PAIR,
            group=ItemGroup.PREFERENCE,
            order=50,
        ),
        SurveyItem(
            code="AC2",
            wording=texts.PAIR_CHECK,
            kind=ItemKind.PAIR,
            explanation_required=False,
            attention_check=True,
            expected_value=texts.PAIR_CHECK_VALUE,
            on_page=3,
            order=91,
        ),
    ]
    items = []
    if answers:
        items += [*answer_items, *criterion_items]
        for item in answer_items + criterion_items:
            item.unit_kind = UnitKind.ANSWER
    if pairs:
        items += pair_items
        for item in pair_items:
            item.unit_kind = UnitKind.PAIR
    for item in items:
        item.study = study
        item.full_clean()
    SurveyItem.objects.bulk_create(items)
    if answers:
        CriterionItem.objects.bulk_create(
            CriterionItem(item=item, criterion=criterion, prefilled=wording)
            for item, criterion, wording in zip(criterion_items, criteria, prefilled, strict=True)
        )


def _settings_check(
    *,
    name: str,
    sampling_run: SamplingRun,
    grading_run: GradingRun,
    answers_per_stratum: int,
    pairs_per_model_pair: int,
    ratings_per_unit: int,
    units_per_participant: int,
) -> None:
    if not name.strip():
        raise AnswerStudyError("Give the study a name.")
    if grading_run.sampling_run_id != sampling_run.pk:
        raise AnswerStudyError(
            f"The grading run “{grading_run.name}” grades the answers of another sampling run "
            f"(“{grading_run.sampling_run.name}”), not those of “{sampling_run.name}”."
        )
    for value, what in (
        (answers_per_stratum, "Answers per stratum"),
        (pairs_per_model_pair, "Pairs per two models"),
    ):
        if not 0 <= value <= MAX_PER_STRATUM:
            raise AnswerStudyError(f"{what} must be between 0 and {MAX_PER_STRATUM}.")
    if answers_per_stratum == 0 and pairs_per_model_pair == 0:
        raise AnswerStudyError(
            "Draw at least one answer per stratum or one pair per two models: with neither, "
            "the study has nothing to rate."
        )
    if ratings_per_unit < 1:
        raise AnswerStudyError("Each unit needs at least one rating (k of 1 or more).")
    if units_per_participant < 1:
        raise AnswerStudyError("Each participant must rate at least one unit.")
    if not selectors.scores_drawable(grading_run=grading_run).exists():
        raise AnswerStudyError(
            f"The grading run “{grading_run.name}” has scored none of the run's finished "
            "answers yet: there is nothing to draw. Grade the answers first."
        )


@transaction.atomic
def answer_study_create(
    *,
    name: str,
    sampling_run: SamplingRun,
    grading_run: GradingRun,
    seed: int,
    answers_per_stratum: int,
    pairs_per_model_pair: int = 0,
    ratings_per_unit: int = 5,
    units_per_participant: int = 5,
    user=None,
    **study_texts,
) -> Study:
    """A draft answer study: its units drawn from `sampling_run`'s answers as scored by
    `grading_run` (answers_draw, pairs_draw), each holding a copy of the question as the model
    was asked it and of the answer(s); its items prefilled (_items); the draw recorded in an
    `AnswerDraw`. `study_texts`: the study's texts, codes, Prolific id or reservation timeout
    (surveys' study fields); texts and codes not given are the defaults. All or nothing."""
    unknown = set(study_texts) - TEXT_FIELDS
    if unknown:
        raise TypeError(f"unknown study fields: {sorted(unknown)}")
    _settings_check(
        name=name,
        sampling_run=sampling_run,
        grading_run=grading_run,
        answers_per_stratum=answers_per_stratum,
        pairs_per_model_pair=pairs_per_model_pair,
        ratings_per_unit=ratings_per_unit,
        units_per_participant=units_per_participant,
    )
    answers, strata = answers_draw(
        grading_run=grading_run, seed=seed, answers_per_stratum=answers_per_stratum
    )
    pairs = pairs_draw(
        sampling_run=sampling_run, seed=seed, pairs_per_model_pair=pairs_per_model_pair
    )
    units = len(answers) + len(pairs)
    if units_per_participant > units:
        raise AnswerStudyError(
            f"Each participant would rate {units_per_participant} units, but the draw has "
            f"{units}: ask each participant for fewer, or draw more."
        )
    fields = {**texts.DEFAULT_TEXTS, **texts.completion_codes(), **study_texts}
    study = Study(
        name=name.strip(),
        kind=StudyKind.ANSWERS,
        scenarios_per_participant=units_per_participant,
        ratings_per_scenario=ratings_per_unit,
        created_by=user,
        **fields,
    )
    try:
        study.full_clean()
    except ValidationError as exc:
        raise AnswerStudyError(" ".join(exc.messages)) from None
    asked: dict[int, str] = {}

    def question_text(response: Response) -> str:
        if response.question_id not in asked:
            asked[response.question_id] = question_as_asked(
                sampling_run=sampling_run, question=response.question
            )
        return asked[response.question_id]

    study.save()
    answer_units = [
        (
            StudyScenario(
                study=study,
                kind=UnitKind.ANSWER,
                label=label,
                question_text=question_text(drawn.response),
                answer_text=drawn.response.text,
            ),
            drawn,
        )
        for label, drawn in labelled(answers, seed=seed, what="answer")
    ]
    pair_units = [
        (
            StudyScenario(
                study=study,
                kind=UnitKind.PAIR,
                label=label,
                question_text=question_text(pair.a),
                answer_text=pair.a.text,
                answer_b_text=pair.b.text,
            ),
            pair,
        )
        for label, pair in labelled(pairs, seed=seed, what="pair")
    ]
    # Created in label order, so that not even the units' ids follow the strata.
    StudyScenario.objects.bulk_create([unit for unit, _ in answer_units + pair_units])
    StudyAnswer.objects.bulk_create(
        StudyAnswer(unit=unit, response=d.response, band=d.band, score=d.score)
        for unit, d in answer_units
    )
    StudyPair.objects.bulk_create(
        StudyPair(unit=unit, response_a=p.a, response_b=p.b) for unit, p in pair_units
    )
    _items(
        study=study,
        shared_set=selectors.shared_set_graded(grading_run=grading_run),
        answers=bool(answers),
        pairs=bool(pairs),
    )
    AnswerDraw.objects.create(
        study=study,
        sampling_run=sampling_run,
        grading_run=grading_run,
        seed=seed,
        answers_per_stratum=answers_per_stratum,
        pairs_per_model_pair=pairs_per_model_pair,
        strata=strata,
        created_by=user,
    )
    return study
