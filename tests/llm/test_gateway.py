import logging
import time
import traceback
from decimal import Decimal

import httpx
import pytest

from apps.llm.costs import price_per_mtok
from apps.llm.errors import PermanentLLMError, RetryableLLMError
from apps.llm.gateway import RetryPolicy, complete
from apps.llm.models import CallStatus, LLMCall
from tests.factories import api_base, offline_model

QUESTION = [
    {"role": "user", "content": "<question>Someone logged into my email. What now?</question>"}
]
GRADE_SCHEMA = {
    "type": "object",
    "required": ["met", "explanation"],
    "properties": {"met": {"type": "boolean"}, "explanation": {"type": "string"}},
}
GRADE_MESSAGES = [
    {
        "role": "user",
        "content": "<question>q</question><response>Turn on two-factor authentication.</response>"
        '<criterion polarity="positive" kind="factual">Recommends two-factor authentication'
        "</criterion>",
    }
]
FAST = RetryPolicy(max_attempts=4, max_total_seconds=30, base_delay=0.05, max_delay=0.2)


def stats(base_url):
    return httpx.get(api_base(base_url) + "/stats").json()


def test_completion_records_tokens_cost_and_one_ledger_row(db, offline_provider):
    url = offline_provider()
    model = offline_model(url)

    result = complete(model=model, messages=QUESTION, purpose="sample", caller="test:1")

    assert result.text.strip()
    assert result.offline and result.attempts == 1
    assert result.input_tokens > 0 and result.output_tokens > 0
    expected = (
        Decimal("2.50") * result.input_tokens + Decimal("10.00") * result.output_tokens
    ) / Decimal(1_000_000)
    assert result.cost_usd == expected
    call = LLMCall.objects.get()
    assert (call.status, call.attempt, call.caller) == (CallStatus.OK, 1, "test:1")
    assert (call.input_tokens, call.output_tokens) == (result.input_tokens, result.output_tokens)
    assert call.cost_usd == pytest.approx(expected, abs=Decimal("0.000001"))


def test_a_call_marks_the_prompt_version_it_was_made_with_as_used(db, offline_provider_url):
    from apps.llm.selectors import prompt_current, prompt_render

    template = prompt_current(purpose="sample")
    assert template.used_at is None
    messages = prompt_render(template=template, variables={"question": "My email was hacked."})

    complete(
        model=offline_model(offline_provider_url),
        messages=messages,
        purpose="sample",
        prompt=template,
    )

    template.refresh_from_db()
    assert template.used_at is not None
    assert LLMCall.objects.get().prompt_template == template


def test_unknown_price_is_recorded_as_unknown_not_zero(db, offline_provider):
    model = offline_model(offline_provider(), input_price_per_mtok=None, output_price_per_mtok=None)
    result = complete(model=model, messages=QUESTION, purpose="sample")
    assert result.cost_usd is None
    assert LLMCall.objects.get().cost_usd is None


def test_rate_limits_are_retried_after_the_providers_retry_after(db, offline_provider):
    url = offline_provider(rate_429=1.0, retry_after=1)
    model = offline_model(url)

    started = time.monotonic()
    with pytest.raises(RetryableLLMError) as raised:
        complete(
            model=model, messages=QUESTION, purpose="sample", policy=RetryPolicy(max_attempts=3)
        )
    elapsed = time.monotonic() - started

    assert raised.value.attempts == 3
    assert elapsed >= 2.0, "two waits of at least Retry-After = 1 s each"
    statuses = list(LLMCall.objects.order_by("attempt").values_list("attempt", "status"))
    assert statuses == [(1, "rate_limited"), (2, "rate_limited"), (3, "rate_limited")]


def test_transient_faults_are_retried_until_an_answer(db, offline_provider):
    url = offline_provider(rate_429=0.3, rate_500=0.3, retry_after=0, fault_seed=7)
    model = offline_model(url)
    policy = RetryPolicy(max_attempts=20, base_delay=0.01, max_delay=0.05)
    results = [
        complete(model=model, messages=QUESTION, purpose="sample", caller=f"c{i}", policy=policy)
        for i in range(12)
    ]
    assert all(r.text for r in results)
    assert LLMCall.objects.filter(status=CallStatus.OK).count() == 12
    retried = LLMCall.objects.filter(attempt__gt=1).count()
    assert retried > 0 and retried == sum(r.attempts - 1 for r in results)
    assert set(LLMCall.objects.exclude(status="ok").values_list("status", flat=True)) <= {
        "rate_limited",
        "server_error",
    }


