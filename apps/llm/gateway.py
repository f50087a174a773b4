"""Every model call in Assay goes through `complete` / `acomplete` (chat) or `embed` /
`aembed` (embeddings).

Underneath is litellm's async API; no provider SDK is called directly. The gateway adds
what a study needs on top: limits that every worker process shares (`apps.llm.limits`),
bounded retries with backoff and jitter that honour `Retry-After`, validation of
structured answers with bounded re-asks, costs, and a ledger row for every attempt.
It never returns a default in place of an answer: it returns a `Completion` (or
`Embedded`) or raises `RetryableLLMError` / `PermanentLLMError`.
"""

import asyncio
import concurrent.futures
import contextlib
import email.utils
import functools
import gc
import inspect
import json
import logging
import math
import os
import random
import re
import sys
import time
import weakref
from dataclasses import dataclass
from decimal import Decimal

import jsonschema
import redis.asyncio as aioredis
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings

from .errors import LLMError, PermanentLLMError, ProviderError, RetryableLLMError
from .limits import Adaptive, LimitChange, Limits
from .models import EMBED_PURPOSE, CallStatus, LLMCall, ModelConfig, PromptTemplate
from .params import ParamsError, key_destination_problem, params_check
from .services import limit_change_record, llm_calls_record

# litellm fetches its price table over the internet at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
log = logging.getLogger(__name__)
OFFLINE_API_KEY = "offline-demo"  # the offline provider accepts any key
NO_KEY = "no-key"  # what a model config that names no key sends to its own API base
MAX_ERROR_CHARS = 2000
REDIS_CONNECTIONS = 100  # per event loop
# How long at most a refused call of an adaptive model keeps its slot through its backoff
# (apps/llm/limits.py Slot.refused): long enough that a slot above the provider's limit meets
# a few 429s a second rather than hundreds, short enough that a probe one slot too far does
# not cost that slot for a whole Retry-After.
PARK_MAX_SECONDS = 0.5


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    max_total_seconds: float = 600.0
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0
    schema_retries: int = 2


DEFAULT_POLICY = RetryPolicy()


@dataclass(frozen=True)
class Completion:
    text: str
    data: dict | list | None
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None
    latency_ms: int
    attempts: int
    model_id: int
    offline: bool


@dataclass(frozen=True)
class Embedded:
    """The vectors of a list of texts, in their order, from one embeddings call."""

    vectors: list[list[float]]
    input_tokens: int
    cost_usd: Decimal | None
    latency_ms: int
    attempts: int
    model_id: int
    offline: bool


_litellm = None


def litellm_module():
    """Import litellm once, lazily (it costs seconds), with everything that sends data out off."""
    global _litellm
    if _litellm is None:
        import litellm

        litellm.telemetry = False
        litellm.success_callback = []
        litellm.failure_callback = []
        litellm.callbacks = []
        litellm.suppress_debug_info = True
        # No callback is ever set, so nothing reads litellm's logging payload and there is
        # nothing to redact it for: with this on, litellm copied and redacted every call's
        # payload all the same, about 5% of a grading call's CPU (benchmarks/run_at_scale.py).
        # Adding a callback means turning it back on.
        litellm.turn_off_message_logging = False
        litellm.drop_params = False
        # The gateway retries, and records, every attempt itself. litellm reads max_retries=0
        # as "unset" on its OpenAI embedding path (`max_retries or DEFAULT_MAX_RETRIES`), so the
        # SDK would retry each attempt twice more, unseen by the ledger and the limits.
        litellm.DEFAULT_MAX_RETRIES = 0
        _litellm = litellm
    return _litellm


# Providers whose requests litellm builds without I/O of its own (no credential files or
# token refreshes), so that building one can run on the event loop (`_InlineExecutor`).
INLINE_PROVIDERS = frozenset(
    {
        "openai",
        "anthropic",
        "gemini",
        "mistral",
        "groq",
        "deepseek",
        "openrouter",
        "xai",
        "together_ai",
        "fireworks_ai",
        "perplexity",
        "cohere",
        "hosted_vllm",
        "ollama",
    }
)


class _InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """The default executor of the event loops the gateway runs (a batch's, `complete`'s).

    litellm's `acompletion` builds each request by running its synchronous `completion` in
    the loop's default executor. That is a few milliseconds of pure CPU, and handing it to a
    thread costs more than it saves: two thread switches per call and a contended GIL,
    which delays every other response the loop is waiting to read; at a concurrency limit
    of 16 the provider saw 12.4 calls in flight instead of 14 (benchmarks/run_at_scale.py).
    So that one function runs inline, for the providers in INLINE_PROVIDERS; everything
    else (DNS lookups, other providers' credential refreshes) goes to threads as before.
    """

    def submit(self, fn, /, *args, **kwargs):
        if not args and not kwargs and _builds_request(fn):
            future: concurrent.futures.Future = concurrent.futures.Future()
            try:
                future.set_result(fn())
            except BaseException as exc:  # delivered to the awaiting call, as from a thread
                future.set_exception(exc)
            return future
        return super().submit(fn, *args, **kwargs)


def _builds_request(fn) -> bool:
    # litellm submits partial(context.run, partial(completion, model=..., ...)).
    if not (isinstance(fn, functools.partial) and fn.args):
        return False
    inner = fn.args[0]
    main = sys.modules.get("litellm.main")
    if main is None or not isinstance(inner, functools.partial):
        return False
    if inner.func is not main.completion and inner.func is not main.embedding:
        return False
    model = str(inner.keywords.get("model") or "")
    provider = inner.keywords.get("custom_llm_provider") or model.partition("/")[0]
    return provider in INLINE_PROVIDERS


