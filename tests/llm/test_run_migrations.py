"""The run lifecycle's migrations (questions 0009, grading 0004, runs 0004, surveys 0011,
which put every kind of run on `apps.llm.models.Run`): stored runs are kept with their
status, budget and seed, going back and forward again, and a rewrite job, launched as it
was made, is given that moment as its launch.

The migrations run on the test database inside the test's transaction (PostgreSQL's DDL is
transactional), so the schema is as it was afterwards."""

from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.grading.models import GradingMode, GradingRun
from apps.llm.models import RunStatus
from apps.questions.models import RewriteJob
from apps.runs.models import SamplingRun
from apps.surveys.models import ProxyRun
from tests.llm.test_runs import grading_run, proxy_run, rewrite_job, sampling_run

BEFORE = [
    ("questions", "0008_note_limit"),
    ("grading", "0003_note_limits"),
    ("runs", "0003_sampling_runs"),
    ("surveys", "0010_text_limits"),
]


def migrate(targets) -> None:
    # Rows written in this transaction queue deferred foreign-key checks, and PostgreSQL
    # alters no table with checks pending: run them now.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    MigrationExecutor(connection).migrate(targets)


def stored(model) -> list[tuple]:
    """Each run's id, status, seed and (but a rewrite job's, which had none before) budget."""
    columns = "id, status, seed" + ("" if model is RewriteJob else ", budget_usd")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {model._meta.db_table} ORDER BY id")  # noqa: S608
        return cursor.fetchall()


@pytest.mark.django_db
def test_every_stored_run_is_kept_through_the_lifecycle_migrations(make_study):
    runs = [
        sampling_run(),
        grading_run(GradingMode.CHECKLIST),
        proxy_run(make_study),
        rewrite_job(),
    ]
    for run, status, budget in zip(
        runs,
        [RunStatus.FINISHED, RunStatus.PAUSED, RunStatus.BUDGET_REACHED, RunStatus.RUNNING],
        [Decimal("12345678.90"), None, Decimal("0.01"), None],
        strict=True,
    ):
        type(run).objects.filter(pk=run.pk).update(status=status, budget_usd=budget)
    models = (SamplingRun, GradingRun, ProxyRun, RewriteJob)
    before = {model: stored(model) for model in models}
    assert all(before.values())

    migrate(BEFORE)
    assert {model: stored(model) for model in models} == before
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, created_at FROM {RewriteJob._meta.db_table}")  # noqa: S608
        made = dict(cursor.fetchall())

    executor = MigrationExecutor(connection)
    migrate(executor.loader.graph.leaf_nodes())
    assert {model: stored(model) for model in models} == before
    for job in RewriteJob.objects.all():
        assert job.launched_at == made[job.pk]