def test_a_400_from_the_provider_is_not_retried(db, offline_provider):
    url = offline_provider()
    model = offline_model(url, params={"offline_fault": "400"})
    with pytest.raises(PermanentLLMError) as raised:
        complete(model=model, messages=QUESTION, purpose="sample", policy=FAST)
    assert raised.value.attempts == 1
    assert raised.value.status == CallStatus.BAD_REQUEST
    assert stats(url)["requests"] == 1


def test_timeouts_are_retried_then_raised(db, offline_provider):
    url = offline_provider(rate_hang=1.0, hang_seconds=30)
    model = offline_model(url, timeout_seconds=1)
    with pytest.raises(RetryableLLMError) as raised:
        complete(
            model=model,
            messages=QUESTION,
            purpose="sample",
            policy=RetryPolicy(max_attempts=2, base_delay=0.01),
        )
    assert raised.value.status == CallStatus.TIMEOUT
    assert list(LLMCall.objects.values_list("status", flat=True)) == ["timeout", "timeout"]


def test_malformed_json_is_reasked_then_raised_naming_the_problem(db, offline_provider):
    url = offline_provider(rate_malformed=1.0)
    model = offline_model(url)
    with pytest.raises(PermanentLLMError) as raised:
        complete(
            model=model,
            messages=GRADE_MESSAGES,
            purpose="grade_criterion",
            schema=GRADE_SCHEMA,
            policy=RetryPolicy(schema_retries=2),
        )
    assert "not valid JSON" in str(raised.value)
    assert raised.value.attempts == 3
    assert LLMCall.objects.filter(status=CallStatus.INVALID_OUTPUT).count() == 3


def test_schema_mismatch_names_the_field(db, offline_provider):
    url = offline_provider()
    model = offline_model(url)
    schema = {**GRADE_SCHEMA, "required": ["met", "explanation", "confidence"]}
    with pytest.raises(PermanentLLMError, match="confidence"):
        complete(
            model=model,
            messages=GRADE_MESSAGES,
            purpose="grade_criterion",
            schema=schema,
            policy=RetryPolicy(schema_retries=1),
        )


def test_valid_structured_answer_is_parsed(db, offline_provider):
    model = offline_model(offline_provider())
    result = complete(
        model=model, messages=GRADE_MESSAGES, purpose="grade_criterion", schema=GRADE_SCHEMA
    )
    assert isinstance(result.data["met"], bool)


def test_requests_per_minute_hold_and_waiters_give_up_at_the_deadline(db, offline_provider):
    model = offline_model(offline_provider(), requests_per_minute=3)
    # The first three have time to spare on a busy machine; the waiters give up after 1 s.
    patient, waiter = RetryPolicy(max_total_seconds=30), RetryPolicy(max_total_seconds=1)
    outcomes = []
    for i in range(5):
        try:
            complete(
                model=model,
                messages=QUESTION,
                purpose="sample",
                caller=f"r{i}",
                policy=patient if i < 3 else waiter,
            )
            outcomes.append("ok")
        except RetryableLLMError as exc:
            assert "rate limits" in str(exc)
            outcomes.append("waited")
    assert outcomes == ["ok", "ok", "ok", "waited", "waited"]
    assert LLMCall.objects.count() == 3


def test_missing_key_variable_is_named(db, offline_provider, monkeypatch):
    monkeypatch.delenv("ASSAY_TEST_MISSING_KEY", raising=False)
    model = offline_model(offline_provider(), api_key_env="ASSAY_TEST_MISSING_KEY")
    with pytest.raises(PermanentLLMError, match="ASSAY_TEST_MISSING_KEY"):
        complete(model=model, messages=QUESTION, purpose="sample")