def loop_setup() -> None:
    """Call first in an event loop the caller owns and will close with `aclose_loop`."""
    asyncio.get_running_loop().set_default_executor(_InlineExecutor(max_workers=4))


_registered: dict[str, tuple] = {}  # litellm model names litellm did not know: our prices
_known: set[str] = set()  # names litellm has prices for


def _price_register(model: ModelConfig) -> None:
    """Tell litellm the prices of a model it does not know. litellm prices every response
    itself as it logs it, and for a model missing from its table it first searches for a
    near match, which cost more CPU per call than the rest of its handling; with the price
    registered it is a lookup. Our costs come from `_cost` either way."""
    if model.input_price_per_mtok is None and model.output_price_per_mtok is None:
        return
    price = (model.input_price_per_mtok or 0, model.output_price_per_mtok or 0)
    name = model.litellm_model
    if _registered.get(name) == price or name in _known:
        return
    lt = litellm_module()
    if name not in _registered:
        try:
            lt.get_model_info(name)
        except Exception:
            log.debug("litellm has no price for %s: registering the model's own", name)
        else:
            _known.add(name)  # its lookup is cheap, and its table stays its own
            return
    lt.register_model(
        {
            model.litellm_model: {
                "input_cost_per_token": float(price[0]) / 1_000_000,
                "output_cost_per_token": float(price[1]) / 1_000_000,
                # Our prices have no cached-token rates; said so, litellm does not warn.
                "cache_creation_input_token_cost": 0.0,
                "cache_read_input_token_cost": 0.0,
                "litellm_provider": model.litellm_model.rpartition("/")[0] or "openai",
                "mode": "embedding" if model.serves_embeddings else "chat",
            }
        }
    )
    _registered[model.litellm_model] = price


def litellm_priced_by_us(name: str) -> bool:
    """Whether litellm's price for the litellm model `name` is one we told it, from some
    model's own prices (`_price_register`): then it is no price of litellm's to use for a
    model that has none."""
    return name in _registered


_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis]" = (
    weakref.WeakKeyDictionary()
)
_ledgers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Ledger]" = (
    weakref.WeakKeyDictionary()
)


class Ledger:
    """Writes ledger rows with group commit: concurrent calls share one INSERT.

    Each caller still waits until its own row is stored, so nothing is reported done that
    the ledger does not hold; but while one INSERT runs, the rows that arrive meanwhile
    queue up and go together in the next, so writing costs one round trip per burst
    instead of one per call. The INSERT runs in the thread that owns the database
    connection (thread-sensitive `sync_to_async`).
    """

    def __init__(self):
        self.pending: list[tuple[LLMCall, asyncio.Future]] = []
        self.flushing = False
        self.insert = sync_to_async(llm_calls_record)

    async def write(self, **fields) -> None:
        future = asyncio.get_running_loop().create_future()
        self.pending.append((LLMCall(**fields), future))
        if not self.flushing:
            self.flushing = True
            try:
                while self.pending:
                    batch, self.pending = self.pending, []
                    try:
                        await self.insert(calls=[row for row, _ in batch])
                    except Exception as exc:
                        for _, waiting in batch:
                            waiting.set_exception(exc)
                    else:
                        for _, waiting in batch:
                            waiting.set_result(None)
            finally:
                self.flushing = False
        await future


def _ledger() -> Ledger:
    loop = asyncio.get_running_loop()
    ledger = _ledgers.get(loop)
    if ledger is None:
        ledger = _ledgers[loop] = Ledger()
    return ledger


def _redis() -> aioredis.Redis:
    # redis.asyncio connections belong to the loop that opened them.
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        # A blocking pool: past its size a call waits for a connection instead of failing
        # with MaxConnectionsError (each call in flight holds at most one at a time).
        pool = aioredis.BlockingConnectionPool.from_url(
            settings.REDIS_URL, max_connections=REDIS_CONNECTIONS, timeout=None
        )
        client = aioredis.Redis(connection_pool=pool)
        _clients[loop] = client
    return client


async def aclose_loop() -> None:
    """Close what this event loop opened: its Redis client and the HTTP clients litellm made
    for it. Call it before the loop ends (each batch and each `complete` runs a loop of its
    own). litellm caches its clients per event loop and keeps them for ten minutes, so
    without this every batch would leave its keep-alive connections to the provider open
    after its loop ended: thousands of sockets per worker process over a long run
    (benchmarks/run_at_scale.py ran out of file descriptors)."""
    loop = asyncio.get_running_loop()
    _ledgers.pop(loop, None)
    client = _clients.pop(loop, None)
    if client is not None:
        await client.aclose()
    await _aclose_litellm_clients()


async def _aclose_litellm_clients() -> None:
    from litellm.caching.evicted_client_closer import running_loop_token

    cache = litellm_module().in_memory_llm_clients_cache
    suffix = f"-{running_loop_token()}"  # how litellm scopes a cached client to its loop
    for key in [k for k in list(cache.cache_dict) if str(k).endswith(suffix)]:
        held = cache.cache_dict.pop(key, None)
        cache.ttl_dict.pop(key, None)
        close = getattr(held, "aclose", None) or getattr(held, "close", None)
        if close is None:
            continue
        with contextlib.suppress(Exception):  # a client that cannot close holds nothing open
            result = close()
            if inspect.isawaitable(result):
                await result


