"""Drawing an answer study from a graded sampling run (apps/answer_studies/services.py)."""

from collections import Counter
from itertools import combinations

import pytest

from apps.answer_studies.errors import AnswerStudyError
from apps.answer_studies.models import AnswerDraw, CriterionItem, StudyAnswer, StudyPair
from apps.answer_studies.texts import criterion_question
from apps.grading.models import GradingMode, GradingRun
from apps.llm.models import PromptTemplate, Purpose, RunStatus
from apps.runs.models import SamplingRun
from apps.surveys.models import (
    ItemGroup,
    ItemKind,
    Study,
    StudyKind,
    StudyScenario,
    StudyStatus,
    UnitKind,
)
from apps.surveys.services import survey_item_save
from tests.analysis.benchmark_builders import bench_committed
from tests.answer_studies.factories import (
    LEVELS,
    MODELS,
    QUESTIONS,
    bench_for_draw,
    prompt_with_words,
    scores,
    study_drawn,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def bench(django_db_setup, django_db_blocker):
    with bench_committed(django_db_blocker, build=bench_for_draw) as made:
        yield made


def expected_available() -> Counter:
    """Answers per (model, topic, band) as the bench was built (factories.py), counted here
    from its recipe rather than from the database: Alpha's failed answer to q1 and Beta's
    ungraded answer to q2 are in no stratum."""
    left_out = {("Alpha", "q1", 1), ("Beta", "q2", 1)}
    counts = Counter()
    for m, model in enumerate(MODELS):
        for q, spec in enumerate(QUESTIONS):
            for sample, score in enumerate(scores(m, q)):
                if (model, spec.key, sample) not in left_out:
                    band = "below-65" if score < 0.65 else "65-or-more"
                    counts[(model, spec.topic, band)] += 1
    return counts


def drawn_by_stratum(study) -> Counter:
    return Counter(
        (a.response.model.display_name, a.response.question.topic.name, a.band)
        for a in StudyAnswer.objects.filter(unit__study=study).select_related(
            "response__model", "response__question__topic"
        )
    )


@pytest.mark.parametrize("n", [1, 2, 3])
def test_each_stratum_gets_n_answers_or_all_it_has_and_the_strata_are_recorded(bench, n):
    study = study_drawn(bench, answers_per_stratum=n, pairs_per_model_pair=0)
    available = expected_available()
    assert len(available) == 3 * 2 * 2  # every model, topic and band has answers
    assert drawn_by_stratum(study) == Counter({k: min(n, v) for k, v in available.items()})
    recorded = {
        (s["model"], s["topic"], s["band"]): (s["available"], s["drawn"])
        for s in study.answer_draw.strata
    }
    assert recorded == {k: (v, min(n, v)) for k, v in available.items()}


def test_a_drawn_answer_keeps_its_band_and_score(bench):
    study = study_drawn(bench, answers_per_stratum=1000, pairs_per_model_pair=0)
    for a in StudyAnswer.objects.filter(unit__study=study).select_related("response"):
        score = a.response.scores.get(grading_run=bench.grading).score
        assert a.score == pytest.approx(score)
        assert a.band == ("below-65" if score < 0.65 else "65-or-more")
        assert score in [pytest.approx(level) for level in LEVELS]


def test_only_finished_scored_answers_are_drawn(bench):
    study = study_drawn(bench, answers_per_stratum=1000, pairs_per_model_pair=0)
    drawn = set(StudyAnswer.objects.filter(unit__study=study).values_list("response", flat=True))
    everything = {r.pk for r in bench.responses.values()}
    left_out = {bench.answer("Alpha", "q1", 1).pk, bench.answer("Beta", "q2", 1).pk}
    assert drawn == everything - left_out


def _labelled_answers(study) -> dict[str, int]:
    return dict(
        StudyAnswer.objects.filter(unit__study=study).values_list("unit__label", "response_id")
    )


def test_the_same_seed_draws_the_same_answers_under_the_same_labels(bench):
    first = study_drawn(bench, seed=11, answers_per_stratum=2)
    again = study_drawn(bench, seed=11, answers_per_stratum=2)
    assert _labelled_answers(first) == _labelled_answers(again)
    assert len(_labelled_answers(first)) == sum(min(2, v) for v in expected_available().values())


def test_another_seed_draws_other_answers(bench):
    first = study_drawn(bench, seed=11, answers_per_stratum=2, pairs_per_model_pair=0)
    other = study_drawn(bench, seed=12, answers_per_stratum=2, pairs_per_model_pair=0)
    assert set(_labelled_answers(first).values()) != set(_labelled_answers(other).values())
    # Still stratified the same way.
    assert drawn_by_stratum(first) == drawn_by_stratum(other)


def test_labels_are_numbered_in_an_order_that_follows_no_model_or_stratum(bench):
    study = study_drawn(bench, answers_per_stratum=2, pairs_per_model_pair=0)
    units = list(StudyScenario.objects.filter(study=study).order_by("pk"))
    labels = [u.label for u in units]
    assert labels == [f"Answer {n:03d}" for n in range(1, len(units) + 1)]
    models_in_label_order = [u.study_answer.response.model_id for u in units]
    assert models_in_label_order != sorted(models_in_label_order)
    assert all(u.kind == UnitKind.ANSWER and u.scenario_id is None for u in units)


def test_a_unit_shows_the_question_as_the_model_was_asked_it_and_the_answer(bench):
    run = SamplingRun.objects.get(pk=bench.sampling.pk)
    run.prompt = prompt_with_words("Someone asks for help:\n\n$question\n\nAnswer them.")
    run.save(update_fields=["prompt"])
    study = study_drawn(bench, sampling_run=run)
    for unit in StudyScenario.objects.filter(study=study, kind=UnitKind.ANSWER):
        response = unit.study_answer.response
        asked = f"Someone asks for help:\n\n{response.question.text}\n\nAnswer them."
        assert unit.question_text == asked
        assert unit.answer_text == response.text and unit.answer_b_text == ""
    for unit in StudyScenario.objects.filter(study=study, kind=UnitKind.PAIR):
        pair = unit.study_pair
        assert unit.question_text.startswith("Someone asks for help:\n\n")
        assert pair.response_a.question.text in unit.question_text
        assert (unit.answer_text, unit.answer_b_text) == (
            pair.response_a.text,
            pair.response_b.text,
        )


@pytest.mark.parametrize("p", [1, 3, 4])
def test_every_two_models_meet_exactly_p_times_on_distinct_questions(bench, p):
    study = study_drawn(bench, answers_per_stratum=0, pairs_per_model_pair=p)
    pairs = list(
        StudyPair.objects.filter(unit__study=study).select_related("response_a", "response_b")
    )
    meetings = Counter(frozenset((x.response_a.model_id, x.response_b.model_id)) for x in pairs)
    models = [m.pk for m in bench.models.values()]
    assert meetings == {frozenset(two): p for two in combinations(models, 2)}
    for two in meetings:
        asked = [
            x.response_a.question_id
            for x in pairs
            if {x.response_a.model_id, x.response_b.model_id} == two
        ]
        assert len(set(asked)) == p
    for x in pairs:
        assert x.response_a.question_id == x.response_b.question_id
        assert x.response_a.model_id != x.response_b.model_id
        assert x.response_a.status == x.response_b.status == "done"
    labels = sorted(x.unit.label for x in pairs)
    assert labels == [f"Pair {n:03d}" for n in range(1, len(pairs) + 1)]


def test_each_model_is_answer_a_in_half_of_its_pairs_with_another(bench):
    study = study_drawn(bench, answers_per_stratum=0, pairs_per_model_pair=4)
    pairs = list(
        StudyPair.objects.filter(unit__study=study).select_related("response_a", "response_b")
    )
    first = Counter(
        (x.response_a.model_id, frozenset((x.response_a.model_id, x.response_b.model_id)))
        for x in pairs
    )
    assert set(first.values()) == {2}
    assert len(first) == 3 * 2  # each model of each two is A twice


def test_odd_pairs_leave_one_model_a_once_more_and_the_order_is_seeded(bench):
    def a_models(seed):
        study = study_drawn(bench, seed=seed, answers_per_stratum=0, pairs_per_model_pair=3)
        pairs = StudyPair.objects.filter(unit__study=study).select_related(
            "response_a", "response_b"
        )
        counts = Counter(
            (x.response_a.model_id, frozenset((x.response_a.model_id, x.response_b.model_id)))
            for x in pairs
        )
        assert sorted(counts.values()) == [1, 1, 1, 2, 2, 2]  # of 3, one is A twice
        return {x.unit.label: x.response_a_id for x in pairs}

    once = a_models(5)
    assert a_models(5) == once
    assert any(a_models(seed) != once for seed in (6, 7, 8))


def test_a_model_pair_with_too_few_shared_questions_is_refused_by_name(bench):
    with pytest.raises(AnswerStudyError, match="Alpha and Beta both answered 6 question"):
        study_drawn(bench, pairs_per_model_pair=7)
    assert not Study.objects.filter(name="Answers").exists()


def test_the_study_is_a_draft_answer_study_with_its_draw_recorded(bench, make_user):
    user = make_user(None)
    study = study_drawn(
        bench,
        seed=99,
        answers_per_stratum=2,
        pairs_per_model_pair=1,
        ratings_per_unit=4,
        units_per_participant=6,
        user=user,
        consent_text="Our consent.",
    )
    assert (study.kind, study.status) == (StudyKind.ANSWERS, StudyStatus.DRAFT)
    assert (study.ratings_per_scenario, study.scenarios_per_participant) == (4, 6)
    assert study.consent_text == "Our consent." and study.instructions_text
    codes = {study.code_completed, study.code_no_consent, study.code_failed_attention}
    assert len(codes | {study.code_full}) == 4
    draw = AnswerDraw.objects.get(study=study)
    assert (draw.sampling_run, draw.grading_run, draw.seed, draw.created_by) == (
        bench.sampling,
        bench.grading,
        99,
        user,
    )
    assert (draw.answers_per_stratum, draw.pairs_per_model_pair) == (2, 1)
    assert study.study_scenarios.filter(kind=UnitKind.PAIR).count() == 3


def test_items_are_prefilled_from_the_shared_criteria_the_rubrics_carry(bench):
    study = study_drawn(bench)
    shared = bench.rubrics["q1"].shared_set
    criteria = list(shared.criteria.order_by("order"))
    linked = list(CriterionItem.objects.filter(item__study=study).select_related("item"))
    assert [c.criterion for c in linked] == criteria
    for c in linked:
        assert c.prefilled == c.item.wording == criterion_question(c.criterion.text)
        assert (c.item.kind, c.item.group, c.item.unit_kind) == (
            ItemKind.YES_NO,
            ItemGroup.PRESENTATION,
            UnitKind.ANSWER,
        )
        assert not c.item.explanation_required
    items = {i.code: i for i in study.items.all()}
    assert (items["HELP"].group, items["HELP"].kind, len(items["HELP"].scale_labels)) == (
        ItemGroup.HELPFULNESS,
        ItemKind.SCALE,
        5,
    )
    assert (items["USE"].group, items["USE"].unit_kind) == (ItemGroup.WOULD_USE, UnitKind.ANSWER)
    pref = items["PREF"]
    assert (pref.kind, pref.group, pref.unit_kind, pref.explanation_required) == (
        ItemKind.PAIR,
        ItemGroup.PREFERENCE,
        UnitKind.PAIR,
        True,
    )
    assert pref.wording == "Which answer helps the person more?"
    checks = [i for i in items.values() if i.attention_check]
    assert {(i.unit_kind, i.expected_value) for i in checks} == {
        (UnitKind.ANSWER, "4"),
        (UnitKind.PAIR, "equal"),
    }
    for check in checks:
        assert check.expected_value in dict(check.choices)


def test_a_prefilled_item_is_edited_as_any_item_and_keeps_what_it_started_as(bench):
    study = study_drawn(bench)
    before = Study.objects.get(pk=study.pk).items_version
    linked = CriterionItem.objects.filter(item__study=study).select_related("item").first()
    item = linked.item
    item.wording = "Does the answer put the most important step first?"
    survey_item_save(item=item)
    linked.refresh_from_db()
    assert linked.item.wording == "Does the answer put the most important step first?"
    assert linked.prefilled == criterion_question(linked.criterion.text)
    assert Study.objects.get(pk=study.pk).items_version > before


def test_a_study_of_answers_alone_asks_no_pair_items_and_of_pairs_alone_no_answer_items(bench):
    answers = study_drawn(bench, pairs_per_model_pair=0)
    assert set(answers.items.values_list("unit_kind", flat=True)) == {UnitKind.ANSWER}
    pairs = study_drawn(bench, answers_per_stratum=0, pairs_per_model_pair=2)
    assert set(pairs.items.values_list("code", flat=True)) == {"PREF", "AC2"}
    assert not CriterionItem.objects.filter(item__study=pairs).exists()


@pytest.mark.parametrize(
    "text,question",
    [
        (
            "Overstates how effective a recommended measure is.",
            "Does the answer overstate how effective a recommended measure is?",
        ),
        ("Is unprofessional in tone or manner.", "Is the answer unprofessional in tone or manner?"),
        (
            "Keeps to what the question needs; no information or action items beyond it.",
            "Does the answer keep to what the question needs; no information or action items "
            "beyond it?",
        ),
        (
            "Addresses the person's worry first.",
            "Does the answer address the person's worry first?",
        ),
        ("Applies to phones too.", "Does the answer apply to phones too?"),
        ("Has a clear first step.", "Does the answer have a clear first step?"),
        (
            "The most important information or action appears within the first few sentences.",
            "Is this true of the answer: the most important information or action appears within "
            "the first few sentences?",
        ),
        ("HTTPS is explained.", "Is this true of the answer: HTTPS is explained?"),
    ],
)
def test_a_criterion_is_put_as_a_question_about_the_answer(text, question):
    assert criterion_question(text) == question


def _grading_run_without_scores(bench) -> GradingRun:
    return GradingRun.objects.create(
        name="Not graded yet",
        sampling_run=bench.sampling,
        grader=bench.grading.grader,
        mode=GradingMode.CHECKLIST,
        prompt=PromptTemplate.objects.filter(purpose=Purpose.GRADE_CHECKLIST).first(),
        status=RunStatus.DRAFT,
    )


def _other_sampling_run(bench) -> SamplingRun:
    return SamplingRun.objects.create(name="Another run", prompt=bench.sampling.prompt)


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"name": "  "}, "Give the study a name"),
        ({"answers_per_stratum": 0, "pairs_per_model_pair": 0}, "nothing to rate"),
        ({"ratings_per_unit": 0}, "at least one rating"),
        ({"units_per_participant": 0}, "at least one unit"),
        ({"answers_per_stratum": -1}, "between 0 and 1000"),
        (
            {"units_per_participant": 40, "answers_per_stratum": 1, "pairs_per_model_pair": 1},
            "would rate 40 units, but the draw has 15",
        ),
        ({"grading_run": _grading_run_without_scores}, "has scored none"),
        ({"sampling_run": _other_sampling_run}, "grades the answers of another sampling run"),
    ],
)
def test_bad_settings_are_refused_with_a_reason(bench, changes, message):
    changes = {k: v(bench) if callable(v) else v for k, v in changes.items()}
    with pytest.raises(AnswerStudyError, match=message):
        study_drawn(bench, **changes)
    assert not Study.objects.filter(kind=StudyKind.ANSWERS).exists()