def test_the_key_never_reaches_logs_or_the_ledger(db, offline_provider, provider_key, caplog):
    secret = "sk-test-Zq8vVbM3Lr4c9XnP2tK7"
    provider_key("ASSAY_TEST_KEY", secret)
    url = offline_provider(rate_500=0.5, fault_seed=3)
    model = offline_model(url, api_key_env="ASSAY_TEST_KEY")
    caplog.set_level(logging.DEBUG)
    for i in range(6):
        complete(
            model=model,
            messages=QUESTION,
            purpose="sample",
            caller=f"k{i}",
            policy=FAST.__class__(max_attempts=10, base_delay=0.01),
        )
    with pytest.raises(PermanentLLMError):
        complete(
            model=offline_model(
                url, name="offline-x", api_key_env="ASSAY_TEST_KEY", params={"offline_fault": "400"}
            ),
            messages=QUESTION,
            purpose="sample",
        )
    assert LLMCall.objects.exclude(status="ok").exists()
    assert secret not in caplog.text
    for row in LLMCall.objects.values_list("error_message", "error_class", "caller"):
        assert all(secret not in value for value in row)


def test_a_real_provider_model_string_goes_through_litellm_with_its_price(
    db, offline_provider, provider_key
):
    # No provider is reachable from here, so the OpenAI route is pointed at the offline
    # server by api_base; litellm still prices the call from its own table for gpt-4.1.
    provider_key("ASSAY_TEST_OPENAI_KEY", "sk-test-not-a-real-key-123456")
    model = offline_model(
        offline_provider(),
        litellm_model="openai/gpt-4.1",
        api_key_env="ASSAY_TEST_OPENAI_KEY",
        input_price_per_mtok=None,
        output_price_per_mtok=None,
    )
    result = complete(model=model, messages=QUESTION, purpose="sample")
    assert not result.offline
    assert result.cost_usd is not None and result.cost_usd > 0