def limits_for(model: ModelConfig) -> Limits:
    adaptive = None
    if model.adapts_concurrency:
        record = functools.partial(_limit_change_write, model.pk)
        adaptive = Adaptive(
            floor=model.concurrency_floor,
            record=record,
            identity=f"{model.created_at.timestamp():.6f}" if model.created_at else "",
        )
    return Limits(
        _redis(),
        key=f"assay:llm:model:{model.pk}",
        max_concurrent=model.max_concurrent,
        requests_per_minute=model.requests_per_minute,
        tokens_per_minute=model.tokens_per_minute,
        lease_seconds=model.timeout_seconds + 30,
        call_seconds=model.timeout_seconds,
        adaptive=adaptive,
    )


_limit_change_store = sync_to_async(limit_change_record)


async def _limit_change_write(model_id: int, change: LimitChange) -> None:
    await _limit_change_store(model_id=model_id, change=change)


def _api_key(model: ModelConfig) -> str | None:
    """The key a call of `model` carries, once it is sure to go only where that key may
    (apps/llm/params.py)."""
    if model.api_key_env:
        key = os.environ.get(model.api_key_env)
        if not key:
            raise PermanentLLMError(
                f"The environment variable {model.api_key_env} named by model "
                f"{model.display_name!r} is not set.",
                status=CallStatus.AUTH_ERROR,
            )
        problem = key_destination_problem(
            litellm_model=model.litellm_model,
            api_base=model.api_base,
            api_key_env=model.api_key_env,
        )
        if problem:
            raise PermanentLLMError(
                f"{model.display_name}: {problem}", status=CallStatus.AUTH_ERROR
            )
        return key
    if model.is_offline:
        return OFFLINE_API_KEY
    # Named no key but an API base: without a key of its own, litellm would send its
    # provider's default variable (OPENAI_API_KEY, ...) to that base.
    return NO_KEY if model.api_base else None


def _scrub(message: str, secret: str | None) -> str:
    if secret and secret != OFFLINE_API_KEY:
        message = message.replace(secret, "[redacted]")
    return message[:MAX_ERROR_CHARS]


@dataclass(frozen=True)
class _Failure:
    """A failed attempt, as far as it may leave the gateway: nothing here holds the key."""

    status: str
    retryable: bool
    error_class: str
    message: str
    retry_after: float | None
    window_spent: float  # seconds until the provider's request window resets, if it is spent

    @classmethod
    def of(cls, exc: Exception, secret: str | None) -> "_Failure":
        status, retryable = classify(exc)
        retry_after = _retry_after(exc)
        return cls(
            status=status,
            retryable=retryable,
            error_class=type(exc).__name__,
            message=_scrub(f"{exc}", secret),
            retry_after=retry_after,
            window_spent=_window_spent(exc, retry_after)
            if status == CallStatus.RATE_LIMITED
            else 0,
        )

    def cause(self) -> ProviderError:
        return ProviderError(f"{self.error_class}: {self.message}")


def _headers(exc: Exception):
    headers = None
    response = getattr(exc, "response", None)
    if response is not None:
        headers = getattr(response, "headers", None)
    headers = headers or getattr(exc, "litellm_response_headers", None) or {}
    return headers if hasattr(headers, "get") else {}


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def _window_spent(exc: Exception, retry_after: float | None) -> float:
    """Seconds until the provider's request window resets, when its 429 says the window is
    spent (OpenAI's `x-ratelimit-remaining-requests: 0`, with `x-ratelimit-reset-requests`
    such as "6m0s", or else Retry-After); 0 when it does not say so (a limit on requests at
    once, say, which a freed slot ends)."""
    headers = _headers(exc)
    if str(headers.get("x-ratelimit-remaining-requests", "")).strip() != "0":
        return 0.0
    reset = str(headers.get("x-ratelimit-reset-requests", "")).strip()
    parts = _DURATION.findall(reset)
    if parts and "".join(n + u for n, u in parts) == reset:
        return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return retry_after or 0.0


def _retry_after(exc: Exception) -> float | None:
    headers = _headers(exc)
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # a header we cannot read: back off as if none had been sent
    return max(0.0, when.timestamp() - time.time())


def classify(exc: Exception) -> tuple[str, bool]:
    """(status, retryable) for an exception raised by litellm or the transport."""
    lt = litellm_module()
    if isinstance(exc, lt.RateLimitError):
        return CallStatus.RATE_LIMITED, True
    if isinstance(exc, lt.Timeout | asyncio.TimeoutError | TimeoutError):
        return CallStatus.TIMEOUT, True
    if isinstance(exc, lt.AuthenticationError | lt.PermissionDeniedError):
        return CallStatus.AUTH_ERROR, False
    if isinstance(exc, lt.BadRequestError | lt.NotFoundError | lt.UnprocessableEntityError):
        return CallStatus.BAD_REQUEST, False
    if isinstance(exc, lt.InternalServerError | lt.ServiceUnavailableError | lt.BadGatewayError):
        return CallStatus.SERVER_ERROR, True
    if isinstance(exc, lt.APIConnectionError):
        return CallStatus.CONNECTION_ERROR, True
    code = getattr(exc, "status_code", None)
    if isinstance(code, int):
        if code == 429:
            return CallStatus.RATE_LIMITED, True
        if code == 408:
            return CallStatus.TIMEOUT, True
        if code >= 500:
            return CallStatus.SERVER_ERROR, True
        if 400 <= code < 500:
            return CallStatus.BAD_REQUEST, False
    return CallStatus.OTHER, False


