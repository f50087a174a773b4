"""Migration 0006: the single need type becomes two yes/no labels, carried over row by row.

The migrations run on the test database, back to 0005 and forward again, inside the test's
transaction (PostgreSQL's DDL is transactional), so the schema is as it was afterwards.
"""

import pytest
from django.db import connection
from django.db.migrations.exceptions import IrreversibleError
from django.db.migrations.executor import MigrationExecutor

from apps.accounts.roles import Role
from apps.questions.models import Question, QuestionLabel, Topic
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db
BEFORE = ("questions", "0005_seed_screening_and_buckets")
AFTER = ("questions", "0006_need_labels")


@pytest.fixture
def second(db):
    return user_with_role(Role.RESEARCHER)


def migrate(target):
    """The apps as of `target`, after migrating there."""
    # Rows written in this transaction queue deferred foreign-key checks, and PostgreSQL
    # alters no table with checks pending: run them now.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(connection)
    executor.migrate([target])
    return MigrationExecutor(connection).loader.project_state([target]).apps


def old_rows(apps, researcher, second):
    """Questions and given labels as the single need type stored them."""
    OldQuestion = apps.get_model("questions", "Question")
    OldLabel = apps.get_model("questions", "QuestionLabel")
    topic = Topic.objects.get(name="scams")
    made = {}
    for key, need_type, status in [
        ("old-sensemaking", "sensemaking", "verified"),
        ("old-guidance", "guidance", "disputed"),
        ("old-blank", "", "unlabelled"),
    ]:
        made[key] = OldQuestion.objects.create(
            external_id=key,
            topic_id=topic.pk,
            text=f"{key}?",
            length_bucket="short",
            mentions_prior_attempt=True,
            need_type=need_type,
            label_status=status,
        )
    for stage, who, need_type in (
        ("label", researcher, "guidance"),
        ("verify", second, "sensemaking"),
    ):
        OldLabel.objects.create(
            question_id=made["old-guidance"].pk,
            stage=stage,
            researcher_id=who.pk,
            mentions_prior_attempt=True,
            need_type=need_type,
        )
    return made


def test_the_migration_carries_each_need_type_over_to_two_labels(researcher, second):
    old_rows(migrate(BEFORE), researcher, second)

    migrate(AFTER)

    labels = {
        q.external_id: (q.needs_sensemaking, q.needs_guidance, q.label_status)
        for q in Question.objects.filter(external_id__startswith="old-")
    }
    assert labels == {
        "old-sensemaking": (True, False, "verified"),
        "old-guidance": (False, True, "disputed"),
        "old-blank": (False, False, "unlabelled"),  # unlabelled stays unlabelled
    }
    given = QuestionLabel.objects.filter(question__external_id="old-guidance").order_by("stage")
    assert [(g.stage, g.needs_sensemaking, g.needs_guidance) for g in given] == [
        ("label", False, True),
        ("verify", True, False),
    ]
    assert all(
        q.mentions_prior_attempt for q in Question.objects.filter(external_id__startswith="old-")
    )


def test_going_back_restores_one_need_and_refuses_both(researcher, second):
    old_rows(migrate(BEFORE), researcher, second)
    migrate(AFTER)

    apps = migrate(BEFORE)  # every row carries one need or, unlabelled, none: it can go back
    OldQuestion = apps.get_model("questions", "Question")
    back = dict(
        OldQuestion.objects.filter(external_id__startswith="old-").values_list(
            "external_id", "need_type"
        )
    )
    assert back == {"old-sensemaking": "sensemaking", "old-guidance": "guidance", "old-blank": ""}
    OldLabel = apps.get_model("questions", "QuestionLabel")
    assert sorted(OldLabel.objects.values_list("stage", "need_type")) == [
        ("label", "guidance"),
        ("verify", "sensemaking"),
    ]

    migrate(AFTER)
    Question.objects.filter(external_id="old-guidance").update(needs_sensemaking=True)
    with pytest.raises(IrreversibleError, match="1 question"):
        migrate(BEFORE)
