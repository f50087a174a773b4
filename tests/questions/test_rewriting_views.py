"""The rewriting pages: start a job, follow it, review, edit and approve a rewrite."""

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import RunStatus
from apps.questions.models import Question, Rewrite, RewriteJob, RewriteStatus
from tests.factories import (
    ModelConfigFactory,
    question_from_post_make,
    rewrite_made,
    rewrite_prompt_v2,
)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
POST = (
    "Throwaway for obvious reasons. My Instagram got hacked and the email was changed. "
    "What should I do?"
)
REWRITE = "My social media account was hacked and its email changed. What would you advise?"


@pytest.fixture
def rewrite(db):
    rewrite_prompt_v2()
    offline = ModelConfigFactory(name="offline-friendly")
    return rewrite_made(question_from_post_make(body=POST), text=REWRITE, model=offline)


def urls(rewrite):
    job = rewrite.job
    return {
        "get": [reverse("questions:rewrites"), reverse("questions:rewrite", args=[rewrite.pk])],
        "post": [
            reverse("questions:rewrites"),
            reverse("questions:rewrite", args=[rewrite.pk]),
            reverse("questions:rewrite-reject", args=[rewrite.pk]),
            *(
                reverse(f"questions:rewrite-job-{move}", args=[job.pk])
                for move in ("pause", "resume", "cancel", "retry")
            ),
        ],
    }


@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER])
def test_every_rewriting_page_is_for_researchers_only(role_client, client, rewrite, role):
    web = role_client(role) if role else client
    for target in urls(rewrite)["get"]:
        response = web.get(target)
        if role is None:
            assert response.status_code == 302 and "/login/" in response["Location"]
        else:
            assert response.status_code == (200 if role == Role.RESEARCHER else 403), target
    if role == Role.RESEARCHER:
        return
    for target in urls(rewrite)["post"]:
        response = web.post(target, {"text": "Changed?"})
        if role is None:
            assert response.status_code == 302 and "/login/" in response["Location"]
        else:
            assert response.status_code == 403, target
    assert Question.objects.get().rewrite is None


def test_starting_a_job_creates_rewrites_for_the_questions_still_to_rewrite(role_client, rewrite):
    waiting = question_from_post_make(body="I got a text about a customs fee. Is this safe?")
    model = ModelConfigFactory(name="offline-terse")
    web = role_client(Role.RESEARCHER)
    page = web.get(reverse("questions:rewrites")).text
    assert 'data-testid="to-rewrite">1 question is still to rewrite' in page
    assert "offline demo model" in page and "Review " + rewrite.question.external_id in page
    response = web.post(reverse("questions:rewrites"), {"model": model.pk})
    assert response.status_code == 302
    job = RewriteJob.objects.get(model=model)
    assert list(job.rewrites.values_list("question", flat=True)) == [waiting.pk]
    assert job.prompt.version == 2 and job.status == RunStatus.RUNNING
    # Nothing left: refused with the reason, nothing created.
    again = web.post(reverse("questions:rewrites"), {"model": model.pk}, follow=True)
    assert "None of these questions is still to rewrite" in again.text
    assert RewriteJob.objects.filter(model=model).count() == 1


def test_the_jobs_poll_renders_only_the_jobs_with_counts_from_the_rows(role_client, rewrite):
    web = role_client(Role.RESEARCHER)
    fragment = web.get(reverse("questions:rewrites"), **HX).text
    assert fragment.strip().startswith('<section id="rewrite-jobs"') and "<h1" not in fragment
    assert 'data-testid="done">1' in fragment and 'data-testid="waiting">0' in fragment
    full = web.get(reverse("questions:rewrites")).text
    assert "<h1>Rewriting questions</h1>" in full and 'id="rewrite-jobs"' in full