def _backoff(policy: RetryPolicy, attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        # Honour the provider's word, plus a little jitter so waiters don't return together.
        return min(retry_after, policy.max_retry_after) + random.uniform(0, policy.base_delay)
    # "Full jitter" exponential backoff.
    return random.uniform(0, min(policy.max_delay, policy.base_delay * 2 ** (attempt - 1)))


def _cost(model: ModelConfig, response, input_tokens: int, output_tokens: int) -> Decimal | None:
    if model.input_price_per_mtok is not None or model.output_price_per_mtok is not None:
        per_in = model.input_price_per_mtok or Decimal(0)
        per_out = model.output_price_per_mtok or Decimal(0)
        return (per_in * input_tokens + per_out * output_tokens) / Decimal(1_000_000)
    if litellm_priced_by_us(model.litellm_model):
        return None  # litellm knows its price only from another model's settings
    try:
        cost = litellm_module().completion_cost(completion_response=response)
    except Exception:
        return None  # litellm does not know this model's price; the ledger shows it as unknown
    return Decimal(str(cost)).quantize(Decimal("0.000001"))


_validators: dict[int, tuple[dict, jsonschema.Draft202012Validator]] = {}


def _validator(schema: dict) -> jsonschema.Draft202012Validator:
    # Callers pass the same schema object call after call (a module's constant): build its
    # validator once. Keyed by identity, holding the schema so that the id stays its own.
    held = _validators.get(id(schema))
    if held is None or held[0] is not schema:
        if len(_validators) > 256:
            _validators.clear()
        held = _validators[id(schema)] = (schema, jsonschema.Draft202012Validator(schema))
    return held[1]


def _storable(value):
    """`value` with every NUL character, which PostgreSQL's text cannot hold, replaced by
    U+FFFD: a model's answer that has one (raw, or `\\u0000` in its JSON) is stored, not a
    write that fails for every result recorded with it."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    return value


def _validate(text: str, schema: dict) -> tuple[dict | list | None, str | None]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"the answer is not valid JSON ({exc.msg} at character {exc.pos})"
    if "\\u0000" in text:
        data = _storable(data)
    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the top level"
        return None, f"the JSON does not match the schema at {where}: {error.message}"
    return data, None


def _estimate_tokens(messages: list[dict], params: dict) -> int:
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return chars // 4 + int(params.get("max_tokens") or 0)


async def _answered(
    *,
    model: ModelConfig,
    purpose: str,
    caller: str,
    prompt: PromptTemplate | None,
    policy: RetryPolicy,
    limits: Limits,
    estimate: int,
    started: float,
    deadline: float,
    attempt: int,
    api_key: str | None,
    send,
    tokens,
) -> tuple[object, int, int]:
    """Send a request (`send()` makes the litellm call) until the provider answers: each
    attempt within the model's shared limits, a failed one recorded in the ledger and, if
    retryable, tried again after a backoff, within `policy`. (response, its latency in ms,
    the attempts made so far, counting from `attempt`); `tokens(response)` is what the
    answer cost the model's token window."""
    loop = asyncio.get_running_loop()
    record = _ledger().write
    while True:
        attempt += 1
        try:
            slot = await limits.acquire(estimate_tokens=estimate, deadline=deadline)
        except TimeoutError as exc:
            raise RetryableLLMError(
                f"{model.display_name}: {exc} ({attempt - 1} attempts made)",
                status=CallStatus.RATE_LIMITED,
                attempts=attempt - 1,
            ) from exc
        sent = loop.time()
        try:
            # The per-attempt timeout stays the model's constant: litellm keys its cached HTTP
            # clients on it, and a varying value would open a new client (and connection)
            # per call. The overall deadline is enforced around the call instead.
            async with asyncio.timeout(max(1.0, deadline - sent)):
                response = await send()
        except Exception as exc:
            # Only a scrubbed description leaves this block: the provider's exception may
            # hold the key, and anything raised in here would keep it as `__context__`.
            failure = _Failure.of(exc, api_key)
        else:
            failure = None
        latency_ms = round((loop.time() - sent) * 1000)
        if failure is None:
            await slot.release(actual_tokens=tokens(response), outcome="ok", latency_ms=latency_ms)
            return response, latency_ms, attempt
        try:
            limited = failure.status == CallStatus.RATE_LIMITED
            if limited:
                # An adaptive limit is cut now, and the slot kept through the backoff below
                # (Slot.refused); a fixed limit's slot is freed at once, as after any failure.
                await slot.refused(hold_seconds=failure.window_spent)
            if not (limited and limits.adaptive):
                await slot.release()
            status, message = failure.status, failure.message
            await record(
                model=model,
                purpose=purpose,
                caller=caller,
                attempt=attempt,
                status=status,
                error_class=failure.error_class,
                error_message=message,
                latency_ms=latency_ms,
                prompt_template=prompt,
            )
            if not failure.retryable:
                raise PermanentLLMError(
                    f"{model.display_name}: {message}", status=status, attempts=attempt
                ) from failure.cause()
            delay = _backoff(policy, attempt, failure.retry_after)
            if attempt >= policy.max_attempts or loop.time() + delay > deadline:
                raise RetryableLLMError(
                    f"{model.display_name}: gave up after {attempt} attempts in "
                    f"{loop.time() - started:.1f} s; last error: {message}",
                    status=status,
                    attempts=attempt,
                ) from failure.cause()
            parked = min(delay, PARK_MAX_SECONDS) if not slot.released else 0.0
            await asyncio.sleep(parked)
        finally:
            await slot.release()
        await asyncio.sleep(delay - parked)


def _chat_tokens(response) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    return (
        int(getattr(usage, "prompt_tokens", 0) or 0),
        int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _call_params(model: ModelConfig, params: dict | None) -> dict:
    """The call's parameters: the model's, then `params`, checked."""
    try:
        return params_check(
            {**(model.params or {}), **(params or {})}, offline=model.is_offline, per_call=True
        )
    except ParamsError as exc:
        raise PermanentLLMError(
            f"{model.display_name}: {exc}", status=CallStatus.BAD_REQUEST
        ) from None


def _connection(
    model: ModelConfig, purpose: str, params: dict | None = None
) -> tuple[dict, dict, str | None]:
    """(the call's parameters: the model's, then `params`; the connection's litellm
    arguments; the API key)."""
    call_params = _call_params(model, params)
    extra: dict = {}
    if model.api_base:
        extra["api_base"] = model.api_base
    headers = {}
    if model.is_offline:
        # Lets the offline provider answer in kind; real providers never see these headers.
        headers["X-Assay-Purpose"] = purpose
        if fault := call_params.pop("offline_fault", None):
            headers["X-Offline-Faults"] = fault
    if headers:
        extra["extra_headers"] = headers
    return call_params, extra, _api_key(model)


def _kind_check(model: ModelConfig, *, embeddings: bool) -> None:
    if model.serves_embeddings != embeddings:
        served, asked = (
            ("embeddings", "chat completion")
            if model.serves_embeddings
            else ("chat completions", "embedding")
        )
        raise PermanentLLMError(
            f"{model.display_name} serves {served} (its kind, in the console): it cannot be "
            f"asked for an {asked}.",
            status=CallStatus.BAD_REQUEST,
        )


async def acomplete(
    *,
    model: ModelConfig,
    messages: list[dict],
    purpose: str,
    params: dict | None = None,
    schema: dict | None = None,
    check=None,
    caller: str = "",
    prompt: PromptTemplate | None = None,
    policy: RetryPolicy = DEFAULT_POLICY,
) -> Completion:
    """One chat completion, retried and validated. `schema` (JSON Schema) makes the answer
    structured: it must parse and match, and then pass `check(data)` (a callable that
    returns a problem to tell the model, or None), or the model is asked again, at most
    `policy.schema_retries` times. The completion's cost includes those re-asks."""
    _kind_check(model, embeddings=False)
    lt = litellm_module()
    _price_register(model)
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + policy.max_total_seconds
    call_params, extra, api_key = _connection(model, purpose, params)
    limits = limits_for(model)
    estimate = _estimate_tokens(messages, call_params)
    record = _ledger().write
    caller = caller[:200]
    conversation = list(messages)
    attempt = invalid_answers = 0
    spent = None  # the cost of answers that failed validation, paid all the same

    def send():
        return lt.acompletion(
            model=model.litellm_model,
            messages=conversation,
            api_key=api_key,
            timeout=model.timeout_seconds,
            num_retries=0,
            max_retries=0,
            **extra,
            **call_params,
        )

    while True:
        response, latency_ms, attempt = await _answered(
            model=model,
            purpose=purpose,
            caller=caller,
            prompt=prompt,
            policy=policy,
            limits=limits,
            estimate=estimate,
            started=started,
            deadline=deadline,
            attempt=attempt,
            api_key=api_key,
            send=send,
            tokens=lambda r: sum(_chat_tokens(r)),
        )
        input_tokens, output_tokens = _chat_tokens(response)
        text = _storable(response.choices[0].message.content or "")
        cost = _cost(model, response, input_tokens, output_tokens)
        data = None
        if schema is not None:
            data, problem = _validate(text, schema)
            if problem is None and check is not None:
                problem = check(data)
                data = data if problem is None else None
            if problem:
                if cost is not None:
                    spent = (spent or Decimal(0)) + cost
                invalid_answers += 1
                await record(
                    model=model,
                    purpose=purpose,
                    caller=caller,
                    attempt=attempt,
                    status=CallStatus.INVALID_OUTPUT,
                    error_class="InvalidAnswer",
                    error_message=f"{problem}. Answer began: {text[:300]!r}",
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    cost_usd=cost,
                    latency_ms=latency_ms,
                    prompt_template=prompt,
                )
                if invalid_answers > policy.schema_retries:
                    error = PermanentLLMError(
                        f"{model.display_name}: the answer failed validation "
                        f"{invalid_answers} times; last problem: {problem}",
                        status=CallStatus.INVALID_OUTPUT,
                        attempts=attempt,
                    )
                    error.cost_usd, error.last_output = spent, text
                    raise error
                conversation = [
                    *messages,
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": f"That answer could not be used: {problem}. Reply again "
                        "with only the JSON object, matching the schema exactly.",
                    },
                ]
                continue
        await record(
            model=model,
            purpose=purpose,
            caller=caller,
            attempt=attempt,
            status=CallStatus.OK,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
            latency_ms=latency_ms,
            prompt_template=prompt,
        )
        if spent is not None:
            cost = spent + (cost or Decimal(0))
        return Completion(
            text=text,
            data=data,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
            latency_ms=round((loop.time() - started) * 1000),
            attempts=attempt,
            model_id=model.pk,
            offline=model.is_offline,
        )


def _vectors(response, count: int) -> tuple[list[list[float]] | None, str]:
    """The vectors of an embeddings answer in the order of the texts, or None and what is
    wrong with it: one per text, each a non-empty list of finite numbers, all one length."""
    items = list(getattr(response, "data", None) or [])
    if len(items) != count:
        return None, f"{len(items)} vectors for {count} texts"
    by_index = {}
    for position, item in enumerate(items):
        get = item.get if isinstance(item, dict) else functools.partial(getattr, item)
        index = get("index", position)
        by_index[index if isinstance(index, int) else position] = get("embedding", None)
    if sorted(by_index) != list(range(count)):
        return None, "the vectors' indices are not those of the texts"
    vectors = [by_index[i] for i in range(count)]
    lengths = {len(v) if isinstance(v, list) else -1 for v in vectors}
    if len(lengths) != 1 or lengths.pop() <= 0:
        return None, "the vectors are not lists of numbers of one length"
    for vector in vectors:
        if not all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            for x in vector
        ):
            return None, "a vector holds something other than a finite number"
    return [[float(x) for x in v] for v in vectors], ""


