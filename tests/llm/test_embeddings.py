"""Embeddings through litellm and the gateway, against the offline provider over real HTTP:
vectors kept with the model that made them, one ledger row per attempt, and a text never
sent twice to the same model."""

from decimal import Decimal

import httpx
import numpy as np
import pytest

from apps.llm.embeddings import texts_embed
from apps.llm.errors import PermanentLLMError, RetryableLLMError
from apps.llm.gateway import RetryPolicy, complete, embed
from apps.llm.models import EMBED_PURPOSE, CallStatus, Embedding, LLMCall, ModelKind, text_digest
from tests.factories import api_base, offline_model

HACKED = "Someone hacked my Instagram account and changed the recovery email."
REWRITTEN = "My social media account was hacked and its recovery email changed. What now?"
UNRELATED = "Which router settings keep the kids' tablet off adult websites at night?"
FAST = RetryPolicy(max_attempts=3, max_total_seconds=30, base_delay=0.01, max_delay=0.05)


def embedder(url: str, name: str = "offline-embed", **fields):
    return offline_model(url, name=name, kind=ModelKind.EMBEDDING, **fields)


def requests_seen(url: str) -> int:
    return httpx.get(api_base(url) + "/stats").json()["requests"]


def provider_vector(url: str, model: str, text: str) -> list[float]:
    body = {"model": model, "input": text, "encoding_format": "float"}
    return httpx.post(api_base(url) + "/embeddings", json=body).json()["data"][0]["embedding"]


def test_vectors_are_stored_with_their_model_and_each_call_is_in_the_ledger(db, offline_provider):
    url = offline_provider()
    model = embedder(url)

    rows = texts_embed(model=model, texts=[HACKED, REWRITTEN, HACKED], caller="test:1")

    assert requests_seen(url) == 1  # one call for the two distinct texts
    assert [row.text_sha256 for row in rows] == [
        text_digest(HACKED),
        text_digest(REWRITTEN),
        text_digest(HACKED),
    ]
    assert rows[0].pk == rows[2].pk and Embedding.objects.count() == 2
    stored = Embedding.objects.get(text_sha256=text_digest(HACKED))
    assert (stored.model, stored.litellm_model) == (model, "openai/offline-embed")
    # The vector litellm brought back (the OpenAI client asks for base64) is the provider's.
    assert stored.vector == provider_vector(url, "offline-embed", HACKED)
    assert stored.dimensions == 256 == len(stored.vector)
    call = LLMCall.objects.get()
    assert (call.purpose, call.status, call.attempt, call.caller) == (
        EMBED_PURPOSE,
        CallStatus.OK,
        1,
        "test:1",
    )
    assert call.input_tokens > 0 and call.output_tokens == 0
    assert call.cost_usd == pytest.approx(
        Decimal("2.50") * call.input_tokens / Decimal(1_000_000), abs=Decimal("0.000001")
    )


def test_a_text_already_embedded_by_the_model_is_never_sent_again(db, offline_provider):
    url = offline_provider()
    model = embedder(url)
    texts_embed(model=model, texts=[HACKED, REWRITTEN])

    again = texts_embed(model=model, texts=[REWRITTEN, HACKED])
    assert requests_seen(url) == 1 and LLMCall.objects.count() == 1
    assert [row.text_sha256 for row in again] == [text_digest(REWRITTEN), text_digest(HACKED)]

    texts_embed(model=model, texts=[HACKED, UNRELATED])  # only the new text is sent
    assert requests_seen(url) == 2 and Embedding.objects.count() == 3
    assert LLMCall.objects.order_by("pk").last().input_tokens < len(HACKED + UNRELATED) // 4

    other = embedder(url, name="offline-embed-large")  # another model embeds for itself
    [mine] = texts_embed(model=other, texts=[HACKED])
    assert requests_seen(url) == 3 and mine.model == other
    assert not np.array_equal(
        mine.vector, Embedding.objects.get(model=model, text_sha256=text_digest(HACKED)).vector
    )


def test_a_failing_provider_raises_after_the_retries_and_stores_no_vector(db, offline_provider):
    url = offline_provider(rate_500=1.0)
    model = embedder(url)
    with pytest.raises(RetryableLLMError) as raised:
        texts_embed(model=model, texts=[HACKED], policy=FAST)
    assert raised.value.status == CallStatus.SERVER_ERROR and raised.value.attempts == 3
    assert "gave up after 3 attempts" in str(raised.value)
    assert not Embedding.objects.exists()
    assert list(LLMCall.objects.order_by("attempt").values_list("attempt", "status")) == [
        (1, "server_error"),
        (2, "server_error"),
        (3, "server_error"),
    ]


def test_the_gateway_refuses_a_call_of_the_other_kind(db, offline_provider):
    url = offline_provider()
    chat = offline_model(url)
    with pytest.raises(PermanentLLMError, match="serves chat completions"):
        embed(model=chat, texts=[HACKED])
    with pytest.raises(PermanentLLMError, match="serves embeddings"):
        complete(
            model=embedder(url), messages=[{"role": "user", "content": "hi"}], purpose="sample"
        )
    assert requests_seen(url) == 0 and not LLMCall.objects.exists()


def test_every_picker_of_a_model_to_answer_offers_chat_models_only(db):
    """An embedding model cannot answer, grade, rewrite or act as a proxy: the pages and
    the API that choose such a model never offer it."""
    from apps.grading.api import GradingRunCreateSerializer
    from apps.grading.forms import GradingRunForm
    from apps.questions.views.rewriting import EmbeddingForm, StartForm
    from apps.runs.api import SamplingRunCreateSerializer
    from apps.runs.forms import RunForm
    from apps.surveys.api import ProxyRunCreateSerializer
    from apps.surveys.forms import GenerateForm, ProxyRunForm

    chat, embedding = offline_model("http://127.0.0.1:9"), embedder("http://127.0.0.1:9")
    pickers = [
        RunForm().fields["models"].queryset,
        GradingRunForm().fields["grader"].queryset,
        GenerateForm().fields["model"].queryset,
        ProxyRunForm().fields["models"].queryset,
        StartForm().fields["model"].queryset,
        SamplingRunCreateSerializer().fields["models"].child_relation.queryset,
        GradingRunCreateSerializer().fields["grader"].queryset,
        ProxyRunCreateSerializer().fields["models"].child_relation.queryset,
    ]
    for queryset in pickers:
        assert list(queryset.all()) == [chat], queryset.model
    assert list(EmbeddingForm().fields["model"].queryset.all()) == [embedding]