def test_pausing_and_resuming_a_job_from_the_page(role_client, rewrite):
    job = RewriteJob.objects.create(
        model=rewrite.job.model, prompt=rewrite.job.prompt, status=RunStatus.RUNNING
    )
    web = role_client(Role.RESEARCHER)
    web.post(reverse("questions:rewrite-job-pause", args=[job.pk]))
    job.refresh_from_db()
    assert job.status == RunStatus.PAUSED
    web.post(reverse("questions:rewrite-job-resume", args=[job.pk]))
    job.refresh_from_db()
    assert job.status == RunStatus.RUNNING
    page = web.post(reverse("questions:rewrite-job-pause", args=[rewrite.job.pk]), follow=True)
    assert "cannot be paused now" in page.text


def test_the_review_page_marks_the_differences_and_the_edit_preview_is_a_fragment(
    role_client, rewrite
):
    web = role_client(Role.RESEARCHER)
    target = reverse("questions:rewrite", args=[rewrite.pk])
    page = web.get(target).text
    assert '<del><span class="visually-hidden">[removed: </span>Throwaway' in page
    assert '<ins><span class="visually-hidden">[added: </span>' in page
    assert "offline demo model" in page and "0.56" in page and "0.04" in page
    assert "TfidfVectorizer" in page and "Jaccard" in page
    preview = web.get(target, {"text": POST + " Thanks."}, **HX).text
    assert preview.strip().startswith('<section id="diff"') and "<h1" not in preview
    assert "Thanks." in preview and "[removed: " not in preview
    # Without JavaScript the preview is the whole page, the edit kept in the textarea.
    whole = web.get(target, {"text": "Edited text"}).text
    assert "<h1" in whole and ">Edited text</textarea>" in whole


def test_approving_from_the_page_shows_the_text_provenance_and_metrics(role_client, rewrite):
    web = role_client(Role.RESEARCHER)
    target = reverse("questions:rewrite", args=[rewrite.pk])
    response = web.post(target, {"text": REWRITE + " Thank you."})
    assert response.status_code == 302
    question = Question.objects.get()
    assert question.text == REWRITE + " Thank you." and question.rewrite == rewrite
    page = web.get(target).text
    assert 'data-testid="provenance"' in page and "rewrite version 2" in page
    assert f'data-testid="cosine">{question.rewrite_cosine:.3f}' in page
    assert "<textarea" not in page
    listing = web.get(reverse("questions:rewrites")).text
    assert 'data-testid="approved-row"' in listing and 'data-testid="means"' in listing


def test_an_empty_approval_is_refused_on_the_page(role_client, rewrite):
    response = role_client(Role.RESEARCHER).post(
        reverse("questions:rewrite", args=[rewrite.pk]), {"text": "   "}
    )
    assert response.status_code == 422
    assert Question.objects.get().rewrite is None


def test_rejecting_from_the_page_sends_the_question_back_to_rewrite(role_client, rewrite):
    web = role_client(Role.RESEARCHER)
    page = web.post(reverse("questions:rewrite-reject", args=[rewrite.pk]), follow=True).text
    assert "to rewrite again" in page and "No rewrite is waiting for review." in page
    assert 'data-testid="to-rewrite">1 question is still to rewrite' in page


def test_a_jobs_failed_rewrites_are_asked_for_again_from_its_row(role_client, rewrite):
    job = RewriteJob.objects.create(
        model=rewrite.job.model, prompt=rewrite.job.prompt, status=RunStatus.PAUSED
    )
    failed = Rewrite.objects.create(
        job=job, question=rewrite.question, status=RewriteStatus.FAILED, error_kind="timeout"
    )
    web = role_client(Role.RESEARCHER)
    retry = reverse("questions:rewrite-job-retry", args=[job.pk])
    assert f'action="{retry}"' in web.get(reverse("questions:rewrites")).text
    page = web.post(retry, follow=True)
    assert "1 failed rewrite to ask again. They are asked for when you resume." in page.text
    failed.refresh_from_db()
    assert failed.status == RewriteStatus.PENDING and not failed.error_kind
    assert f'action="{retry}"' not in page.text  # nothing failed is left to ask for
