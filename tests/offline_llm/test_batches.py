"""The offline provider's batch API, driven through litellm over real HTTP as a paid
provider's would be: upload, create, follow, cancel, read the output and error files."""

import json
import time

import httpx
import litellm
import pytest

from offline_llm.knobs import Knobs

KEY = "offline-demo"
QUESTIONS = [
    "How do I turn on two-factor authentication for my email account?",
    "Someone knows my Netflix password. What should I change first?",
    "Is it safe to use the same password for my bank and my email?",
    "My phone shows a login from another country. What should I do?",
    "How can I tell whether a text from my bank is a scam?",
    "Should I let my browser save my passwords?",
]


def line(index: int, question: str, **body) -> dict:
    return {
        "custom_id": f"row-{index}",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "offline-terse",
            "messages": [{"role": "user", "content": question}],
            "seed": index,
            **body,
        },
    }


def jsonl(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in lines)


def submit(base_url: str, lines: list[dict] | bytes, **batch) -> str:
    content = lines if isinstance(lines, bytes) else jsonl(lines)
    uploaded = litellm.create_file(
        file=("batch.jsonl", content),
        purpose="batch",
        custom_llm_provider="openai",
        api_base=base_url,
        api_key=KEY,
    )
    created = litellm.create_batch(
        completion_window="24h",
        endpoint="/v1/chat/completions",
        input_file_id=uploaded.id,
        custom_llm_provider="openai",
        api_base=base_url,
        api_key=KEY,
        **batch,
    )
    return created.id


def retrieve(base_url: str, batch_id: str):
    return litellm.retrieve_batch(
        batch_id=batch_id, custom_llm_provider="openai", api_base=base_url, api_key=KEY
    )


