"""The offline provider's HTTP side: an OpenAI-compatible API on loopback, with faults.

One event loop, no threads: counters need no locks, and latency is `asyncio.sleep`, so a
thousand waiting requests cost nothing but memory. Faults come from their own
`random.Random(--fault-seed)`, so they never disturb the answers, which depend on the
request alone.
"""

import asyncio
import json
import math
import random
import signal
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from aiohttp import web

from . import batches
from .embed import DEFAULT_DIMENSIONS, EMBEDDING_MODELS, MAX_DIMENSIONS, MAX_INPUTS, encoded, vector
from .generate import (
    JSON_PURPOSES,
    PURPOSES,
    Prompt,
    UnreadablePrompt,
    answer,
    generator_parameters,
    infer_purpose,
    request_seed,
)
from .knobs import Knobs
from .rubrics import RubricBook, RubricError

CHAT_MODELS = ("offline-terse", "offline-thorough", "offline-friendly", "offline-grader")
MODELS = (*CHAT_MODELS, *EMBEDDING_MODELS)
MODELS_CREATED = 1735689600  # a fixed date: the list is the same on every run
FINGERPRINT = "assay-offline"
# On every answer: what it came from, for a client that reads headers rather than bodies.
OFFLINE_HEADER = {"X-Offline": FINGERPRINT}
ENCODINGS = ("float", "base64")
FAULTS = ("429", "500", "hang", "malformed")
# "400" only on request (X-Offline-Faults), to test that a client does not retry a 400.
FORCIBLE_FAULTS = (*FAULTS, "400")
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass
class Stats:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    by_status: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    # Arrival times of the last minute: the most requests seen in any 60 s window is how a
    # client's requests-per-minute limit is checked from the provider's side.
    arrivals: deque = field(default_factory=deque)
    max_per_minute: int = 0

    def begin(self) -> None:
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        now = time.monotonic()
        self.arrivals.append(now)
        while self.arrivals[0] <= now - 60:
            self.arrivals.popleft()
        self.max_per_minute = max(self.max_per_minute, len(self.arrivals))

    def finish(self, status: str | None) -> None:
        self.in_flight -= 1
        if status is not None:
            self.by_status[status] += 1

    def reset(self) -> None:
        # in_flight is a live gauge, not a counter: requests still running will decrement it.
        self.requests = 0
        self.max_in_flight = self.in_flight
        self.by_status.clear()
        self.faults.clear()
        self.arrivals.clear()
        self.max_per_minute = 0

    def as_json(self) -> dict:
        return {
            "requests": self.requests,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "max_per_minute": self.max_per_minute,
            "by_status": dict(self.by_status),
            "faults": dict(self.faults),
        }


@dataclass
class HiddenLimit:
    """What the provider accepts, unknown to its clients until they meet it: at most
    `concurrent` requests at once and `per_minute` in any 60 s (0: no such limit). Changed
    mid-run by POST /v1/offline/limit."""

    concurrent: int = 0
    per_minute: int = 0
    accepted: deque = field(default_factory=deque)  # when the last minute's were accepted
    in_flight: int = 0

    def refusal(self, now: float) -> tuple[str, float, int] | None:
        """(which limit, seconds until a retry can pass, the limit) for a request arriving
        `now` that one would refuse; None to accept it."""
        while self.accepted and self.accepted[0] <= now - 60:
            self.accepted.popleft()
        if self.concurrent and self.in_flight >= self.concurrent:
            return "concurrent", 0.0, self.concurrent
        if self.per_minute and len(self.accepted) >= self.per_minute:
            return "per_minute", self.accepted[0] + 60 - now, self.per_minute
        return None

    def as_json(self) -> dict:
        return {"concurrent": self.concurrent, "per_minute": self.per_minute}


KNOBS = web.AppKey("knobs", Knobs)
LIMIT = web.AppKey("limit", HiddenLimit)
# Set on a request whose status is already in the stats (a hang), so it is not counted twice.
COUNTED = "offline_counted"
STATS = web.AppKey("stats", Stats)
FAULT_RNG = web.AppKey("fault_rng", random.Random)
RUBRICS = web.AppKey("rubrics", RubricBook)