def exception_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and every exception it keeps, through `__cause__` and `__context__` alike."""
    seen, stack = [], [exc]
    while stack:
        current = stack.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        stack += [current.__cause__, current.__context__]
    return seen


@pytest.mark.parametrize(
    ("status", "error"),
    [(401, PermanentLLMError), (400, PermanentLLMError), (500, RetryableLLMError)],
)
def test_a_provider_that_echoes_the_key_leaves_it_nowhere_in_the_raised_chain(
    db, echoing_provider, provider_key, status, error
):
    secret = "sk-live-Hq4wT9cVx2Lm7pRz0aBn"
    provider_key("ASSAY_TEST_PAID_KEY", secret)
    model = offline_model(
        echoing_provider(status), litellm_model="openai/gpt-4.1", api_key_env="ASSAY_TEST_PAID_KEY"
    )

    with pytest.raises(error) as raised:
        complete(model=model, messages=QUESTION, purpose="sample", policy=FAST)

    chain = exception_chain(raised.value)
    assert len(chain) > 1, "a scrubbed description of the provider's error is kept as the cause"
    assert "[redacted]" in str(raised.value.__cause__)
    for exc in chain:
        for text in (str(exc), repr(exc), repr(exc.args)):
            assert secret not in text, f"{type(exc).__name__} holds the key"
    assert secret not in "".join(traceback.format_exception(raised.value))
    assert LLMCall.objects.exists()
    assert not LLMCall.objects.filter(error_message__contains=secret).exists()


def test_litellm_builds_requests_on_the_loop_and_everything_else_runs_in_threads(monkeypatch):
    import contextvars
    import functools
    import threading

    import litellm.main

    from apps.llm import gateway

    context = contextvars.copy_context()
    seen = []

    def completion(**keywords):  # stands for litellm's, which would build a request
        seen.append(threading.get_ident())
        if keywords.get("fail"):
            raise ValueError("bad request")
        return "built"

    monkeypatch.setattr(litellm.main, "completion", completion)

    def submitted(**keywords):  # what litellm's acompletion hands the loop's executor
        return functools.partial(context.run, functools.partial(completion, **keywords))

    assert gateway._builds_request(submitted(model="openai/offline-terse"))
    assert gateway._builds_request(submitted(model="x", custom_llm_provider="anthropic"))
    # Providers that refresh credentials over the network while building a request, and
    # anything that is not litellm's request building (a DNS lookup), keep their threads.
    assert not gateway._builds_request(submitted(model="vertex_ai/gemini-2.5-pro"))
    assert not gateway._builds_request(submitted(model="bedrock/anthropic.claude"))
    assert not gateway._builds_request(functools.partial(context.run, threading.get_ident))

    executor = gateway._InlineExecutor(max_workers=1)
    try:
        here = threading.get_ident()
        assert executor.submit(submitted(model="openai/offline-terse")).result(0) == "built"
        failing = executor.submit(submitted(model="openai/offline-terse", fail=True))
        assert failing.done()  # run inline: its outcome is there at once, an error included
        with pytest.raises(ValueError, match="bad request"):
            failing.result()
        assert seen == [here, here]
        assert executor.submit(threading.get_ident).result(5) != here
    finally:
        executor.shutdown()


def test_a_model_unknown_to_litellm_is_priced_by_litellm_as_ours_and_no_other(db, offline_provider):
    from apps.llm import gateway

    url = offline_provider()
    name = "offline-terse"
    priced = offline_model(url, name=name)  # $2.50 / $10 per Mtok by default
    result = complete(model=priced, messages=QUESTION, purpose="sample")
    lt = gateway.litellm_module()
    info = lt.get_model_info(priced.litellm_model)
    assert info["input_cost_per_token"] == pytest.approx(float(priced.input_price_per_mtok) / 1e6)
    expected = (
        priced.input_price_per_mtok * result.input_tokens
        + priced.output_price_per_mtok * result.output_tokens
    ) / Decimal(1_000_000)
    assert result.cost_usd == expected
    # The same litellm model string with no price of its own stays unknown, not the first's.
    unpriced = offline_model(
        url,
        name=name,
        display_name="Unpriced",
        input_price_per_mtok=None,
        output_price_per_mtok=None,
    )
    assert unpriced.pk != priced.pk and unpriced.litellm_model == priced.litellm_model
    assert complete(model=unpriced, messages=QUESTION, purpose="sample").cost_usd is None
    assert price_per_mtok(unpriced) is None  # nor does a run's estimate borrow it


def test_litellm_has_no_callback_and_sends_nothing_out(db, offline_provider_url):
    # The gateway leaves litellm's logging payload unredacted because nothing reads it: no
    # callback of any kind, no telemetry, even after calls have been made.
    from apps.llm import gateway

    litellm = gateway.litellm_module()
    complete(model=offline_model(offline_provider_url), messages=QUESTION, purpose="sample")
    assert litellm.telemetry is False
    for name in (
        "callbacks",
        "success_callback",
        "failure_callback",
        "_async_success_callback",
        "_async_failure_callback",
        "input_callback",
        "service_callback",
    ):
        assert getattr(litellm, name, []) == [], name


def test_a_nul_in_an_answer_is_replaced_so_that_the_answer_can_be_stored(
    db, answering_provider, provider_key
):
    provider_key("ASSAY_TEST_STAND_IN_KEY", "sk-test-stand-in")

    def model(content, name):
        return offline_model(
            answering_provider(content), name=name, api_key_env="ASSAY_TEST_STAND_IN_KEY"
        )

    plain = model("Change it\x00 now.", "stand-in")
    result = complete(model=plain, messages=QUESTION, purpose="sample", policy=FAST)
    assert result.text == "Change it\ufffd now."
    graded = model('{"explanation": "a NUL: \\u0000.", "met": true}', "stand-in-2")
    result = complete(
        model=graded,
        messages=GRADE_MESSAGES,
        purpose="grade_criterion",
        schema=GRADE_SCHEMA,
        policy=FAST,
    )
    assert result.data == {"explanation": "a NUL: \ufffd.", "met": True}
    # Both stored as they came back.
    LLMCall.objects.create(
        model=graded,
        purpose="sample",
        attempt=1,
        status=CallStatus.OK,
        error_message=result.data["explanation"] + result.text,
    )
