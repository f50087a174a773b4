"""Rows for the sampling-run page and command tests, made through the services."""

from apps.llm import engine
from apps.runs.services import SAMPLE_WORK, sampling_run_create
from tests.factories import approved_rubric, offline_model, question_make

HX = {"HTTP_HX_REQUEST": "true"}
MODEL_NAMES = ("offline-terse", "offline-friendly")


def offline_models(url: str, names=MODEL_NAMES) -> list:
    return [offline_model(url, name=name) for name in names]


def graded_questions(count: int, *, author, reviewer, topic: str = "accounts") -> list:
    """`count` questions, each with an approved rubric."""
    questions = []
    for _ in range(count):
        question = question_make(topic=topic)
        approved_rubric(question, author, reviewer)
        questions.append(question)
    return questions


def run_made(*, models, questions=None, samples: int = 2, name: str = "Pilot", **fields):
    questions = questions if questions is not None else [question_make() for _ in range(2)]
    return sampling_run_create(
        name=name, questions=questions, models=models, samples_per_item=samples, **fields
    )


def run_worked(run) -> None:
    """Work the run in this process, batch after batch, as a worker's chain would."""
    while True:
        outcome = engine.batch_run(work=SAMPLE_WORK.name, scope=run.pk)
        if outcome.again_in is None or not outcome.claimed:
            return
