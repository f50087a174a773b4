"""Builders for the grading pages' tests: answered sampling runs, grading runs worked
in-process through the engine, and a queue no worker reads for what a view enqueues."""

import contextlib
import uuid

import redis
from django.conf import settings

from apps.grading.models import CallState, GradingMode, GradingRun, Judgment
from apps.grading.services import (
    grading_run_create,
    grading_run_launch,
    scores_compute,
    work_for_run,
)
from apps.llm import engine
from apps.llm.models import RunStatus
from apps.runs.models import SamplingRun
from apps.runs.services import SAMPLE_WORK, sampling_run_create, sampling_run_launch
from tests.factories import approved_rubric, offline_model, question_make


def work_through(work_name: str, scope: int) -> None:
    """Run the engine's batches in this process until the scope has nothing left now."""
    while True:
        outcome = engine.batch_run(work=work_name, scope=scope)
        if outcome.again_in is None or (not outcome.claimed and outcome.again_in > 0):
            return


def answered_run(
    people,
    url: str,
    *,
    questions: int = 2,
    samples: int = 2,
    models=("offline-thorough",),
    topics=("accounts",),
) -> SamplingRun:
    """A finished sampling run: `questions` questions with approved rubrics (3 criteria
    each), answered `samples` times by each offline model."""
    made = []
    for i in range(questions):
        question = question_make(topic=topics[i % len(topics)])
        approved_rubric(question, people["erin"], people["rosa"])
        made.append(question)
    run = sampling_run_create(
        name="Sampled",
        questions=made,
        models=[offline_model(url, name=m) for m in models],
        samples_per_item=samples,
    )
    sampling_run_launch(run=run)
    work_through(SAMPLE_WORK.name, run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    return run


def graded_run(
    sampling_run: SamplingRun, grader, *, mode=GradingMode.CHECKLIST, finish: bool = True, **fields
) -> GradingRun:
    run = grading_run_create(sampling_run=sampling_run, grader=grader, mode=mode, **fields)
    run = grading_run_launch(run=run)
    if finish:
        work_through(work_for_run(run).name, run.pk)
        run.refresh_from_db()
    return run


def judgment_made_error(judgment: Judgment, *, kind: str = "invalid_output") -> Judgment:
    """Turn one judgment into an explicit error (as a failed call leaves it) and recompute
    its answer's score, which it then no longer has."""
    Judgment.objects.filter(pk=judgment.pk).update(
        status=CallState.ERROR, met=None, error_kind=kind, error="The grader's answer was bad."
    )
    scores_compute(grading_run_id=judgment.grading_run_id, response_ids=[judgment.response_id])
    judgment.refresh_from_db()
    return judgment


@contextlib.contextmanager
def queue_unread():
    """Route the engine's batch task to a queue of its own that no worker reads, so that
    what a view or command enqueues neither reaches a `make run` worker nor another test;
    the queue is deleted afterwards. Returns its name."""
    from config.celery import app
    from workers.engine import run_batch_task

    queue = f"test-quiet-{uuid.uuid4().hex[:12]}"
    routes = app.conf.task_routes
    app.conf.update(task_routes={**(routes or {}), run_batch_task.name: {"queue": queue}})
    try:
        yield queue
    finally:
        app.conf.update(task_routes=routes)
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        client.delete(queue)
        client.close()


def queued(queue: str) -> int:
    """How many messages wait on `queue` (the broker's list of that name)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        return client.llen(queue)
    finally:
        client.close()
