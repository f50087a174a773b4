"""Expert calibration's services and report: the seeded draw, the two blind grades, the
adjudication, and the statistics of a grading run against the final labels."""

import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from apps.accounts.models import User
from apps.accounts.roles import Role
from apps.accounts.services import user_set_roles
from apps.grading.errors import GradingError
from apps.grading.models import Calibration, CalibrationSet, CallState, ExpertJudgment, Judgment
from apps.grading.selectors import calibration as selectors
from apps.grading.services.calibration import (
    calibration_create,
    calibration_draw,
    disagreement_resolve,
    expert_grade_save,
)
from apps.llm.models import PromptTemplate
from apps.rubrics import scoring
from apps.rubrics import services as rubric_services
from apps.rubrics.models import Kind
from stats.calibration import label_agreement
from stats.correlation import pearson
from tests.grading.calibration_builders import (  # noqa: F401  (fixtures)
    grade,
    graded,
    grader_model,
    set_make,
    world_fixture,
)

pytestmark = pytest.mark.django_db


def drawn(world, seed, models=None):
    ids = [m.pk for m in (models or world.models[:2])]
    return [a.pk for _q, a in calibration_draw(sampling_run=world.run, model_ids=ids, seed=seed)]


def test_the_draw_is_reproducible_with_a_seed_and_differs_with_another(world):
    first = drawn(world, 7)
    assert first == drawn(world, 7)
    assert len(first) == len(world.questions)
    assert any(drawn(world, seed) != first for seed in range(8, 20))
    made = set_make(world, seed=7)
    assert sorted(made.samples.values_list("response_id", flat=True)) == sorted(first)


def test_only_the_configured_models_are_drawn_from(world):
    chosen = world.models[:2]
    for seed in range(30):
        models = {
            a.model_id
            for _q, a in calibration_draw(
                sampling_run=world.run, model_ids=[m.pk for m in chosen], seed=seed
            )
        }
        assert models <= {m.pk for m in chosen}
    only = world.models[2]
    made = set_make(world, models=[only])
    assert set(made.samples.values_list("response__model", flat=True)) == {only.pk}


def test_a_set_has_one_empty_expert_judgment_per_criterion_and_the_author_to_grade(world):
    made = set_make(world)
    for sample in made.samples.select_related("rubric"):
        assert sample.author == world.author
        assert sample.rubric.question_id == sample.question_id == sample.response.question_id
        rows = sample.judgments.all()
        assert rows.count() == sample.rubric.criteria.count() == 8
        assert rows.filter(first_met=None, second_met=None, final_met=None).count() == 8


def test_a_second_grader_who_wrote_a_rubric_or_who_is_no_researcher_is_refused(world):
    world.second = world.other_expert
    with pytest.raises(GradingError, match="must be a researcher"):
        set_make(world)
    user_set_roles(user=world.author, roles=[Role.EXPERT, Role.RESEARCHER])
    world.second = User.objects.get(pk=world.author.pk)
    with pytest.raises(GradingError, match="have rubrics written by Alma Author"):
        set_make(world)
    assert not CalibrationSet.objects.exists()


def test_only_the_author_and_the_second_grader_grade(world):
    sample = set_make(world).samples.first()
    for intruder in (world.other_expert, world.researcher, world.reviewer):
        with pytest.raises(GradingError, match="Only the rubric's author"):
            grade(sample, intruder, lambda c: True)
    assert not ExpertJudgment.objects.exclude(first_by=None, second_by=None).exists()


