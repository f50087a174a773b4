"""Rows for the calibration tests, made through the services: questions with approved
rubrics written by one expert, a sampling run answered by three offline models (over real
HTTP, in-process with the engine), a grading run, and a calibration set."""

from dataclasses import dataclass

import pytest

from apps.accounts.models import User
from apps.accounts.roles import Role
from apps.grading.models import CalibrationSample, CalibrationSet, GradingMode, GradingRun
from apps.grading.services import CHECKLIST_WORK, grading_run_create, grading_run_launch
from apps.grading.services.calibration import calibration_set_create, expert_grade_save
from apps.llm import engine
from apps.llm.models import ModelConfig, RunStatus
from apps.runs.models import SamplingRun
from apps.runs.services import SAMPLE_WORK, sampling_run_create, sampling_run_launch
from tests.factories import approved_rubric, offline_model, question_make, user_with_role

MODEL_NAMES = ("offline-terse", "offline-thorough", "offline-friendly")


def work_through(work, scope) -> None:
    while True:
        outcome = engine.batch_run(work=work.name, scope=scope)
        if outcome.again_in is None or (not outcome.claimed and outcome.again_in > 0):
            return


@dataclass
class World:
    author: User  # wrote every rubric
    reviewer: User
    second: User  # the researcher who grades second
    researcher: User  # another researcher
    other_expert: User
    models: list[ModelConfig]
    run: SamplingRun
    questions: list


def world_make(base_url: str, *, questions: int = 3, samples: int = 2) -> World:
    author = user_with_role(Role.EXPERT, username="alma", first_name="Alma", last_name="Author")
    reviewer = user_with_role(Role.REVIEWER, username="rita", first_name="Rita")
    made = []
    for _ in range(questions):
        question = question_make()
        approved_rubric(question, author, reviewer)
        made.append(question)
    models = [offline_model(base_url, name=name) for name in MODEL_NAMES]
    run = sampling_run_create(name="S", questions=made, models=models, samples_per_item=samples)
    sampling_run_launch(run=run)
    work_through(SAMPLE_WORK, run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    return World(
        author=author,
        reviewer=reviewer,
        second=user_with_role(
            Role.RESEARCHER, username="sam", first_name="Sam", last_name="Second"
        ),
        researcher=user_with_role(Role.RESEARCHER, username="rahul", first_name="Rahul"),
        other_expert=user_with_role(Role.EXPERT, username="emeka", first_name="Emeka"),
        models=models,
        run=run,
        questions=made,
    )


@pytest.fixture(name="world")
def world_fixture(db, offline_provider_url) -> World:
    return world_make(offline_provider_url)


def grader_model(base_url: str) -> ModelConfig:
    return offline_model(base_url, name="offline-grader")


def graded(run: SamplingRun, grader: ModelConfig, **fields) -> GradingRun:
    grading = grading_run_create(
        sampling_run=run, grader=grader, mode=GradingMode.CHECKLIST, **fields
    )
    grading_run_launch(run=grading)
    work_through(CHECKLIST_WORK, grading.pk)
    grading.refresh_from_db()
    return grading


def set_make(world: World, *, models=None, seed: int = 7) -> CalibrationSet:
    return calibration_set_create(
        sampling_run=world.run,
        models=models or world.models[:2],
        seed=seed,
        second_grader=world.second,
        user=world.researcher,
        name="Calibration",
    )


def grade(sample: CalibrationSample, user, verdict, note: str = "") -> CalibrationSample:
    """`user` grades every criterion of `sample` with `verdict(criterion) -> bool`."""
    criteria = [row.criterion for row in sample.judgments.select_related("criterion")]
    return expert_grade_save(
        sample=sample,
        user=user,
        labels={c.pk: verdict(c) for c in criteria},
        notes={c.pk: note for c in criteria} if note else {},
    )
