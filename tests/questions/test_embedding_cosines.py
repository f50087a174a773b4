"""The cosine of embeddings of the approved rewrites (the researcher's choice of method),
through litellm and the gateway against the offline provider over real HTTP: each value is
numpy's cosine of the two stored vectors, the vectors are kept with the model that made them,
every call is in the ledger, computing again sends nothing, and a failure keeps its reason
and no number."""

import httpx
import numpy as np
import pytest

from apps.llm.models import (
    EMBED_PURPOSE,
    CallStatus,
    Embedding,
    LLMCall,
    ModelKind,
    text_digest,
)
from apps.questions.errors import QuestionError
from apps.questions.models import (
    EmbeddingCosine,
    EmbeddingCosineJobStatus,
    EmbeddingCosineStatus,
)
from apps.questions.selectors import embedding_cosine_means, questions_rewritten
from apps.questions.services import (
    embedding_cosine_job_run,
    embedding_cosine_job_start,
    question_update,
    rewrite_approve,
)
from tests.factories import api_base, offline_model, question_from_post_make, rewrite_made

pytestmark = pytest.mark.django_db
PAIRS = [
    (
        "Throwaway. Someone hacked my Instagram and changed the recovery email. What do I do?",
        "Someone hacked my social media account and changed its recovery email. What can I do?",
    ),
    (
        "I got a text saying I owe a customs fee for a parcel, with a link to pay. Is it a scam?",
        "A text message says I owe a customs fee for a parcel and links to a payment page. Scam?",
    ),
    (
        "My ex still knows my location all the time. Could there be a tracker on my car?",
        "Could a former partner be tracking my location through a device hidden on my car?",
    ),
]


