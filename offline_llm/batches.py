"""The offline provider's batch API, in OpenAI's shape, so that a client drives it through
litellm (`create_file`, `create_batch`, `retrieve_batch`, `cancel_batch`, `file_content`)
exactly as it would a paid provider's.

    POST /v1/files                 multipart: purpose "batch", file: JSON Lines of requests
    GET  /v1/files/{id}            the file's description
    GET  /v1/files/{id}/content    its bytes (an input, output or error file)
    DELETE /v1/files/{id}
    POST /v1/batches               {"input_file_id", "endpoint": "/v1/chat/completions",
                                    "completion_window": "24h", "metadata"}
    GET  /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel
    GET, POST /v1/offline/batches  {"expire_next": n}: the next n batches created expire

A line of the input file is `{"custom_id", "method": "POST", "url": "/v1/chat/completions",
"body": <a chat request>}`, answered as /v1/chat/completions answers it (the purpose from
the prompt's tags, or from the body's `metadata.assay_purpose`). A file that breaks the
rules (not JSON Lines, a custom_id twice, another url, more lines or bytes than the knobs
allow) makes a batch that fails validation, with each problem and its line in `errors`.

A batch's state is read from the clock, not from a task: it is validating for its first 5%
of `--batch-seconds`, in progress to the end, then completed, its lines finishing evenly
over that time. Knobs: `--batch-rate-failed`, the share of lines that fail (a 500 in the
error file); `--batch-rate-expire`, the share of batches that run out of their window
instead (as does one whose metadata says `"offline_fault": "expire"`, and the next ones
`/v1/offline/batches` says): it ends expired at its end with the share of its lines it got
done (EXPIRED_DONE_SHARE) in the output file and the rest in the error file as
`batch_expired`; `--batch-cancel-seconds`, how long a cancelled batch stays cancelling,
after which the lines done when it was cancelled are in its output file and the rest are
`batch_cancelled`. Batches and files live in the provider's memory: a restart forgets them.
"""

import asyncio
import json
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from aiohttp import web

from .knobs import Knobs

BATCH_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
WINDOW_SECONDS = 24 * 3600
VALIDATING_SHARE = 0.05  # of a batch's time
EXPIRED_DONE_SHARE = 0.6  # of its lines an expiring batch gets done before its window ends
EXPIRE_FORCED = "expire"
FAILED_LINE = "The server had an error processing this request (simulated by the offline provider)."
NOT_RUN = {
    "expired": (
        "batch_expired",
        "This request could not be executed before the completion window expired.",
    ),
    "cancelled": ("batch_cancelled", "This request was not executed: the batch was cancelled."),
}


@dataclass
class StoredFile:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int = field(default_factory=lambda: int(time.time()))

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "status_details": None,
        }


@dataclass
class Batch:
    id: str
    input_file_id: str
    metadata: dict | None
    lines: list[dict]
    errors: list[dict]  # validation problems: a batch with any fails
    seconds: float
    cancel_seconds: float
    expires: bool
    failing: frozenset[int]  # the lines that fail
    created: float = field(default_factory=time.time)
    cancelled_at: float | None = None
    writing: bool = False  # its files are being written
    ended: str = ""  # the terminal status once they are
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict = field(default_factory=dict)

    def done_by(self, moment: float) -> int:
        """How many of its lines (the first ones) are done at `moment`."""
        if not self.seconds:
            return len(self.lines)
        share = min(1.0, max(0.0, (moment - self.created) / self.seconds))
        if self.expires:  # it works more slowly than its window allows
            share *= EXPIRED_DONE_SHARE
        return int(len(self.lines) * share)

    def status(self, now: float) -> str:
        if self.errors:
            return "failed"
        if self.cancelled_at is not None:
            return "cancelled" if now >= self.cancelled_at + self.cancel_seconds else "cancelling"
        elapsed = now - self.created
        if elapsed < self.seconds * VALIDATING_SHARE:
            return "validating"
        if elapsed < self.seconds:
            return "in_progress"
        return "expired" if self.expires else "completed"

    def as_json(self, now: float) -> dict:
        status = self.ended or self.status(now)
        done = self.done_by(self.cancelled_at if self.cancelled_at is not None else now)
        failed = len([i for i in self.failing if i < done])
        counts = self.counts or {
            "total": len(self.lines),
            "completed": done - failed,
            "failed": failed,
        }
        end = self.created + self.seconds
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": BATCH_ENDPOINT,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": COMPLETION_WINDOW,
            "status": status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": int(self.created),
            "in_progress_at": int(self.created + self.seconds * VALIDATING_SHARE),
            "expires_at": int(self.created + WINDOW_SECONDS),
            "finalizing_at": int(end) if status == "completed" else None,
            "completed_at": int(end) if status == "completed" else None,
            "failed_at": int(self.created) if status == "failed" else None,
            "expired_at": int(end) if status == "expired" else None,
            "cancelling_at": int(self.cancelled_at) if self.cancelled_at is not None else None,
            "cancelled_at": (
                int(self.cancelled_at + self.cancel_seconds) if status == "cancelled" else None
            ),
            "request_counts": counts,
            "metadata": self.metadata,
        }