async def aembed(
    *,
    model: ModelConfig,
    texts: list[str],
    caller: str = "",
    policy: RetryPolicy = DEFAULT_POLICY,
) -> Embedded:
    """The embeddings of `texts` (one call, through litellm's `aembedding`), with the same
    shared limits, retries and ledger as a chat completion. An answer that is not one
    vector per text, all of one length, is recorded as invalid output and raised as a
    PermanentLLMError, never returned. Keeping vectors so that a text is not embedded twice
    is apps/llm/embeddings.py's part."""
    _kind_check(model, embeddings=True)
    texts = list(texts)
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        raise PermanentLLMError(
            "Embeddings need at least one text, and no empty text.", status=CallStatus.BAD_REQUEST
        )
    lt = litellm_module()
    _price_register(model)
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + policy.max_total_seconds
    call_params, extra, api_key = _connection(model, EMBED_PURPOSE)
    limits = limits_for(model)
    caller = caller[:200]

    def send():
        return lt.aembedding(
            model=model.litellm_model,
            input=texts,
            api_key=api_key,
            timeout=model.timeout_seconds,
            num_retries=0,
            max_retries=0,
            **extra,
            **call_params,
        )

    response, latency_ms, attempt = await _answered(
        model=model,
        purpose=EMBED_PURPOSE,
        caller=caller,
        prompt=None,
        policy=policy,
        limits=limits,
        estimate=sum(len(t) for t in texts) // 4,
        started=started,
        deadline=deadline,
        attempt=0,
        api_key=api_key,
        send=send,
        tokens=lambda r: _chat_tokens(r)[0],
    )
    input_tokens = _chat_tokens(response)[0]
    cost = _cost(model, response, input_tokens, 0)
    vectors, problem = _vectors(response, len(texts))
    record = _ledger().write
    if vectors is None:
        await record(
            model=model,
            purpose=EMBED_PURPOSE,
            caller=caller,
            attempt=attempt,
            status=CallStatus.INVALID_OUTPUT,
            error_class="InvalidAnswer",
            error_message=f"The embeddings answer is unusable: {problem}.",
            input_tokens=input_tokens,
            cost_usd=cost,
            latency_ms=latency_ms,
        )
        error = PermanentLLMError(
            f"{model.display_name}: the embeddings answer is unusable: {problem}.",
            status=CallStatus.INVALID_OUTPUT,
            attempts=attempt,
        )
        error.cost_usd = cost
        raise error
    await record(
        model=model,
        purpose=EMBED_PURPOSE,
        caller=caller,
        attempt=attempt,
        status=CallStatus.OK,
        input_tokens=input_tokens,
        cost_usd=cost,
        latency_ms=latency_ms,
    )
    return Embedded(
        vectors=vectors,
        input_tokens=input_tokens,
        cost_usd=cost,
        latency_ms=round((loop.time() - started) * 1000),
        attempts=attempt,
        model_id=model.pk,
        offline=model.is_offline,
    )