def test_agreements_become_final_and_adjudication_keeps_both_originals(world):
    sample = set_make(world).samples.first()
    factual = set(sample.rubric.criteria.filter(kind=Kind.FACTUAL).values_list("pk", flat=True))
    grade(sample, world.author, lambda c: True, note="looks fine")
    sample.refresh_from_db()
    assert sample.first_done_at and not sample.second_done_at
    assert not sample.judgments.exclude(final_met=None).exists()  # nothing final yet
    # The second grader disagrees on the factual criteria.
    grade(sample, world.second, lambda c: c.pk not in factual)
    sample.refresh_from_db()
    assert sample.second_done_at and not sample.resolved_at
    rows = {r.criterion_id: r for r in sample.judgments.all()}
    assert {pk for pk, r in rows.items() if r.final_met is None} == factual
    assert all(r.final_met is True for pk, r in rows.items() if pk not in factual)
    with pytest.raises(GradingError, match="Both grades of this answer are in"):
        grade(sample, world.author, lambda c: False)
    with pytest.raises(GradingError, match="same label"):
        disagreement_resolve(
            sample=sample,
            user=world.author,
            criterion_id=next(iter(set(rows) - factual)),
            final_met=False,
        )
    with pytest.raises(GradingError, match="two graders"):
        disagreement_resolve(
            sample=sample, user=world.researcher, criterion_id=min(factual), final_met=False
        )
    for pk in factual:
        disagreement_resolve(
            sample=sample,
            user=world.second,
            criterion_id=pk,
            final_met=False,
            note="the answer never says so",
        )
    sample.refresh_from_db()
    assert sample.resolved_at is not None
    for row in sample.judgments.filter(criterion_id__in=factual):
        assert (row.first_met, row.second_met, row.final_met) == (True, False, False)
        assert (row.first_by, row.second_by, row.resolved_by) == (
            world.author,
            world.second,
            world.second,
        )
        assert (row.first_note, row.resolution_note) == ("looks fine", "the answer never says so")


def test_a_grade_may_be_saved_in_parts_and_counts_once_complete(world):
    sample = set_make(world).samples.first()
    first, *rest = list(sample.judgments.values_list("criterion_id", flat=True))
    expert_grade_save(sample=sample, user=world.author, labels={first: True})
    sample.refresh_from_db()
    assert sample.first_done_at is None
    expert_grade_save(sample=sample, user=world.author, labels=dict.fromkeys(rest, False))
    sample.refresh_from_db()
    assert sample.first_done_at is not None
    assert sample.judgments.get(criterion_id=first).first_met is True


def settled(world, calibration_set, verdict_first, verdict_second, final):
    """Grade every sample twice and settle every disagreement with `final(criterion, sample)`."""
    for sample in calibration_set.samples.all():
        grade(sample, world.author, lambda c, s=sample: verdict_first(c, s))
        grade(sample, world.second, lambda c, s=sample: verdict_second(c, s))
        for row in sample.judgments.filter(final_met=None).select_related("criterion"):
            disagreement_resolve(
                sample=sample,
                user=world.author,
                criterion_id=row.criterion_id,
                final_met=final(row.criterion, sample),
            )


@pytest.fixture
def calibrated(world, offline_provider_url):
    """A checklist grading run of the sampling run, and a set whose final labels are the
    opposite of the auto-rater's on every factual criterion of the first answer and its
    own on everything else; the author's labels are the rater's everywhere (so a report
    that used them would show perfect agreement)."""
    run = graded(world.run, grader_model(offline_provider_url))
    calibration_set = set_make(world)
    first = calibration_set.samples.order_by("question_id").first()
    rater = {(j.response_id, j.criterion_id): j.met for j in run.judgments.all()}

    def says(criterion, sample):
        return rater[(sample.response_id, criterion.pk)]

    def final(criterion, sample):
        flip = sample.pk == first.pk and criterion.kind == Kind.FACTUAL
        return not says(criterion, sample) if flip else says(criterion, sample)

    settled(world, calibration_set, says, lambda c, s: not says(c, s), final)
    calibration = calibration_create(
        calibration_set=calibration_set, grading_run=run, user=world.researcher
    )
    return calibration, run, first, rater