def numpy_cosine(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def requests_seen(url: str) -> int:
    return httpx.get(api_base(url) + "/stats").json()["requests"]


def approved_bank(researcher, pairs=PAIRS):
    questions = []
    for post, text in pairs:
        rewrite = rewrite_made(question_from_post_make(body=post), text=text)
        questions.append(rewrite_approve(rewrite=rewrite, text=text, user=researcher))
    return questions


def embedder(url: str, name: str = "offline-embed"):
    return offline_model(url, name=name, kind=ModelKind.EMBEDDING)


def test_each_cosine_is_numpys_cosine_of_the_two_vectors_stored_with_their_model(
    researcher, offline_provider
):
    url = offline_provider()
    questions = approved_bank(researcher)
    model = embedder(url)

    job = embedding_cosine_job_start(model=model, user=researcher)
    assert job.status == EmbeddingCosineJobStatus.QUEUED and job.cosines.count() == 3
    job = embedding_cosine_job_run(job_id=job.pk)

    assert job.status == EmbeddingCosineJobStatus.FINISHED
    for question in questions:
        row = EmbeddingCosine.objects.get(question=question, model=model)
        assert row.status == EmbeddingCosineStatus.DONE and not row.error
        original, rewrite = row.original_embedding, row.rewrite_embedding
        assert original.text_sha256 == text_digest(question.original_text)
        assert rewrite.text_sha256 == text_digest(question.text)
        assert original.model == rewrite.model == model
        assert original.litellm_model == "openai/offline-embed"
        assert row.cosine == pytest.approx(numpy_cosine(original.vector, rewrite.vector), abs=1e-12)
        assert 0.3 < row.cosine < 1  # rewrites keep many of their post's words
    # Six texts, one call (a chunk of questions is one request), one ledger row.
    assert Embedding.objects.filter(model=model).count() == 6 and requests_seen(url) == 1
    call = LLMCall.objects.get(purpose=EMBED_PURPOSE)
    assert (call.model, call.status, call.caller) == (
        model,
        CallStatus.OK,
        f"embedding-cosine-job:{job.pk}",
    )
    assert call.input_tokens > 0 and call.cost_usd is not None
    [mean] = embedding_cosine_means(questions=questions_rewritten())
    assert (mean.model, mean.n, mean.failed, mean.pending) == (model, 3, 0, 0)
    assert mean.mean == pytest.approx(
        np.mean([r.cosine for r in EmbeddingCosine.objects.filter(model=model)])
    )
    assert "embedding vectors" in mean.method and "researcher's choice" in mean.choice


def test_computing_again_sends_no_text_the_model_has_embedded(researcher, offline_provider):
    url = offline_provider()
    questions = approved_bank(researcher)
    model = embedder(url)
    embedding_cosine_job_run(job_id=embedding_cosine_job_start(model=model).pk)
    before = dict(EmbeddingCosine.objects.values_list("question", "cosine"))

    again = embedding_cosine_job_start(model=model)
    assert set(again.cosines.values_list("status", flat=True)) == {EmbeddingCosineStatus.PENDING}
    embedding_cosine_job_run(job_id=again.pk)

    assert requests_seen(url) == 1 and LLMCall.objects.count() == 1
    assert dict(EmbeddingCosine.objects.values_list("question", "cosine")) == before
    assert set(EmbeddingCosine.objects.values_list("job", flat=True)) == {again.pk}
    # A new rewrite approved since: only its two texts are sent.
    approved_bank(
        researcher,
        [
            (
                "My phone shows a login I did not make.",
                "A login I didn't make shows on my phone. What should I do?",
            )
        ],
    )
    embedding_cosine_job_run(job_id=embedding_cosine_job_start(model=model).pk)
    assert requests_seen(url) == 2 and Embedding.objects.count() == 8
    # The task run again (a redelivered message) does nothing more.
    assert embedding_cosine_job_run(job_id=again.pk) is None
    assert requests_seen(url) == 2 and len(questions) + 1 == EmbeddingCosine.objects.count()


def test_a_failing_provider_leaves_each_cosine_failed_with_its_reason_and_no_number(
    researcher, offline_provider
):
    url = offline_provider(rate_429=1.0, retry_after=0)
    approved_bank(researcher)
    model = embedder(url)

    job = embedding_cosine_job_run(job_id=embedding_cosine_job_start(model=model).pk)

    assert job.status == EmbeddingCosineJobStatus.FINISHED
    rows = list(EmbeddingCosine.objects.all())
    assert len(rows) == 3
    for row in rows:
        assert row.status == EmbeddingCosineStatus.FAILED and row.cosine is None
        assert row.original_embedding is None and row.rewrite_embedding is None
        assert row.error_kind == CallStatus.RATE_LIMITED
        assert "gave up after 6 attempts" in row.error and "Rate limit reached" in row.error
    assert not Embedding.objects.exists()
    assert LLMCall.objects.filter(status=CallStatus.RATE_LIMITED).count() == 6
    assert requests_seen(url) == 6  # each attempt one request: the SDK retries none of its own
    [mean] = embedding_cosine_means(questions=questions_rewritten())
    assert (mean.mean, mean.n, mean.failed) == (None, 0, 3)


def test_a_new_job_for_the_model_replaces_the_one_under_way(researcher, offline_provider):
    url = offline_provider()
    approved_bank(researcher)
    model = embedder(url)
    first = embedding_cosine_job_start(model=model)
    second = embedding_cosine_job_start(model=model)
    first.refresh_from_db()
    assert first.status == EmbeddingCosineJobStatus.SUPERSEDED
    assert embedding_cosine_job_run(job_id=first.pk) is None and requests_seen(url) == 0
    assert set(EmbeddingCosine.objects.values_list("job", flat=True)) == {second.pk}
    embedding_cosine_job_run(job_id=second.pk)
    assert set(EmbeddingCosine.objects.values_list("status", flat=True)) == {"done"}


def test_a_changed_text_loses_its_cosines_of_embeddings(researcher, offline_provider):
    url = offline_provider()
    [question, other] = approved_bank(researcher, PAIRS[:2])
    embedding_cosine_job_run(job_id=embedding_cosine_job_start(model=embedder(url)).pk)
    question_update(question=question, fields={"text": question.text + " Thanks."})
    assert list(EmbeddingCosine.objects.values_list("question", flat=True)) == [other.pk]


def test_only_an_active_embedding_model_and_a_bank_with_approved_rewrites_are_taken(
    researcher, offline_provider
):
    url = offline_provider()
    with pytest.raises(QuestionError, match="No question has an approved rewrite"):
        embedding_cosine_job_start(model=embedder(url))
    approved_bank(researcher, PAIRS[:1])
    with pytest.raises(QuestionError, match="is not an embedding model"):
        embedding_cosine_job_start(model=offline_model(url))
    with pytest.raises(QuestionError, match="switched off"):
        embedding_cosine_job_start(
            model=offline_model(url, name="off", kind="embedding", active=False)
        )
    assert not EmbeddingCosine.objects.exists()
