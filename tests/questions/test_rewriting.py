"""Rewriting questions on the bulk engine against the offline provider over real HTTP, and
a researcher's approval of a rewrite."""

import pytest

from apps.llm import engine
from apps.llm.models import LLMCall, RunStatus
from apps.questions.errors import QuestionError
from apps.questions.models import LengthBucket, RewriteStatus
from apps.questions.selectors import questions_to_rewrite, rewrites_waiting
from apps.questions.selectors.rewriting import rewrite_diff
from apps.questions.services import (
    REWRITE_WORK,
    rewrite_approve,
    rewrite_job_cancel,
    rewrite_job_pause,
    rewrite_job_resume,
    rewrite_job_start,
    rewrite_reject,
)
from apps.questions.similarity import tfidf_cosines, trigram_jaccard
from apps.runs.services import sampling_run_create
from tests.conftest import wait_until
from tests.factories import (
    ModelConfigFactory,
    offline_model,
    question_from_post_make,
    question_make,
    rewrite_made,
    rewrite_prompt_v2,
)

POSTS = [
    "Throwaway for obvious reasons. My Instagram got hacked and the email was changed. I "
    "already tried resetting my password twice. I'm on an Android phone if that matters. "
    "What should I do?",
    "Long time lurker, first post. I got a text about a customs fee. It started about a week "
    "ago and it's getting worse. Is this safe?",
    "Quick question. Someone keeps evading bans on our server. I blocked them but it didn't "
    "help. My partner thinks I'm overreacting but I'm worried. How do I fix this?",
]
LONG_POST = (
    "So this happened yesterday. Someone logged into my bank from another country. "
    + "I read a few guides online but they contradict each other. " * 6
    + "What are my options?"
)


@pytest.fixture
def prompt(db):
    return rewrite_prompt_v2()


def run_all(job):
    """Work the job in this process, batch after batch, as the worker's chain would."""
    while True:
        outcome = engine.batch_run(work=REWRITE_WORK.name, scope=job.pk, limit=2)
        if outcome.again_in is None or not outcome.claimed:
            return


def rewrite_calls() -> int:
    return LLMCall.objects.filter(caller__startswith=f"{REWRITE_WORK.name}:").count()


@pytest.mark.worker
def test_a_job_run_by_a_real_worker_rewrites_each_question_once(
    route_to_worker, offline_provider_url, researcher
):
    from workers.engine import run_batch_task

    prompt = rewrite_prompt_v2()
    route_to_worker(run_batch_task)
    model = offline_model(offline_provider_url, name="offline-friendly")
    questions = [question_from_post_make(body=body) for body in POSTS]
    imported = question_make()  # no original post: nothing to rewrite
    job = rewrite_job_start(questions=[*questions, imported], model=model, user=researcher)
    assert job.prompt == prompt and job.status == RunStatus.RUNNING
    assert job.rewrites.count() == 3  # started: nothing else is queued here

    assert wait_until(lambda: job.__class__.objects.get(pk=job.pk).status == RunStatus.FINISHED, 60)
    rewrites = list(job.rewrites.select_related("question").order_by("pk"))
    assert [r.status for r in rewrites] == [RewriteStatus.DONE] * 3
    for rewrite in rewrites:
        assert rewrite.text and rewrite.text != rewrite.question.original_text
        assert rewrite.cost_usd is not None and rewrite.completed_at is not None
        assert rewrite.question.text == rewrite.question.original_text  # not approved yet
    assert "Throwaway" not in rewrites[0].text and "Instagram" not in rewrites[0].text
    assert rewrite_calls() == 3
    seeds = {engine.call_seed(job.seed, r.pk) for r in rewrites}
    assert len(seeds) == 3

    # The batch again: every row is done, nothing is asked for twice.
    outcome = engine.batch_run(work=REWRITE_WORK.name, scope=job.pk)
    assert outcome.claimed == 0 and rewrite_calls() == 3
    assert [r.text for r in job.rewrites.order_by("pk")] == [r.text for r in rewrites]


def test_a_job_pins_the_latest_rewrite_prompt_and_takes_only_questions_still_to_rewrite(prompt):
    model = ModelConfigFactory()
    fresh = question_from_post_make(body=POSTS[0])
    job = rewrite_job_start(questions=[fresh], model=model)
    assert job.prompt.version == 2 and job.prompt.purpose == "rewrite"
    # Its rewrite is on its way: a second job finds nothing left.
    with pytest.raises(QuestionError, match="still to rewrite"):
        rewrite_job_start(questions=[fresh], model=model)
    with pytest.raises(QuestionError, match="still to rewrite"):
        rewrite_job_start(questions=[question_make()], model=model)
    # Cancelled before it was called: the question is to rewrite again.
    rewrite_job_cancel(job=job)
    assert list(questions_to_rewrite()) == [fresh]