def test_the_report_uses_the_final_labels_and_equals_scikit_learn(calibrated):
    calibration, run, first, rater = calibrated
    rows = ExpertJudgment.objects.filter(sample__calibration_set=calibration.calibration_set)
    rater_labels, expert_labels = [], []
    for row in rows.select_related("sample"):
        rater_labels.append(rater[(row.sample.response_id, row.criterion_id)])
        expert_labels.append(row.final_met)
    found = selectors.run_statistics(calibration_set=calibration.calibration_set, grading_run=run)
    overall = found.agreements[0].agreement
    assert overall.n == rows.count() == 24
    assert overall.accuracy == pytest.approx(21 / 24)  # the three flipped factual criteria
    assert overall.kappa == pytest.approx(cohen_kappa_score(expert_labels, rater_labels))
    macro = f1_score(expert_labels, rater_labels, average="macro", labels=[True, False])
    assert overall.f1_macro == pytest.approx(macro)
    presentation = next(a for a in found.agreements if a.label == "Presentation").agreement
    assert presentation.n == 15 and presentation.accuracy == 1.0
    disagreements = selectors.disagreements(found.pairs)
    assert {(p.sample.pk, p.criterion.kind) for p in disagreements} == {(first.pk, Kind.FACTUAL)}
    assert all(p.explanation for p in disagreements)
    assert not found.excluded


def test_the_score_correlation_is_scipy_on_scores_by_the_scoring_rule(calibrated):
    calibration, run, _first, rater = calibrated
    xs, ys = [], []
    for sample in calibration.calibration_set.samples.order_by("question_id"):
        rows = list(sample.judgments.select_related("criterion"))
        specs = [
            scoring.ScoredCriterion(
                r.criterion_id, r.criterion.polarity, r.criterion.kind, r.criterion.points
            )
            for r in rows
        ]
        xs.append(
            scoring.score(
                specs, {r.criterion_id: rater[(sample.response_id, r.criterion_id)] for r in rows}
            ).score
        )
        ys.append(scoring.score(specs, {r.criterion_id: r.final_met for r in rows}).score)
    found = selectors.run_statistics(calibration_set=calibration.calibration_set, grading_run=run)
    overall = found.scores[0]
    assert overall.n == 3
    assert overall.correlation == pearson(xs, ys)
    # Presentation labels all agree: both scores are the same, r is 1 or undefined.
    presentation = found.scores[2]
    assert presentation.correlation is None or presentation.correlation.r == pytest.approx(1.0)


def test_errored_judgments_are_excluded_and_counted(calibrated):
    calibration, run, first, _rater = calibrated
    Judgment.objects.filter(grading_run=run, response=first.response).update(
        status=CallState.ERROR, met=None
    )
    found = selectors.run_statistics(calibration_set=calibration.calibration_set, grading_run=run)
    assert found.excluded == [(8, selectors.ERROR)]
    assert found.agreements[0].n == 16
    assert found.scores[0].n == 2 and found.scores[0].excluded == 1
    assert found.scores[0].correlation is None  # two answers: not enough data
    assert label_agreement([True], [True]) is None


def test_changed_since_names_a_newer_approved_rubric_and_a_newer_prompt(calibrated, world):
    calibration, run, first, _rater = calibrated
    assert selectors.calibration_changes(calibration=calibration) == []
    question = first.question
    draft = rubric_services.rubric_start(question=question, user=world.author)
    rubric_services.criterion_add(
        rubric=draft,
        user=world.author,
        revision=draft.revision,
        polarity="positive",
        kind="factual",
        points=2,
        text="Suggests a password manager for the new password.",
    )
    rubric_services.rubric_submit_for_review(rubric=draft, user=world.author)
    rubric_services.rubric_approve(rubric=draft, user=world.reviewer)
    changes = selectors.calibration_changes(calibration=calibration)
    assert changes == [
        f"{question.external_id}: rubric version 2 was approved since; this calibration holds "
        "for version 1."
    ]
    PromptTemplate.objects.create(
        purpose=run.prompt.purpose, version=run.prompt.version + 1, user_text="Grade $answer"
    )
    changes = selectors.calibration_changes(calibration=calibration)
    assert changes[-1].startswith(f"A newer grading prompt, version {run.prompt.version + 1}")


def test_calibrating_again_returns_the_same_calibration(calibrated, world):
    calibration, run, _first, _rater = calibrated
    again = calibration_create(
        calibration_set=calibration.calibration_set, grading_run=run, user=world.researcher
    )
    assert again == calibration and Calibration.objects.count() == 1
    assert again.rubric_ids == sorted(
        calibration.calibration_set.samples.values_list("rubric_id", flat=True)
    )
    assert (again.grader, again.prompt) == (run.grader, run.prompt)