def ended(base_url: str, batch_id: str, *, timeout: float = 20.0):
    """The batch once it has ended and its files are written, and the statuses seen."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        batch = retrieve(base_url, batch_id)
        if not seen or seen[-1] != batch.status:
            seen.append(batch.status)
        # Whatever its state, it counts its lines.
        assert batch.request_counts.total == len(rows(base_url, batch.input_file_id))
        if batch.status in ("completed", "expired", "cancelled", "failed"):
            return batch, seen
        time.sleep(0.05)
    raise AssertionError(f"the batch did not end: {seen}")


def rows(base_url: str, file_id: str | None) -> dict[str, dict]:
    if file_id is None:
        return {}
    content = litellm.file_content(
        file_id=file_id, custom_llm_provider="openai", api_base=base_url, api_key=KEY
    )
    return {row["custom_id"]: row for row in map(json.loads, content.content.splitlines())}


def test_a_batch_is_answered_as_the_chat_endpoint_answers_each_line(offline_provider):
    base_url = offline_provider(batch_seconds=1)
    lines = [line(i, q) for i, q in enumerate(QUESTIONS)]
    batch_id = submit(base_url, lines, metadata={"run": "7"})
    batch, seen = ended(base_url, batch_id)
    assert batch.status == "completed" and batch.metadata == {"run": "7"}
    # The clock moves it through OpenAI's states; it is finalizing while its files are written.
    assert seen[0] in ("validating", "in_progress") and "in_progress" in seen
    assert (batch.request_counts.total, batch.request_counts.completed) == (6, 6)
    assert batch.request_counts.failed == 0 and batch.error_file_id is None
    output = rows(base_url, batch.output_file_id)
    assert sorted(output) == sorted(f"row-{i}" for i in range(6))
    for index, question in enumerate(QUESTIONS):
        answer = output[f"row-{index}"]["response"]
        assert answer["status_code"] == 200
        live = httpx.post(f"{base_url}/chat/completions", json=line(index, question)["body"])
        # The same request gets the same answer, live or in a batch.
        expected = live.json()["choices"][0]["message"]["content"]
        assert answer["body"]["choices"][0]["message"]["content"] == expected
        assert answer["body"]["usage"] == live.json()["usage"]
    stats = httpx.get(f"{base_url}/stats").json()["batches"]
    assert stats == {
        "created": 1,
        "finalized": 1,
        "lines_answered": 6,
        "lines_failed": 0,
        "lines_not_run": 0,
    }


def test_failed_lines_go_to_the_error_file(offline_provider):
    base_url = offline_provider(batch_seconds=0.5, batch_rate_failed=0.5, fault_seed=3)
    lines = [line(i, f"{QUESTIONS[i % 6]} ({i})") for i in range(40)]
    batch, _seen = ended(base_url, submit(base_url, lines))
    assert batch.status == "completed"
    output, errors = rows(base_url, batch.output_file_id), rows(base_url, batch.error_file_id)
    assert len(output) + len(errors) == 40 and set(output).isdisjoint(errors)
    assert 5 < len(errors) < 35  # about half, drawn
    assert batch.request_counts.completed == len(output)
    assert batch.request_counts.failed == len(errors)
    assert {row["response"]["status_code"] for row in errors.values()} == {500}


def test_a_line_the_chat_endpoint_refuses_is_refused_in_the_error_file(offline_provider):
    base_url = offline_provider(batch_seconds=0.2)
    lines = [line(0, QUESTIONS[0]), line(1, "x", temperature=5)]
    batch, _seen = ended(base_url, submit(base_url, lines))
    assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 1)
    refused = rows(base_url, batch.error_file_id)["row-1"]["response"]
    assert refused["status_code"] == 400
    assert "temperature" in refused["body"]["error"]["message"]


def test_an_expired_batch_has_part_of_its_lines_done_and_the_rest_not_run(offline_provider):
    base_url = offline_provider(batch_seconds=0.5)
    lines = [line(i, f"{QUESTIONS[i % 6]} ({i})") for i in range(20)]
    batch, _seen = ended(base_url, submit(base_url, lines, metadata={"offline_fault": "expire"}))
    assert batch.status == "expired"
    errors = rows(base_url, batch.error_file_id)
    assert {row["error"]["code"] for row in errors.values()} == {"batch_expired"}
    done = rows(base_url, batch.output_file_id)
    assert len(done) == 12 and len(errors) == 8  # 60% done before the window ran out
    assert not set(done) & set(errors)


def test_the_next_batches_can_be_made_to_expire(offline_provider):
    base_url = offline_provider(batch_seconds=0.3)
    set_faults = httpx.post(f"{base_url}/offline/batches", json={"expire_next": 1}, timeout=5)
    assert set_faults.json() == {"expire_next": 1}
    first, _ = ended(base_url, submit(base_url, [line(0, QUESTIONS[0])]))
    second, _ = ended(base_url, submit(base_url, [line(1, QUESTIONS[1])]))
    assert (first.status, second.status) == ("expired", "completed")
    refused = httpx.post(f"{base_url}/offline/batches", json={"expire_next": -1}, timeout=5)
    assert refused.status_code == 400


def test_a_cancelled_batch_keeps_what_was_done_and_says_what_was_not(offline_provider):
    base_url = offline_provider(batch_seconds=4, batch_cancel_seconds=0.3)
    lines = [line(i, f"{QUESTIONS[i % 6]} ({i})") for i in range(50)]
    batch_id = submit(base_url, lines)
    time.sleep(1)
    cancelling = litellm.cancel_batch(
        batch_id=batch_id, custom_llm_provider="openai", api_base=base_url, api_key=KEY
    )
    assert cancelling.status == "cancelling"
    batch, _seen = ended(base_url, batch_id)
    assert batch.status == "cancelled"
    output, errors = rows(base_url, batch.output_file_id), rows(base_url, batch.error_file_id)
    assert 0 < len(output) < 50 and len(output) + len(errors) == 50
    assert {row["error"]["code"] for row in errors.values()} == {"batch_cancelled"}
    again = httpx.post(f"{base_url}/batches/{batch_id}/cancel", headers={"Authorization": KEY})
    assert again.status_code == 200 and again.json()["status"] == "cancelled"


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"not json\n", "invalid_json_line"),
        (jsonl([line(0, "a"), line(0, "b")]), "duplicate_custom_id"),
        (jsonl([{**line(0, "a"), "url": "/v1/embeddings"}]), "invalid_url"),
        (jsonl([line(i, "a") for i in range(4)]), "too_many_requests"),
        (b"\n", "empty_file"),
    ],
)
def test_a_file_that_breaks_the_rules_fails_validation_naming_the_line(
    offline_provider, content, code
):
    base_url = offline_provider(batch_seconds=0.2, batch_max_requests=3)
    batch = retrieve(base_url, submit(base_url, content))
    assert batch.status == "failed"
    problem = batch.errors.data[0]
    assert problem.code == code
    if code in ("invalid_json_line", "duplicate_custom_id", "invalid_url"):
        assert problem.line in (1, 2)


def test_the_batch_knobs_are_checked():
    with pytest.raises(ValueError, match="batch-rate-failed must be 0-1"):
        Knobs(batch_rate_failed=2)
    with pytest.raises(ValueError, match="batch-max-requests must be at least 1"):
        Knobs(batch_max_requests=0)
