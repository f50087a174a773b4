"""The offline provider's /v1/embeddings over real HTTP: OpenAI's shape, vectors that are the
same for the same (model, text) and closer for texts that share words, and the knobs."""

import base64
import struct

import httpx
import numpy as np
import pytest

from tests.offline_llm.test_provider import stats

HACKED = "Someone hacked my Instagram account and changed the recovery email."
HACKED_AGAIN = "My Instagram account was hacked: how do I change the recovery email back?"
UNRELATED = "Which router settings keep the kids' tablet off adult websites at night?"


def embed(base_url: str, body: dict, *, fault: str | None = None) -> httpx.Response:
    headers = {"Authorization": "Bearer sk-test-not-a-real-key"}
    if fault:
        headers["X-Offline-Faults"] = fault
    return httpx.post(f"{base_url}/embeddings", json=body, headers=headers, timeout=10)


def vectors(response: httpx.Response) -> list[np.ndarray]:
    assert response.status_code == 200, response.text
    return [np.array(item["embedding"]) for item in response.json()["data"]]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_embeddings_have_openai_shape_and_say_they_are_offline(offline_provider_url):
    texts = [HACKED, HACKED_AGAIN, UNRELATED]
    response = embed(offline_provider_url, {"model": "offline-embed", "input": texts})
    body = response.json()
    assert body["object"] == "list" and body["model"] == "offline-embed"
    assert [item["index"] for item in body["data"]] == [0, 1, 2]
    assert {item["object"] for item in body["data"]} == {"embedding"}
    for vector in vectors(response):
        assert vector.shape == (256,) and np.linalg.norm(vector) == pytest.approx(1, abs=1e-5)
    usage = body["usage"]
    assert usage["prompt_tokens"] == usage["total_tokens"] > sum(len(t) for t in texts) / 4 - 3
    assert body["system_fingerprint"] == "assay-offline"
    assert response.headers["X-Offline"] == "assay-offline"
    assert "sk-test-not-a-real-key" not in response.text
    # One string is one embedding; `dimensions` sets the length.
    single = embed(offline_provider_url, {"model": "m", "input": HACKED, "dimensions": 32})
    assert [v.shape for v in vectors(single)] == [(32,)]
    models = httpx.get(f"{offline_provider_url}/models").json()["data"]
    assert "offline-embed" in [model["id"] for model in models]


def test_the_same_model_and_text_get_the_same_vector_wherever_the_text_stands(
    offline_provider_url,
):
    alone = vectors(embed(offline_provider_url, {"model": "offline-embed", "input": HACKED}))[0]
    again = vectors(embed(offline_provider_url, {"model": "offline-embed", "input": HACKED}))[0]
    listed = vectors(
        embed(offline_provider_url, {"model": "offline-embed", "input": [UNRELATED, HACKED]})
    )[1]
    prefixed = vectors(
        embed(offline_provider_url, {"model": "openai/offline-embed", "input": HACKED})
    )[0]
    assert np.array_equal(alone, again) and np.array_equal(alone, listed)
    assert np.array_equal(alone, prefixed)
    other = vectors(embed(offline_provider_url, {"model": "offline-embed-2", "input": HACKED}))[0]
    assert not np.array_equal(alone, other)


def test_texts_that_share_words_have_a_higher_cosine_than_unrelated_texts(offline_provider_url):
    for model in ("offline-embed", "another-embedder"):
        hacked, again, unrelated = vectors(
            embed(
                offline_provider_url, {"model": model, "input": [HACKED, HACKED_AGAIN, UNRELATED]}
            )
        )
        shared, apart = cosine(hacked, again), cosine(hacked, unrelated)
        assert shared > 0.5 and abs(apart) < 0.25 and shared > apart + 0.3, (model, shared, apart)


def test_base64_encoding_carries_the_same_float32_vector(offline_provider_url):
    body = {"model": "offline-embed", "input": [HACKED, UNRELATED]}
    floats = vectors(embed(offline_provider_url, body))
    encoded = embed(offline_provider_url, {**body, "encoding_format": "base64"}).json()["data"]
    for item, expected in zip(encoded, floats, strict=True):
        raw = base64.b64decode(item["embedding"])
        decoded = np.array(struct.unpack(f"<{len(raw) // 4}f", raw))
        assert np.array_equal(decoded, expected)


@pytest.mark.parametrize(
    "body,code",
    [
        ({"input": HACKED}, "invalid_model"),
        ({"model": "offline-embed"}, "invalid_input"),
        ({"model": "offline-embed", "input": []}, "invalid_input"),
        ({"model": "offline-embed", "input": [HACKED, " "]}, "invalid_input"),
        ({"model": "offline-embed", "input": [[1, 2, 3]]}, "invalid_input"),
        (
            {"model": "offline-embed", "input": HACKED, "encoding_format": "hex"},
            "invalid_encoding_format",
        ),
        ({"model": "offline-embed", "input": HACKED, "dimensions": 0}, "invalid_dimensions"),
        ({"model": "offline-embed", "input": HACKED, "dimensions": True}, "invalid_dimensions"),
        ([HACKED], "invalid_body"),
    ],
)
def test_bad_embedding_requests_get_an_openai_style_400(offline_provider_url, body, code):
    response = embed(offline_provider_url, body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == code
    assert error["message"]


def test_fault_knobs_and_forced_faults_apply_to_embeddings(offline_provider):
    failing = offline_provider(rate_500=1.0)
    broken = embed(failing, {"model": "offline-embed", "input": HACKED})
    assert broken.status_code == 500 and broken.json()["error"]["type"] == "server_error"
    url = offline_provider(retry_after=3)
    limited = embed(url, {"model": "offline-embed", "input": HACKED}, fault="429")
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "3"
    # A vector has no syntax to break: "malformed" gives a normal answer.
    assert vectors(embed(url, {"model": "offline-embed", "input": HACKED}, fault="malformed"))
    assert stats(failing)["by_status"] == {"500": 1} and stats(failing)["faults"] == {"500": 1}
    assert stats(url)["by_status"] == {"429": 1, "200": 1} and stats(url)["faults"] == {"429": 1}