def test_a_paused_job_takes_no_calls_and_resumes_where_it_stopped(prompt, offline_provider_url):
    model = offline_model(offline_provider_url)
    questions = [question_from_post_make(body=body) for body in POSTS]
    job = rewrite_job_start(questions=questions, model=model)
    engine.batch_run(work=REWRITE_WORK.name, scope=job.pk, limit=1)
    assert job.rewrites.filter(status=RewriteStatus.DONE).count() == 1
    rewrite_job_pause(job=job)
    assert engine.batch_run(work=REWRITE_WORK.name, scope=job.pk).claimed == 0
    rewrite_job_resume(job=job)
    run_all(job)
    job.refresh_from_db()
    assert job.status == RunStatus.FINISHED
    assert job.rewrites.filter(status=RewriteStatus.DONE).count() == 3
    assert rewrite_calls() == 3
    with pytest.raises(QuestionError, match="finished"):
        rewrite_job_pause(job=job)


def test_a_cancelled_job_asks_for_nothing_more(prompt, offline_provider_url):
    job = rewrite_job_start(
        questions=[question_from_post_make(body=POSTS[1])],
        model=offline_model(offline_provider_url),
    )
    rewrite_job_cancel(job=job)
    assert engine.batch_run(work=REWRITE_WORK.name, scope=job.pk).claimed == 0
    assert rewrite_calls() == 0 and job.rewrites.get().status == RewriteStatus.PENDING


def test_approving_an_edited_rewrite_sets_text_provenance_and_metrics_but_keeps_the_bucket(
    prompt, researcher
):
    question = question_from_post_make(body=LONG_POST)
    assert question.length_bucket == LengthBucket.MEDIUM
    other = question_from_post_make(body=POSTS[2])
    rewrite = rewrite_made(question, text="Someone signed in to my bank abroad. What can I do?")
    edited = "Someone signed in to my bank account from abroad.\r\nWhat can I do about it?"

    approved = rewrite_approve(rewrite=rewrite, text=edited, user=researcher)

    assert (
        approved.text
        == "Someone signed in to my bank account from abroad.\nWhat can I do about it?"
    )
    assert approved.rewrite == rewrite and approved.rewrite.job.prompt.version == 2
    assert approved.rewrite_approved_by == researcher and approved.rewrite_approved_at
    assert approved.length_bucket == LengthBucket.MEDIUM  # the post's, not the short text's
    corpus = [LONG_POST, approved.text, POSTS[2], POSTS[2]]
    [cosine] = tfidf_cosines([(LONG_POST, approved.text)], corpus=corpus)
    assert approved.rewrite_cosine == pytest.approx(cosine, abs=1e-6)
    assert approved.rewrite_trigram_overlap == pytest.approx(
        trigram_jaccard(LONG_POST, approved.text), abs=1e-6
    )
    other.refresh_from_db()
    assert other.rewrite_cosine is None  # not rewritten: nothing stored
    assert list(rewrites_waiting()) == []
    with pytest.raises(QuestionError, match="already has an approved rewrite"):
        rewrite_approve(
            rewrite=rewrite_made(question, text="Again?"), text="Again?", user=researcher
        )


def test_approval_is_refused_with_the_reason_once_the_text_is_frozen(prompt, researcher):
    question = question_from_post_make(body=POSTS[0])
    sampling_run_create(
        name="Answered", questions=[question], models=[ModelConfigFactory()], samples_per_item=1
    )
    rewrite = rewrite_made(question, text="My social media account was hacked. What now?")
    with pytest.raises(QuestionError, match="can no longer change"):
        rewrite_approve(rewrite=rewrite, text=rewrite.text, user=researcher)
    question.refresh_from_db()
    assert question.text == POSTS[0] and question.rewrite is None
    assert question.rewrite_cosine is None


def test_a_rejected_rewrite_leaves_the_review_and_its_question_is_to_rewrite_again(
    prompt, researcher
):
    question = question_from_post_make(body=POSTS[1])
    rewrite = rewrite_made(question, text="Is a customs fee text safe?")
    assert list(rewrites_waiting()) == [rewrite] and list(questions_to_rewrite()) == []
    rewrite_reject(rewrite=rewrite, user=researcher)
    rewrite.refresh_from_db()
    assert rewrite.status == RewriteStatus.FAILED and rewrite.error.startswith("Rejected by")
    assert list(rewrites_waiting()) == [] and list(questions_to_rewrite()) == [question]
    with pytest.raises(QuestionError):
        rewrite_approve(rewrite=rewrite, text="Anything", user=researcher)


def test_a_struck_word_and_the_word_put_in_its_place_are_kept_apart_by_a_space():
    parts = rewrite_diff(original="I lost my phone today.", rewrite="I lost my laptop today.")
    assert [(p.kind, p.text, p.spaced) for p in parts] == [
        ("same", "I lost my ", False),
        ("del", "phone", False),
        ("ins", "laptop", True),
        ("same", " today.", False),
    ]
    # Changes that bring their own space, or stand beside unchanged text, get none added.
    parts = rewrite_diff(original="a b", rewrite="a b c")
    assert [(p.kind, p.text, p.spaced) for p in parts] == [
        ("same", "a b", False),
        ("ins", " c", False),
    ]