def _run_sync(call, kwargs: dict):
    """Run the gateway's coroutine function `call(**kwargs)` from synchronous code, in a
    loop of its own that it closes.

    `async_to_sync` runs the ledger writes (thread-sensitive `sync_to_async`) back in the
    calling thread, so they share its database connection and transaction.
    """

    async def run():
        loop_setup()
        try:
            return await call(**kwargs)
        finally:
            await aclose_loop()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return async_to_sync(run)()
    # Called from a thread that already runs a loop: use a loop of our own elsewhere.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(async_to_sync(run)).result()


def complete(**kwargs) -> Completion:
    """The synchronous form of `acomplete`, for tasks and services that are not async."""
    return _run_sync(acomplete, kwargs)


def embed(**kwargs) -> Embedded:
    """The synchronous form of `aembed`."""
    return _run_sync(aembed, kwargs)


# --- The batch API, in OpenAI's shape through litellm (apps/llm/batches.py drives it) --------

BATCH_ENDPOINT = "/v1/chat/completions"
BATCH_WINDOW = "24h"
BATCH_ENDED = frozenset({"completed", "expired", "cancelled", "failed"})
# Error codes of a line the provider never ran: its batch expired or was cancelled first.
BATCH_NOT_RUN = frozenset({"batch_expired", "batch_cancelled"})
BATCH_FIND_PAGES = 20  # of 100 batches each, searched for one whose creation went unrecorded


class BatchGone(PermanentLLMError):
    """The provider does not know the batch (404): it was deleted, or the provider forgot."""


def batch_body(*, model: ModelConfig, messages: list[dict], purpose: str, params: dict) -> dict:
    """A chat request as a line of a batch input file carries it: the request a live call
    of the model sends, with the same parameters (and the seed)."""
    call_params = _call_params(model, params)
    call_params.pop("offline_fault", None)  # a live call's fault; batches have their own knobs
    body = {
        "model": model.litellm_model.partition("/")[2] or model.litellm_model,
        "messages": messages,
        **call_params,
    }
    if model.is_offline:
        # Lets the offline provider answer in kind, as X-Assay-Purpose does for a live call.
        body["metadata"] = {"assay_purpose": purpose}
    return body


