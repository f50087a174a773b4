"""Where a rewrite's cosine is shown, the method and model that made it stand beside it: the
TF-IDF cosine is named as Assay's choice (the paper does not say how its cosine was
computed), a cosine of embeddings names its model, and a failure shows its reason and no
number. The embeddings page starts a job and shows its progress; researchers only."""

import csv
import io

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.models import EmbeddingCosine, EmbeddingCosineJob, Question
from apps.questions.services import embedding_cosine_job_run, embedding_cosine_job_start
from tests.questions.test_embedding_cosines import approved_bank, embedder

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
CHOICE = "does not say how it computed it, so TF-IDF is Assay&#x27;s choice"


@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER])
def test_the_embeddings_page_and_its_start_are_for_researchers_only(
    role_client, client, researcher, role
):
    approved_bank(researcher, [("My email was hacked. What now?", "My email was hacked.")])
    model = embedder("http://127.0.0.1:9/v1")
    web = role_client(role) if role else client
    target = reverse("questions:embedding-cosines")
    for response in (web.get(target), web.get(target, **HX), web.post(target, {"model": model.pk})):
        if role is None:
            assert response.status_code == 302 and "/login/" in response["Location"]
        elif role != Role.RESEARCHER:
            assert response.status_code == 403
        else:
            assert response.status_code in (200, 302)
    assert EmbeddingCosineJob.objects.exists() == (role == Role.RESEARCHER)


def test_starting_from_the_page_queues_the_job_after_commit(
    role_client, researcher, django_capture_on_commit_callbacks
):
    approved_bank(researcher)
    model = embedder("http://127.0.0.1:9/v1")
    chat = embedder("http://127.0.0.1:9/v1", name="offline-terse")
    chat.kind = "chat"
    chat.save()
    web = role_client(Role.RESEARCHER)
    page = web.get(reverse("questions:embedding-cosines")).text
    assert f'<option value="{model.pk}">' in page and f'value="{chat.pk}"' not in page
    assert "This is your choice of method and model" in page and CHOICE in page
    with django_capture_on_commit_callbacks() as queued:
        response = web.post(reverse("questions:embedding-cosines"), {"model": model.pk})
    assert response.status_code == 302 and len(queued) == 1
    job = EmbeddingCosineJob.objects.get()
    assert job.model == model and job.cosines.count() == 3
    fragment = web.get(reverse("questions:embedding-cosines"), **HX).text
    assert fragment.strip().startswith('<div id="embedding-results"') and "<h1" not in fragment
    assert 'data-testid="pending">3' in fragment and 'hx-trigger="every 2s"' in fragment
    # The means follow the job too: three being computed, none yet.
    assert "(3 being computed)" in fragment and 'data-testid="embedding-mean"' in fragment
    refused = web.post(reverse("questions:embedding-cosines"), {"model": chat.pk})
    assert refused.status_code == 422 and EmbeddingCosineJob.objects.count() == 1


def test_every_page_with_a_cosine_names_its_method_and_model(
    role_client, researcher, offline_provider
):
    questions = approved_bank(researcher)
    model = embedder(offline_provider())
    embedding_cosine_job_run(job_id=embedding_cosine_job_start(model=model).pk)
    question = Question.objects.get(pk=questions[0].pk)
    row = EmbeddingCosine.objects.get(question=question)
    web = role_client(Role.RESEARCHER)

    review = web.get(reverse("questions:rewrite", args=[question.rewrite_id])).text
    assert f'data-testid="cosine">{question.rewrite_cosine:.3f}' in review
    assert "Cosine similarity to the original, TF-IDF" in review and CHOICE in review
    assert f"Cosine of embeddings by {model.display_name}" in review
    assert "openai/offline-embed; your choice" in review
    assert f'data-testid="embedding-cosine">{row.cosine:.3f}</dd>' in review

    bank = web.get(reverse("questions:bank")).text
    assert "Cosine similarity (TF-IDF)" in bank and CHOICE in bank
    assert f"Cosine of embeddings ({model.display_name})" in bank
    assert '<th scope="col">Cosine (TF-IDF)</th>' in bank

    rewrites = web.get(reverse("questions:rewrites")).text
    assert "cosine similarity (TF-IDF)" in rewrites and CHOICE in rewrites
    assert f"Cosine of embeddings by {model.display_name} (openai/offline-embed" in rewrites

    embeddings = web.get(reverse("questions:embedding-cosines")).text
    assert 'data-testid="embedding-mean"' in embeddings and model.display_name in embeddings
    assert "Assay's: the paper does not say how its cosine was computed" in embeddings

    export = b"".join(web.get(reverse("questions:bank-csv")).streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(export)))
    assert {r["rewrite_cosine_method"] for r in rows} == {
        "cosine similarity of TF-IDF vectors (scikit-learn TfidfVectorizer, default settings), "
        "fitted on every original and final text in the bank. The published study reports a "
        "mean cosine similarity of 0.56 but does not say how it computed it, so TF-IDF is "
        "Assay's choice, not the paper's method."
    }


def test_a_failed_cosine_shows_its_reason_and_no_number(role_client, researcher, offline_provider):
    [question] = approved_bank(researcher, [("My email was hacked. What now?", "Help: hacked!")])
    model = embedder(offline_provider(rate_429=1.0, retry_after=0))
    embedding_cosine_job_run(job_id=embedding_cosine_job_start(model=model).pk)
    web = role_client(Role.RESEARCHER)

    review = web.get(reverse("questions:rewrite", args=[question.rewrite_id])).text
    shown = review.split('data-testid="embedding-cosine">', 1)[1].split("</dd>", 1)[0]
    assert shown.startswith('<span class="error">Not computed: ')
    assert "gave up after 6 attempts" in shown and not any(c.isdigit() for c in shown[:40])

    embeddings = web.get(reverse("questions:embedding-cosines")).text
    assert 'data-testid="embedding-failure"' in embeddings and "Rate limited (429)" in embeddings
    assert "gave up after 6 attempts" in embeddings
    mean_row = embeddings.split('data-testid="embedding-mean">', 1)[1].split("</tr>", 1)[0]
    assert "none yet" in mean_row

    bank = web.get(reverse("questions:bank")).text
    assert "1 failed" in bank