def read_lines(content: bytes, *, max_requests: int, max_bytes: int) -> tuple[list, list]:
    """(the requests of a batch input file, the problems that fail its validation)."""
    problems: list[dict] = []

    def problem(code: str, message: str, line: int | None = None) -> None:
        problems.append({"code": code, "message": message, "param": None, "line": line})

    if len(content) > max_bytes:
        problem("file_too_large", f"The file has {len(content)} bytes; at most {max_bytes}.")
        return [], problems
    lines, seen = [], set()
    for number, raw in enumerate(content.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            problem("invalid_json_line", "This line is not valid JSON.", number)
            continue
        if not isinstance(line, dict) or not isinstance(line.get("body"), dict):
            problem("invalid_request", "A line is an object with a body object.", number)
            continue
        custom_id = line.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            problem("missing_custom_id", "Each line needs a custom_id string.", number)
        elif custom_id in seen:
            problem("duplicate_custom_id", f"The custom_id {custom_id!r} is used twice.", number)
        seen.add(custom_id)
        if line.get("url") != BATCH_ENDPOINT or line.get("method", "POST") != "POST":
            problem("invalid_url", f"Each line posts to {BATCH_ENDPOINT}.", number)
        lines.append(line)
    if not lines and not problems:
        problem("empty_file", "The file has no requests.")
    if len(lines) > max_requests:
        problem("too_many_requests", f"The file has {len(lines)} requests; at most {max_requests}.")
    return lines, problems


def _json_lines(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(row, ensure_ascii=False).encode() + b"\n" for row in rows)


def new_id(prefix: str) -> str:
    return f"{prefix}-offline-{uuid.uuid4().hex[:24]}"


def line_failures(count: int, rate: float, rng: random.Random) -> frozenset[int]:
    return frozenset(i for i in range(count) if rate and rng.random() < rate)


def response_row(custom_id: str, status: int, body: dict) -> dict:
    return {
        "id": new_id("batch_req"),
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": new_id("req"), "body": body},
        "error": None,
    }


def not_run_row(custom_id: str, ended: str) -> dict:
    code, message = NOT_RUN[ended]
    return {
        "id": new_id("batch_req"),
        "custom_id": custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }


def json_error(response: web.Response) -> tuple[int, dict]:
    return response.status, json.loads(response.text)


# --- the endpoints --------------------------------------------------------------------------

KNOBS = web.AppKey("batch_knobs", Knobs)
FILES = web.AppKey("batch_files", dict)
BATCHES = web.AppKey("batches", dict)
ANSWER = web.AppKey("batch_answer", object)  # a line's body -> (HTTP status, body)
RNG = web.AppKey("batch_rng", random.Random)
COUNTS = web.AppKey("batch_counts", Counter)
EXPIRE_NEXT = web.AppKey("batch_expire_next", list)  # [n]: the next n batches created expire
TERMINAL = frozenset({"completed", "expired", "cancelled", "failed"})
YIELD_EVERY = 100  # lines answered between letting other requests in


def error(status: int, message: str, code: str) -> web.Response:
    body = {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    }
    return web.json_response(body, status=status)


def install(app: web.Application, knobs: Knobs, answer, rng: random.Random) -> None:
    """The batch API's routes and state on `app`; `answer(body) -> (status, body)` answers
    one line as the chat endpoint would."""
    app[KNOBS], app[FILES], app[BATCHES] = knobs, {}, {}
    app[ANSWER], app[RNG], app[COUNTS] = answer, rng, Counter()
    app[EXPIRE_NEXT] = [0]
    app.router.add_post("/v1/files", file_upload)
    app.router.add_get("/v1/files/{id}", file_get)
    app.router.add_get("/v1/files/{id}/content", file_content)
    app.router.add_delete("/v1/files/{id}", file_delete)
    app.router.add_post("/v1/batches", batch_create)
    app.router.add_get("/v1/batches", batch_list)
    app.router.add_get("/v1/batches/{id}", batch_get)
    app.router.add_post("/v1/batches/{id}/cancel", batch_cancel)
    app.router.add_get("/v1/offline/batches", batch_faults)
    app.router.add_post("/v1/offline/batches", batch_faults)


async def batch_faults(request: web.Request) -> web.Response:
    """GET: the faults set for the next batches; POST {"expire_next": n}: the next n batches
    created run out of their window (as a test or a benchmark asks for one expired batch)."""
    if request.method == "POST":
        try:
            body = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            return error(400, "The request body is not valid JSON.", "invalid_json")
        value = body.get("expire_next") if isinstance(body, dict) else None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return error(400, "expire_next must be a whole number, 0 or more.", "invalid")
        request.app[EXPIRE_NEXT][0] = value
    return web.json_response({"expire_next": request.app[EXPIRE_NEXT][0]})


def counts(app: web.Application) -> dict:
    """For /v1/stats: batches created and finished, lines answered, failed and not run."""
    return dict(app[COUNTS])


def counts_reset(app: web.Application) -> None:
    app[COUNTS].clear()


async def file_upload(request: web.Request) -> web.Response:
    try:
        form = await request.post()
    except ValueError:
        return error(400, "Send the file as multipart/form-data.", "invalid_file")
    upload = form.get("file")
    if form.get("purpose") != "batch":
        return error(400, "The offline provider takes files of purpose 'batch'.", "invalid_purpose")
    if not isinstance(upload, web.FileField):
        return error(400, "No file was sent (the form field 'file').", "invalid_file")
    stored = StoredFile(
        id=new_id("file"),
        filename=upload.filename or "batch.jsonl",
        purpose="batch",
        content=upload.file.read(),
    )
    request.app[FILES][stored.id] = stored
    return web.json_response(stored.as_json())


def _file(request: web.Request) -> StoredFile | web.Response:
    stored = request.app[FILES].get(request.match_info["id"])
    if stored is None:
        return error(404, f"No such file: {request.match_info['id']}.", "file_not_found")
    return stored


async def file_get(request: web.Request) -> web.Response:
    stored = _file(request)
    return stored if isinstance(stored, web.Response) else web.json_response(stored.as_json())


async def file_content(request: web.Request) -> web.Response:
    stored = _file(request)
    if isinstance(stored, web.Response):
        return stored
    return web.Response(body=stored.content, content_type="application/octet-stream")


async def file_delete(request: web.Request) -> web.Response:
    stored = _file(request)
    if isinstance(stored, web.Response):
        return stored
    del request.app[FILES][stored.id]
    return web.json_response({"id": stored.id, "object": "file", "deleted": True})


async def batch_create(request: web.Request) -> web.Response:
    try:
        body = json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        return error(400, "The request body is not valid JSON.", "invalid_json")
    if not isinstance(body, dict):
        return error(400, "The request body must be a JSON object.", "invalid_body")
    if body.get("endpoint") != BATCH_ENDPOINT:
        return error(
            400, f"The offline provider batches {BATCH_ENDPOINT} only.", "invalid_endpoint"
        )
    if body.get("completion_window") != COMPLETION_WINDOW:
        return error(400, f"completion_window must be {COMPLETION_WINDOW!r}.", "invalid_window")
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return error(400, "metadata must be an object.", "invalid_metadata")
    stored = request.app[FILES].get(body.get("input_file_id"))
    if stored is None or stored.purpose != "batch":
        return error(400, f"No batch file {body.get('input_file_id')!r}.", "invalid_input_file")
    knobs, rng = request.app[KNOBS], request.app[RNG]
    lines, problems = read_lines(
        stored.content, max_requests=knobs.batch_max_requests, max_bytes=knobs.batch_max_bytes
    )
    forced = (metadata or {}).get("offline_fault") == EXPIRE_FORCED
    if not problems and request.app[EXPIRE_NEXT][0] > 0:
        request.app[EXPIRE_NEXT][0] -= 1
        forced = True
    batch = Batch(
        id=new_id("batch"),
        input_file_id=stored.id,
        metadata=metadata,
        lines=lines,
        errors=problems,
        seconds=knobs.batch_seconds,
        cancel_seconds=knobs.batch_cancel_seconds,
        expires=forced or rng.random() < knobs.batch_rate_expire,
        failing=line_failures(len(lines), knobs.batch_rate_failed, rng),
    )
    request.app[BATCHES][batch.id] = batch
    request.app[COUNTS]["created"] += 1
    return web.json_response(batch.as_json(time.time()))


def _batch(request: web.Request) -> Batch | web.Response:
    batch = request.app[BATCHES].get(request.match_info["id"])
    if batch is None:
        return error(404, f"No such batch: {request.match_info['id']}.", "batch_not_found")
    return batch


async def batch_get(request: web.Request) -> web.Response:
    batch = _batch(request)
    if isinstance(batch, web.Response):
        return batch
    return web.json_response(_shown(request.app, batch))


async def batch_list(request: web.Request) -> web.Response:
    batches = sorted(request.app[BATCHES].values(), key=lambda b: b.created, reverse=True)
    data = [_shown(request.app, batch) for batch in batches]
    return web.json_response(
        {
            "object": "list",
            "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": False,
        }
    )


async def batch_cancel(request: web.Request) -> web.Response:
    batch = _batch(request)
    if isinstance(batch, web.Response):
        return batch
    now = time.time()
    status = batch.status(now)
    if status in ("validating", "in_progress"):
        batch.cancelled_at = now
    elif status not in ("cancelling", "cancelled"):
        return error(409, f"Cannot cancel a batch that is {status}.", "batch_not_cancellable")
    return web.json_response(_shown(request.app, batch))


def _shown(app: web.Application, batch: Batch) -> dict:
    """The batch as it stands; once the clock says it has ended, its output and error files
    are written in the background, and it is finalizing (or cancelling) until they are."""
    now = time.time()
    shown = batch.as_json(now)
    if batch.ended or shown["status"] not in TERMINAL or shown["status"] == "failed":
        return shown
    if not batch.writing:
        batch.writing = True
        asyncio.get_running_loop().create_task(_finalize(app, batch, shown["status"]))
    shown["status"] = "cancelling" if shown["status"] == "cancelled" else "finalizing"
    return shown


async def _finalize(app: web.Application, batch: Batch, ended: str) -> None:
    """Answer the lines done by the batch's end, and write its output and error files."""
    end = batch.cancelled_at if ended == "cancelled" else batch.created + batch.seconds
    done = len(batch.lines) if ended == "completed" else batch.done_by(end)
    output, errors = [], []
    for index, line in enumerate(batch.lines):
        custom_id = line["custom_id"]
        if index >= done:
            errors.append(not_run_row(custom_id, ended))
        elif index in batch.failing:
            body = {
                "error": {"message": FAILED_LINE, "type": "server_error", "code": "server_error"}
            }
            errors.append(response_row(custom_id, 500, body))
        else:
            status, body = app[ANSWER](line["body"])
            row = response_row(custom_id, status, body)
            (output if status == 200 else errors).append(row)
        if index % YIELD_EVERY == YIELD_EVERY - 1:
            await asyncio.sleep(0)
    for rows, attribute in ((output, "output_file_id"), (errors, "error_file_id")):
        if rows:
            stored = StoredFile(
                id=new_id("file"),
                filename=f"{batch.id}_{attribute}.jsonl",
                purpose="batch_output",
                content=_json_lines(rows),
            )
            app[FILES][stored.id] = stored
            setattr(batch, attribute, stored.id)
    batch.counts = {"total": len(batch.lines), "completed": len(output), "failed": len(errors)}
    batch.ended = ended
    tally = app[COUNTS]
    tally["finalized"] += 1
    tally["lines_answered"] += len(output)
    tally["lines_failed"] += len(errors) - (len(batch.lines) - done)
    tally["lines_not_run"] += len(batch.lines) - done