def _batch_provider(model: ModelConfig, what: str, call):
    """`call(**connection)` against the model's provider, its failure raised as an LLMError
    that holds no key (retryable or not, as a live call's would be).

    litellm builds an OpenAI client, with an HTTP client and a TLS context of its own, for
    each of these calls and leaves it in reference cycles, about 12 kB each outside Python's
    heap and a TLS context of about a megabyte inside it, which only a full collection frees:
    a worker, whose collector runs seldom (engine.GC_THRESHOLDS), piled them up by thousands,
    and one collection per poll still let a poll's dozens live at once (benchmarks/
    providers.py --part batch). So each call collects; apps/llm/batches.py makes few calls
    (one listing reads every open batch of a provider)."""
    _kind_check(model, embeddings=False)
    api_key = _api_key(model)
    connection = {
        "custom_llm_provider": model.litellm_model.partition("/")[0],
        "api_key": api_key,
        "timeout": model.timeout_seconds,
    }
    if model.api_base:
        connection["api_base"] = model.api_base
    try:
        return call(**connection)
    except Exception as exc:
        failure, gone = _Failure.of(exc, api_key), getattr(exc, "status_code", None) == 404
    finally:
        gc.collect()  # see above

    message = f"{model.display_name}: {what}: {failure.error_class}: {failure.message}"
    if gone:
        raise BatchGone(message, status=CallStatus.BAD_REQUEST) from failure.cause()
    kind = RetryableLLMError if failure.retryable else PermanentLLMError
    raise kind(message, status=failure.status) from failure.cause()


def _batch_state(batch) -> dict:
    counts = getattr(batch, "request_counts", None)
    errors = getattr(batch, "errors", None)
    problems = [
        f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}"
        + (f" (line {e.line})" if getattr(e, "line", None) else "")
        for e in (getattr(errors, "data", None) or [])
    ]
    return {
        "id": batch.id,
        "status": batch.status,
        "input_file_id": batch.input_file_id or "",
        "output_file_id": batch.output_file_id or "",
        "error_file_id": batch.error_file_id or "",
        "completed": getattr(counts, "completed", 0) or 0,
        "failed": getattr(counts, "failed", 0) or 0,
        "metadata": dict(batch.metadata or {}),
        "errors": "; ".join(problems)[:MAX_ERROR_CHARS],
    }


def batch_create(*, model: ModelConfig, content: bytes, filename: str, metadata: dict) -> dict:
    """Upload a batch input file (JSON Lines of `batch_body` requests) and create its batch;
    the batch as the provider describes it."""
    lt = litellm_module()
    uploaded = _batch_provider(
        model,
        "uploading the batch file",
        lambda **c: lt.create_file(file=(filename, content), purpose="batch", **c),
    )
    created = _batch_provider(
        model,
        "creating the batch",
        lambda **c: lt.create_batch(
            completion_window=BATCH_WINDOW,
            endpoint=BATCH_ENDPOINT,
            input_file_id=uploaded.id,
            metadata=metadata,
            **c,
        ),
    )
    return _batch_state(created)


def _batch_pages(model: ModelConfig):
    """The provider's batches (`_batch_state`s), newest first, a page of 100 at a time (at
    most BATCH_FIND_PAGES pages)."""
    lt = litellm_module()
    after = None
    for _ in range(BATCH_FIND_PAGES):
        page = _batch_provider(
            model,
            "listing batches",
            lambda **c: lt.list_batches(after=after, limit=100, **c),  # noqa: B023
        )
        batches = [_batch_state(batch) for batch in getattr(page, "data", None) or []]
        more = bool(getattr(page, "has_more", False))
        del page  # it holds its client (for a next page): collected with it
        gc.collect()
        yield batches
        if not batches or not more:
            return
        after = batches[-1]["id"]


def batch_find(*, model: ModelConfig, metadata: dict) -> dict | None:
    """The provider's batch whose metadata holds `metadata`, among its newest, if any: one
    whose creation went through but was never recorded (its worker died in between)."""
    for batches in _batch_pages(model):
        for batch in batches:
            if all(batch["metadata"].get(k) == v for k, v in metadata.items()):
                return batch
    return None


def batch_states(*, model: ModelConfig, batch_ids: set[str]) -> dict[str, dict]:
    """The batches `batch_ids` as the provider lists them, among its newest: those of every
    model that shares this one's provider, address and key, in a call or a few rather than
    one each. A batch not found there is not in the result (`batch_retrieve` reads it)."""
    found: dict[str, dict] = {}
    for batches in _batch_pages(model):
        found |= {batch["id"]: batch for batch in batches if batch["id"] in batch_ids}
        if len(found) == len(batch_ids):
            break
    return found


def batch_connection(model: ModelConfig) -> tuple[str, str, str]:
    """What decides where a model's batch calls go and with which key: models that share it
    share one listing (`batch_states`)."""
    return (model.litellm_model.partition("/")[0], model.api_base, model.api_key_env)


def batch_retrieve(*, model: ModelConfig, batch_id: str) -> dict:
    lt = litellm_module()
    return _batch_state(
        _batch_provider(
            model, "reading the batch", lambda **c: lt.retrieve_batch(batch_id=batch_id, **c)
        )
    )


def batch_cancel(*, model: ModelConfig, batch_id: str) -> dict:
    lt = litellm_module()
    return _batch_state(
        _batch_provider(
            model, "cancelling the batch", lambda **c: lt.cancel_batch(batch_id=batch_id, **c)
        )
    )