def error(
    status: int,
    message: str,
    *,
    code: str,
    kind: str = "invalid_request_error",
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return web.json_response(body, status=status, headers=headers)


def _text(content: object) -> str | None:
    """A message's text, or None when its content is not something a chat model accepts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict):
                return None
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return None


def _parse(body: object) -> tuple[str, list[tuple[str, str]], object, float] | web.Response:
    """(model, [(role, text)], seed, temperature), or the 400 that explains what is wrong."""
    if not isinstance(body, dict):
        return error(400, "The request body must be a JSON object.", code="invalid_body")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        return error(
            400, "You must provide a model parameter.", code="invalid_model", param="model"
        )
    if body.get("stream"):
        return error(
            400,
            "The offline provider does not stream; send stream=false.",
            code="unsupported_parameter",
            param="stream",
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return error(
            400, "messages must be a non-empty list.", code="invalid_messages", param="messages"
        )
    parsed = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        text = _text(message.get("content")) if isinstance(message, dict) else None
        if role not in ROLES or text is None:
            return error(
                400,
                f"messages[{index}] must be an object with a role and text content.",
                code="invalid_messages",
                param=f"messages[{index}]",
            )
        parsed.append((role, text))
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        return error(400, "seed must be an integer.", code="invalid_seed", param="seed")
    temperature = body.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        return error(
            400,
            "temperature must be a number from 0 to 2.",
            code="invalid_temperature",
            param="temperature",
        )
    return model, parsed, seed, 1.0 if temperature is None else float(temperature)


def _draw_fault(knobs: Knobs, rng: random.Random) -> str | None:
    roll = rng.random()
    for fault, rate in zip(
        FAULTS,
        (knobs.rate_429, knobs.rate_500, knobs.rate_hang, knobs.rate_malformed),
        strict=True,
    ):
        if roll < rate:
            return fault
        roll -= rate
    return None


def _malformed(content: str, rng: random.Random) -> str:
    # A proper prefix of a JSON object is never valid JSON: its closing brace is missing.
    cut = max(1, int(len(content) * rng.uniform(0.3, 0.85)))
    return rng.choice(("", "Here is my answer:\n", "```json\n")) + content[:cut]


def _tokens(characters: int) -> int:
    return max(1, (characters + 3) // 4)


def _counted(handle: Callable) -> Callable:
    """An endpoint that counts its request in the stats by the status it answers with."""

    async def endpoint(request: web.Request) -> web.Response:
        stats = request.app[STATS]
        stats.begin()
        # Stays "499" (nginx's "client closed request") if the client hangs up before an answer.
        status = "499"
        try:
            response, status = await handle(request)
            return response
        except web.HTTPException as exc:  # aiohttp's own refusals, e.g. 413 for a huge body
            status = str(exc.status)
            raise
        except Exception:
            status = "500"
            raise
        finally:
            stats.finish(None if request.get(COUNTED) else status)

    return endpoint


async def _body(request: web.Request) -> object | web.Response:
    try:
        return json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        return error(400, "The request body is not valid JSON.", code="invalid_json")


def _fault_for(request: web.Request) -> str | web.Response | None:
    """The fault this request gets (forced by X-Offline-Faults, or drawn by the knobs), or
    the 400 for an unknown forced one."""
    forced = request.headers.get("X-Offline-Faults", "").strip().lower()
    if forced and forced not in FORCIBLE_FAULTS:
        message = f"Unknown X-Offline-Faults {forced!r}; one of {', '.join(FORCIBLE_FAULTS)}."
        return error(400, message, code="invalid_fault")
    drawn = _draw_fault(request.app[KNOBS], request.app[FAULT_RNG])
    fault = forced or drawn
    if fault and fault != "malformed":
        request.app[STATS].faults[fault] += 1
    return fault


async def _fault_or_wait(
    request: web.Request, model: str, fault: str | None
) -> tuple[web.Response, str] | None:
    """Answer the fault (400, 429, 500; a hang first hangs), or wait the knobs' latency and
    return None for an answer to follow."""
    knobs, stats, fault_rng = request.app[KNOBS], request.app[STATS], request.app[FAULT_RNG]
    if fault == "400":
        message = "Bad request (simulated by the offline provider: X-Offline-Faults: 400)."
        return error(400, message, code="simulated_bad_request"), "400"
    if fault == "429":
        # A rate limiter refuses at once; no latency.
        return error(
            429,
            f"Rate limit reached for {model} (simulated by the offline provider). "
            f"Please try again in {knobs.retry_after:g}s.",
            code="rate_limit_exceeded",
            kind="requests",
            headers={
                "Retry-After": f"{knobs.retry_after:g}",
                "retry-after-ms": f"{round(knobs.retry_after * 1000)}",
            },
        ), "429"
    if fault == "hang":
        # Counted now: the client is expected to give up long before this ends.
        stats.by_status["hang"] += 1
        request[COUNTED] = True
        await asyncio.sleep(knobs.hang_seconds)
    else:
        delay = knobs.latency_ms + (fault_rng.uniform(0, knobs.jitter_ms) if knobs.jitter_ms else 0)
        if delay:
            await asyncio.sleep(delay / 1000)
    if fault == "500":
        message = (
            "The server had an error processing the request (simulated by the offline provider)."
        )
        return error(500, message, code="server_error", kind="server_error"), "500"
    return None


def prepared(
    body: object, purpose_given: str = "", book: RubricBook | None = None
) -> tuple[str, list[tuple[str, str]], object, Prompt, str] | web.Response:
    """A chat request read: (model, [(role, text)], seed, prompt, purpose), or the 400 that
    says what is wrong. `purpose_given`: the X-Assay-Purpose asked for, if any (else the
    prompt's tags say); `book`: the registered rubrics, whose criteria a sample's prompt
    carries when its question is registered."""
    parsed = _parse(body)
    if isinstance(parsed, web.Response):
        return parsed
    model, messages, seed, temperature = parsed
    prompt = Prompt(
        texts=tuple(text for _role, text in messages),
        last_user=next((text for role, text in reversed(messages) if role == "user"), ""),
        temperature=temperature,
    )
    purpose = purpose_given.strip().lower() or infer_purpose(prompt)
    if purpose not in PURPOSES:
        return error(
            400,
            f"Unknown X-Assay-Purpose {purpose!r}; one of {', '.join(PURPOSES)}.",
            code="invalid_purpose",
        )
    if purpose == "sample" and book is not None:
        prompt = replace(prompt, known=book.criteria(prompt.tag("question") or prompt.last_user))
    return model, messages, seed, prompt, purpose


def completion(
    model: str,
    messages: list[tuple[str, str]],
    seed: object,
    prompt: Prompt,
    purpose: str,
    *,
    malformed: random.Random | None = None,
) -> dict | web.Response:
    """The chat completion a prepared request gets (broken JSON, drawn from `malformed`,
    where that fault was drawn and the purpose is a JSON one), or the 400 for a prompt the
    purpose cannot read."""
    rng = random.Random(request_seed(model, messages, seed))
    try:
        content = answer(purpose, model, prompt, rng)
    except UnreadablePrompt as exc:
        return error(400, str(exc), code="invalid_prompt")
    if malformed is not None:
        content = _malformed(content, malformed)
    prompt_characters = sum(len(text) for _role, text in messages)
    prompt_tokens, completion_tokens = _tokens(prompt_characters), _tokens(len(content))
    return {
        "id": f"chatcmpl-offline-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _over_limit(request: web.Request, model: str, which: str, wait: float, limit: int):
    """The 429 of the hidden limit, with Retry-After, and OpenAI's x-ratelimit headers for
    a limit per minute."""
    request.app[STATS].faults["limit"] += 1
    wait = max(wait, request.app[KNOBS].retry_after) if which == "concurrent" else wait
    seconds = max(1, math.ceil(wait))
    what = f"{limit} requests at once" if which == "concurrent" else f"{limit} requests a minute"
    headers = {"Retry-After": str(seconds)}
    if which == "per_minute":
        # OpenAI's x-ratelimit headers speak of a window of requests; a limit on requests at
        # once has none to spend, and a freed slot ends it.
        headers |= {
            "x-ratelimit-limit-requests": str(limit),
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": f"{seconds}s",
        }
    return error(
        429,
        f"Rate limit reached for {model}: {what} (the offline provider's hidden limit). "
        f"Please try again in {seconds}s.",
        code="rate_limit_exceeded",
        kind="requests",
        headers=headers,
    )


async def _chat_completion(request: web.Request) -> tuple[web.Response, str]:
    body = await _body(request)
    if isinstance(body, web.Response):
        return body, "400"
    ready = prepared(body, request.headers.get("X-Assay-Purpose", ""), request.app[RUBRICS])
    if isinstance(ready, web.Response):
        return ready, "400"
    model, _messages, _seed, _prompt, purpose = ready
    fault = _fault_for(request)
    if isinstance(fault, web.Response):
        return fault, "400"
    limit = request.app[LIMIT]
    over = limit.refusal(time.monotonic())
    if over is not None:
        return _over_limit(request, model, *over), "429"
    limit.in_flight += 1
    limit.accepted.append(time.monotonic())
    try:
        refused = await _fault_or_wait(request, model, fault)
    finally:
        limit.in_flight -= 1
    if refused is not None:
        return refused
    # Text answers have no syntax to break; only JSON purposes get (and count) this fault.
    malformed = None
    if fault == "malformed" and purpose in JSON_PURPOSES:
        request.app[STATS].faults["malformed"] += 1
        malformed = request.app[FAULT_RNG]
    answered = completion(*ready, malformed=malformed)
    if isinstance(answered, web.Response):
        return answered, "400"
    headers = {"X-Offline-Purpose": purpose, **OFFLINE_HEADER}
    return web.json_response(answered, headers=headers), "200"


def _parse_embedding(body: object) -> tuple[str, list[str], str, int] | web.Response:
    """(model, texts, encoding_format, dimensions), or the 400 that explains what is wrong."""
    if not isinstance(body, dict):
        return error(400, "The request body must be a JSON object.", code="invalid_body")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        return error(
            400, "You must provide a model parameter.", code="invalid_model", param="model"
        )
    given = body.get("input")
    texts = [given] if isinstance(given, str) else given
    if not isinstance(texts, list) or not texts or len(texts) > MAX_INPUTS:
        return error(
            400,
            f"input must be a string or a list of 1 to {MAX_INPUTS} strings.",
            code="invalid_input",
            param="input",
        )
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            return error(
                400,
                f"input[{index}] is not a string: the offline provider embeds text, not token ids.",
                code="invalid_input",
                param=f"input[{index}]",
            )
        if not text.strip():
            return error(
                400, f"input[{index}] is empty.", code="invalid_input", param=f"input[{index}]"
            )
    encoding = body.get("encoding_format") or "float"
    if encoding not in ENCODINGS:
        return error(
            400,
            f"encoding_format must be one of {', '.join(ENCODINGS)}.",
            code="invalid_encoding_format",
            param="encoding_format",
        )
    dimensions = body.get("dimensions")
    if dimensions is None:
        dimensions = DEFAULT_DIMENSIONS
    elif (
        isinstance(dimensions, bool)
        or not isinstance(dimensions, int)
        or not 1 <= dimensions <= MAX_DIMENSIONS
    ):
        return error(
            400,
            f"dimensions must be an integer from 1 to {MAX_DIMENSIONS}.",
            code="invalid_dimensions",
            param="dimensions",
        )
    return model, texts, encoding, dimensions


async def _embedding(request: web.Request) -> tuple[web.Response, str]:
    body = await _body(request)
    if isinstance(body, web.Response):
        return body, "400"
    parsed = _parse_embedding(body)
    if isinstance(parsed, web.Response):
        return parsed, "400"
    model, texts, encoding, dimensions = parsed
    fault = _fault_for(request)
    if isinstance(fault, web.Response):
        return fault, "400"
    # A vector has no syntax to break: "malformed" gives a normal answer, as for text.
    refused = await _fault_or_wait(request, model, fault)
    if refused is not None:
        return refused
    data = [
        {
            "object": "embedding",
            "index": index,
            "embedding": encoded(vector(model, text, dimensions), encoding),
        }
        for index, text in enumerate(texts)
    ]
    tokens = sum(_tokens(len(text)) for text in texts)
    result = {
        "object": "list",
        "data": data,
        "model": model,
        "system_fingerprint": FINGERPRINT,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    return web.json_response(result, headers=OFFLINE_HEADER), "200"


chat_completions = _counted(_chat_completion)
embeddings = _counted(_embedding)


async def list_models(request: web.Request) -> web.Response:
    data = [
        {"id": name, "object": "model", "created": MODELS_CREATED, "owned_by": FINGERPRINT}
        for name in MODELS
    ]
    return web.json_response({"object": "list", "data": data})


async def show_parameters(request: web.Request) -> web.Response:
    """The generators' parameters, and what each model named by `?model=` makes of them (the
    listed models when none is named)."""
    named = request.query.getall("model", [])
    return web.json_response(generator_parameters(named or MODELS))


async def show_stats(request: web.Request) -> web.Response:
    return web.json_response(
        request.app[STATS].as_json() | {"batches": batches.counts(request.app)}
    )


async def hidden_limit(request: web.Request) -> web.Response:
    """GET: the hidden limit; POST {"concurrent": n, "per_minute": m}: change it (either,
    0 for none), as a provider changes a key's limit mid-run."""
    limit = request.app[LIMIT]
    if request.method == "POST":
        body = await _body(request)
        if isinstance(body, web.Response):
            return body
        given = body if isinstance(body, dict) else {}
        for name in ("concurrent", "per_minute"):
            value = given.get(name, getattr(limit, name))
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return error(400, f"{name} must be a whole number, 0 or more.", code="invalid")
            setattr(limit, name, value)
    return web.json_response(limit.as_json())


async def rubrics(request: web.Request) -> web.Response:
    """GET: the registered rubrics; POST {"rubrics": [...]}: register them (`rubrics`)."""
    book = request.app[RUBRICS]
    if request.method == "POST":
        body = await _body(request)
        if isinstance(body, web.Response):
            return body
        try:
            registered = book.register(body)
        except RubricError as exc:
            return error(400, str(exc), code="invalid_rubrics")
        return web.json_response({"object": "offline.rubrics", "registered": registered})
    return web.json_response(book.as_json())


async def reset_stats(request: web.Request) -> web.Response:
    request.app[STATS].reset()
    batches.counts_reset(request.app)
    return web.json_response(
        request.app[STATS].as_json() | {"batches": batches.counts(request.app)}
    )


def _batch_answer(body: object, book: RubricBook) -> tuple[int, dict]:
    """A batch line's answer, as /v1/chat/completions gives it but the knobs' latency and
    faults (a batch has its own): (status, body). Its purpose: `metadata.assay_purpose`, or
    the prompt's tags."""
    meta = body.get("metadata") if isinstance(body, dict) else None
    purpose = str(meta.get("assay_purpose", "")) if isinstance(meta, dict) else ""
    ready = prepared(body, purpose, book)
    if isinstance(ready, web.Response):
        return batches.json_error(ready)
    answered = completion(*ready)
    if isinstance(answered, web.Response):
        return batches.json_error(answered)
    return 200, answered


def make_app(knobs: Knobs) -> web.Application:
    # A batch input file may be far larger than a chat request.
    app = web.Application(client_max_size=max(MAX_BODY_BYTES, knobs.batch_max_bytes + 2**20))
    app[KNOBS] = knobs
    app[STATS] = Stats()
    app[FAULT_RNG] = random.Random(knobs.fault_seed)
    app[LIMIT] = HiddenLimit(concurrent=knobs.limit_concurrent, per_minute=knobs.limit_per_minute)
    app.router.add_get("/v1/offline/limit", hidden_limit)
    app.router.add_post("/v1/offline/limit", hidden_limit)
    app[RUBRICS] = RubricBook()
    app.router.add_get("/v1/offline/rubrics", rubrics)
    app.router.add_post("/v1/offline/rubrics", rubrics)
    batches.install(
        app, knobs, partial(_batch_answer, book=app[RUBRICS]), random.Random(knobs.fault_seed)
    )
    app.router.add_get("/v1/models", list_models)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/offline/parameters", show_parameters)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_get("/v1/stats", show_stats)
    app.router.add_post("/v1/stats/reset", reset_stats)
    return app


async def serve(knobs: Knobs, announce: Callable[[str], None]) -> None:
    """Serve until SIGINT or SIGTERM. `announce` gets one line with the base URL once the
    port is open; with --port 0 it is the only way to learn the port."""
    runner = web.AppRunner(
        make_app(knobs),
        # A client that gave up (a timeout, a hang fault) frees its slot in `in_flight`.
        handler_cancellation=True,
        access_log=None,
        shutdown_timeout=1.0,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, knobs.host, knobs.port, backlog=1024)
        await site.start()
        host, port = runner.addresses[0][:2]
        shown = f"[{host}]" if ":" in host else host
        announce(
            f"Assay offline LLM provider (demo answers, not a real model) listening on "
            f"http://{shown}:{port}/v1"
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def run(knobs: Knobs, announce: Callable[[str], None]) -> None:
    asyncio.run(serve(knobs, announce))
