"""The question-bank demo that `make run` loads: posts imported, sampled, screened by two
researchers, labelled and verified, and rewritten by an offline model over real HTTP, with
every stage left part-done for a newcomer."""

import pytest

from apps.accounts.roles import Role
from apps.demo import questions as demo
from apps.llm.models import ModelConfig
from apps.questions.models import (
    ImportBatch,
    LabelStatus,
    Question,
    Rewrite,
    SampledPost,
    ScreeningDecision,
    ScreeningOutcome,
)
from tests.factories import api_base, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_world(settings, offline_provider_url):
    settings.OFFLINE_LLM_URL = api_base(offline_provider_url)
    for username in ("researcher", "researcher2"):
        user_with_role(Role.RESEARCHER, username=username)
    ModelConfig.objects.create(
        display_name=demo.REWRITER,
        family="Offline demo",
        litellm_model="openai/offline-thorough",
        api_base=settings.OFFLINE_LLM_URL,
        max_concurrent=16,
        input_price_per_mtok=0,
        output_price_per_mtok=0,
    )


def test_the_demo_carries_posts_through_every_stage_and_leaves_each_part_done(demo_world):
    summary = demo.demo_question_bank_load()
    assert ImportBatch.objects.get().rows == 300
    assert SampledPost.objects.count() == 9 * demo.PER_TOPIC
    screened = SampledPost.objects.exclude(outcome=ScreeningOutcome.OPEN)
    assert screened.count() == 9 * demo.SCREENED
    assert ScreeningDecision.objects.count() == 2 * 9 * demo.SCREENED
    # The simulated screeners disagree now and then, as two people would.
    assert screened.filter(outcome=ScreeningOutcome.EXCLUDED, decisions__include=True).exists()
    included = screened.filter(outcome=ScreeningOutcome.INCLUDED).count()
    assert Question.objects.filter(source_post__isnull=False).count() == included > 0
    statuses = set(Question.objects.values_list("label_status", flat=True))
    assert {LabelStatus.UNLABELLED, LabelStatus.LABELLED, LabelStatus.VERIFIED} <= statuses
    # Each need is labelled on its own: questions asking for one, the other, and both.
    labelled = Question.objects.exclude(label_status=LabelStatus.UNLABELLED)
    needs = set(labelled.values_list("needs_sensemaking", "needs_guidance"))
    assert {(True, False), (False, True), (True, True)} <= needs
    rewrites = Rewrite.objects.filter(status="done")
    assert rewrites.count() == included
    assert len(set(rewrites.values_list("text", flat=True))) == included
    approved = Question.objects.filter(rewrite_approved_at__isnull=False)
    assert approved.count() == (included + 1) // 2
    assert not approved.filter(rewrite_cosine__isnull=True).exists()
    assert f"{included} included" in summary and "rewrites approved" in summary

    again = demo.demo_question_bank_load()
    assert "already imported" in again
    assert SampledPost.objects.count() == 9 * demo.PER_TOPIC
    assert Rewrite.objects.count() == included


def test_without_the_offline_provider_the_demo_screens_but_does_not_rewrite(demo_world, settings):
    settings.OFFLINE_LLM_URL = "http://127.0.0.1:9/v1"
    summary = demo.demo_question_bank_load()
    assert "rewriting skipped (no offline provider answers" in summary
    assert SampledPost.objects.exclude(outcome=ScreeningOutcome.OPEN).exists()
    assert not Rewrite.objects.exists()