def batch_file(*, model: ModelConfig, file_id: str) -> bytes:
    """A batch's output or error file."""
    lt = litellm_module()
    held = _batch_provider(
        model, "reading the batch's results", lambda **c: lt.file_content(file_id=file_id, **c)
    )
    return held.content


@dataclass(frozen=True)
class BatchAnswer:
    """What one line of a batch came to: a completion, an error (retryable: to be asked
    again), or nothing (`not_run`: the batch ended before it ran, and it is asked again
    without counting an attempt). `ledger` holds its ledger row's fields when it cost a
    call."""

    completion: Completion | None = None
    error: LLMError | None = None
    ledger: dict | None = None

    @property
    def not_run(self) -> bool:
        return self.completion is None and self.error is None


def batch_price(model: ModelConfig, input_tokens: int, output_tokens: int) -> Decimal | None:
    """What a line cost at the batch price: the list price (the model's own, else
    litellm's) times the model's batch discount, to the ledger's micro-dollar."""
    if model.input_price_per_mtok is not None or model.output_price_per_mtok is not None:
        per_in = model.input_price_per_mtok or Decimal(0)
        per_out = model.output_price_per_mtok or Decimal(0)
        listed = (per_in * input_tokens + per_out * output_tokens) / Decimal(1_000_000)
    elif litellm_priced_by_us(model.litellm_model):
        return None
    else:
        try:
            parts = litellm_module().cost_per_token(
                model=model.litellm_model,
                prompt_tokens=input_tokens,
                completion_tokens=output_tokens,
            )
        except Exception:
            return None
        listed = Decimal(str(parts[0])) + Decimal(str(parts[1]))
    return (listed * model.batch_discount).quantize(Decimal("0.000001"))


def batch_answer(
    *,
    model: ModelConfig,
    line: dict | None,
    schema: dict | None = None,
    check=None,
    latency_ms: int = 0,
    attempt: int = 1,
) -> BatchAnswer:
    """Read one line of a batch's output or error file (None: in neither) as a live call's
    answer is read: the same validation of a structured answer, priced at the batch price.
    A line that failed, or whose answer failed validation, is a retryable error (a batch
    cannot re-ask within the line) unless its failure was the request's own (a 4xx)."""
    if not isinstance(line, dict):
        return BatchAnswer()
    response = line.get("response") if isinstance(line.get("response"), dict) else None
    error = line.get("error") if isinstance(line.get("error"), dict) else None
    if response is None:
        code = str((error or {}).get("code") or "")
        if code in BATCH_NOT_RUN or not error:
            return BatchAnswer()
        message = str(error.get("message") or code)[:MAX_ERROR_CHARS]
        failed = RetryableLLMError(
            f"{model.display_name}: the batch line failed: {message}",
            status=CallStatus.OTHER,
            attempts=attempt,
        )
        return BatchAnswer(error=failed, ledger=_failed_line(failed, code or "BatchLineError"))
    code = response.get("status_code")
    body = response.get("body") if isinstance(response.get("body"), dict) else {}
    if code != 200:
        status, retryable = _status_of_code(code)
        detail = body.get("error") if isinstance(body.get("error"), dict) else {}
        message = str(detail.get("message") or f"status {code}")[:MAX_ERROR_CHARS]
        kind = RetryableLLMError if retryable else PermanentLLMError
        failed = kind(
            f"{model.display_name}: the batch line failed ({code}): {message}",
            status=status,
            attempts=attempt,
        )
        return BatchAnswer(error=failed, ledger=_failed_line(failed, f"HTTP {code}"))
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    input_tokens = int(usage.get("prompt_tokens") or 0)
    output_tokens = int(usage.get("completion_tokens") or 0)
    try:
        text = body["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        text, problem = "", "the answer has no message"
    else:
        text, problem = _storable(str(text)), None
    cost = batch_price(model, input_tokens, output_tokens)
    spent = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": cost}
    data = None
    if problem is None and schema is not None:
        data, problem = _validate(text, schema)
        if problem is None and check is not None:
            problem = check(data)
            data = data if problem is None else None
    if problem:
        failed = RetryableLLMError(
            f"{model.display_name}: the answer failed validation: {problem}",
            status=CallStatus.INVALID_OUTPUT,
            attempts=attempt,
        )
        failed.cost_usd, failed.last_output = cost, text
        ledger = {
            **spent,
            "status": CallStatus.INVALID_OUTPUT,
            "error_class": "InvalidAnswer",
            "error_message": f"{problem}. Answer began: {text[:300]!r}",
        }
        return BatchAnswer(error=failed, ledger=ledger)
    completion = Completion(
        text=text,
        data=data,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        latency_ms=latency_ms,
        attempts=attempt,
        model_id=model.pk,
        offline=model.is_offline,
    )
    return BatchAnswer(completion=completion, ledger={**spent, "status": CallStatus.OK})


def _status_of_code(code) -> tuple[str, bool]:
    if code == 429:
        return CallStatus.RATE_LIMITED, True
    if code == 408:
        return CallStatus.TIMEOUT, True
    if isinstance(code, int) and code >= 500:
        return CallStatus.SERVER_ERROR, True
    if isinstance(code, int) and 400 <= code < 500:
        return CallStatus.BAD_REQUEST, False
    return CallStatus.OTHER, True


def _failed_line(error: LLMError, error_class: str) -> dict:
    return {
        "status": error.status,
        "error_class": error_class[:200],
        "error_message": str(error)[:MAX_ERROR_CHARS],
    }


__all__ = [
    "Completion",
    "Embedded",
    "LLMError",
    "PermanentLLMError",
    "RetryPolicy",
    "RetryableLLMError",
    "acomplete",
    "aembed",
    "complete",
    "embed",
]
