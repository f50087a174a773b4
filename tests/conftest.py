"""Every fixture of the suite. Rows are made by tests/factories.py; the offline provider's
fixtures are defined in tests/llm/offline_fixture.py (the benchmarks start it the same way)."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings
from pathlib import Path

import pytest
from django.conf import settings

from apps.accounts.roles import Role
from tests.factories import CODES, FIXTURE, PASSWORD, responses_csv, user_with_role
from tests.llm.listener import Listener
from tests.llm.offline_fixture import offline_provider, offline_provider_url

__all__ = ["offline_provider", "offline_provider_url"]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses to run
# inside one unless told that this is a test process.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROLES = [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER]


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Tests sign in many new users and test no hash: the production hasher would be most of
    # their time. Production settings are checked in a subprocess (tests/test_settings.py).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_user(db):
    return user_with_role


@pytest.fixture
def role_client(db, client):
    """`role_client(role)` is a test client signed in as a new user with that role (None: none)."""

    def signed_in(role: Role | None):
        user = user_with_role(role)
        client.force_login(user)
        return client

    return signed_in


@pytest.fixture
def listener():
    """A server on 127.0.0.1 that records what reaches it (tests/llm/listener.py)."""
    server = Listener()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def provider_key(monkeypatch, settings):
    """`provider_key(variable, secret)`: a provider key in the environment, which the operator
    lets go to this machine's stand-in providers (LLM_KEY_HOSTS), as for a self-hosted one."""

    def set_key(variable: str, secret: str) -> None:
        monkeypatch.setenv(variable, secret)
        settings.LLM_KEY_HOSTS = {**settings.LLM_KEY_HOSTS, variable: frozenset({"127.0.0.1"})}

    return set_key


@pytest.fixture
def password():
    return PASSWORD


@pytest.fixture
def expert(db):
    return user_with_role(Role.EXPERT, first_name="Erin", last_name="Expert")


@pytest.fixture
def expert2(db):
    return user_with_role(Role.EXPERT, first_name="Emeka", last_name="Expert")


@pytest.fixture
def reviewer(db):
    return user_with_role(Role.REVIEWER, first_name="Rosa", last_name="Reviewer")


@pytest.fixture
def researcher(db):
    return user_with_role(Role.RESEARCHER, first_name="Rahul", last_name="Researcher")


@pytest.fixture
def scenarios(db):
    """The 40 PrivacyLens fixture scenarios, imported, by name."""
    from apps.surveys import services
    from apps.surveys.models import Scenario

    services.scenario_import_json(text=FIXTURE.read_bytes())
    return list(Scenario.objects.order_by("name"))


@pytest.fixture
def make_study(scenarios):
    """`make_study(count=40, live=True, **fields)`: a study over the first `count` fixture
    scenarios, each with its (imported) response."""
    from apps.surveys import services
    from apps.surveys.forms import DEFAULT_TEXTS
    from apps.surveys.models import StudyStatus

    def make(count: int = 40, live: bool = True, **fields):
        values = {"name": "Test study", **DEFAULT_TEXTS, **CODES, **fields}
        study = services.study_create(scenarios=scenarios[:count], **values)
        services.response_import_csv(text=responses_csv(scenarios[:count]), study=study)
        if live:
            study = services.study_set_status(study=study, status=StudyStatus.LIVE)
        return study

    return make


RUBRIC_QUESTION = (
    "I got a text saying my bank account is locked and to log in at a link. I clicked it and "
    "typed my password before I noticed the address looked odd. What should I do now?"
)


@pytest.fixture
def people(migrated_rows):
    """Two experts and a reviewer, for tests where people work together on a rubric."""
    return {
        "erin": user_with_role(Role.EXPERT, username="erin", first_name="Erin", last_name="Expert"),
        "emeka": user_with_role(
            Role.EXPERT, username="emeka", first_name="Emeka", last_name="Expert"
        ),
        "rosa": user_with_role(
            Role.REVIEWER, username="rosa", first_name="Rosa", last_name="Reviewer"
        ),
    }


@pytest.fixture
def question(people):
    """A question assigned to Erin, with Rosa as its reviewer."""
    from tests.factories import assign, question_make

    question = question_make(topic="scams", text=RUBRIC_QUESTION, external_id="scams-bank-text")
    assign(question, author=people["erin"], reviewer=people["rosa"])
    return question


@pytest.fixture
def llm_worker(route_to_worker, offline_provider):
    """A real worker for the rubric editor's model calls (suggestions and sample answers),
    with the offline models configured for both."""
    from apps.rubrics.models import AuthoringSettings
    from apps.runs.services import reference_models_set
    from tests.factories import offline_model
    from workers.engine import run_batch_task

    queue = route_to_worker(run_batch_task)
    url = offline_provider(latency_ms=150)
    draft_model = offline_model(url, name="offline-thorough")
    AuthoringSettings.objects.update_or_create(pk=1, defaults={"draft_model": draft_model})
    reference_models_set(
        models=[offline_model(url, name=n) for n in ("offline-terse", "offline-friendly")]
    )
    return queue


@pytest.fixture
def migrated_rows(transactional_db):
    """A transactional test whose seeded rows (topics, prompts, shared criteria) are present:
    `seeded_rows` below puts them back after an earlier test's flush."""


def live_database_url() -> str:
    """The test database, as a URL a child process (a Celery worker) can use."""
    db = settings.DATABASES["default"]
    user = db.get("USER") or "postgres"
    auth = f"{user}:{db['PASSWORD']}@" if db.get("PASSWORD") else f"{user}@"
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


@pytest.fixture
def start_worker(transactional_db):
    """`start_worker(queue=None, env=None)` starts a real Celery worker process on a queue of
    its own, against the test database, and returns (queue, process). Stopped at teardown.

    Queue names are unique so that a worker of `make run` sharing the broker cannot take the
    test's messages.
    """
    processes = []
    celery = shutil.which("celery", path=str(Path(sys.executable).parent))

    def start(queue: str | None = None, env: dict | None = None, pool: str = "solo"):
        queue = queue or f"test-{uuid.uuid4().hex[:12]}"
        child_env = dict(os.environ, DATABASE_URL=live_database_url(), DB_CONN_MAX_AGE="0")
        child_env.update(env or {})
        process = subprocess.Popen(
            [
                celery,
                "-A",
                "config",
                "worker",
                "--pool",
                pool,
                "--queues",
                queue,
                "--hostname",
                f"{uuid.uuid4().hex[:8]}@%h",
                "--without-mingle",
                "--without-gossip",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            env=child_env,
            start_new_session=True,
        )
        processes.append(process)
        return queue, process

    yield start
    for process in processes:
        worker_killed(process)


def worker_killed(process: subprocess.Popen) -> None:
    """Kill a worker (or beat) started in a session of its own, and its pool's children, at
    once. The test is over: a warm shutdown (SIGTERM) would wait, seconds per test, for the
    task in hand and each child, and nothing the test checks comes after it. Its unacknowledged
    messages stay on its queue, which no other worker reads."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.fixture
def celery_worker_queue(start_worker):
    queue, _process = start_worker()
    return queue


@pytest.fixture
def route_to_worker(start_worker):
    """`route_to_worker(task)` starts a real worker on a queue of its own and routes `task`
    there for the test, so that what a view enqueues reaches it (and a `make run` worker on
    the same broker does not take it). Returns the queue."""
    from config.celery import app

    routes = app.conf.task_routes

    def route(task) -> str:
        queue, _process = start_worker()
        app.conf.update(task_routes={**app.conf.task_routes, task.name: {"queue": queue}})
        return queue

    yield route
    app.conf.update(task_routes=routes)


@pytest.fixture(autouse=True)
def process_caches_cleared():
    """Caches that live in the process (the survey items, rendered scenario HTML) start
    empty in every test, as they would in a new worker process."""
    from apps.surveys.selectors import process_caches_clear

    process_caches_clear()
    yield
    process_caches_clear()


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    return predicate()


# Data migrations that seed rows (each seed is idempotent). A transactional test (live server,
# worker process) ends by flushing every table, which removes these rows for the tests after
# it; `seeded_rows` puts them back, committed, before the next test that uses the database.
SEEDS = (
    ("apps.accounts.migrations.0002_role_groups", "create_roles"),
    ("apps.llm.migrations.0002_default_prompts", "seed"),
    ("apps.llm.migrations.0003_grading_prompts_explanation_first", "seed"),
    ("apps.llm.migrations.0004_rewrite_prompt_v2", "seed"),
    ("apps.llm.migrations.0005_scenario_response_prompt_v2", "seed"),
    ("apps.llm.migrations.0006_sample_prompt_question_alone", "seed"),
    ("apps.llm.migrations.0007_survey_proxy_prompt_v2", "seed"),
    ("apps.llm.migrations.0013_survey_proxy_answers_prompt", "seed"),
    ("apps.questions.migrations.0002_seed_topics", "seed"),
    ("apps.questions.migrations.0005_seed_screening_and_buckets", "seed"),
    ("apps.rubrics.migrations.0002_shared_criteria_v1", "seed"),
    ("apps.rubrics.migrations.0003_shared_criteria_v2_as_published", "publish"),
    ("apps.surveys.migrations.0002_default_items", "seed"),
    ("apps.surveys.migrations.0008_published_scale_labels", "items_update"),
)
DB_FIXTURES = {"db", "transactional_db", "live_server", "start_worker"}


def reseed() -> None:
    from importlib import import_module

    from django.apps import apps

    for module, function in SEEDS:
        getattr(import_module(module), function)(apps, None)


@pytest.fixture(autouse=True)
def seeded_rows(request):
    uses_db = DB_FIXTURES & set(request.fixturenames)
    if not (uses_db or request.node.get_closest_marker("django_db")):
        return
    from django.contrib.auth.models import Group

    # Before the test's own transaction opens (autouse fixtures come first), so the rows
    # put back are committed once rather than rolled back after every test.
    with request.getfixturevalue("django_db_blocker").unblock():
        if not Group.objects.filter(name="expert").exists():
            reseed()


@pytest.fixture(autouse=True)
def reset_rate_limits():
    """Rate-limit counters live in Redis per minute; one test's traffic must not limit the next."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    keys = list(client.scan_iter("assay:ratelimit:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


def pytest_collection_modifyitems(items):
    """Browser tests last: Playwright's sync API keeps an event loop running in the test
    thread for the rest of the session, which code under test that starts its own loop
    (asyncio.run, async_to_sync) must not meet."""
    for item in items:
        if "tests/browser/" in str(item.path):
            item.add_marker(pytest.mark.browser)
    items.sort(key=lambda item: "tests/browser/" in str(item.path))


# --- headless Chromium ---------------------------------------------------------------------
# Without Chromium the browser tests skip with a loud notice, unless REQUIRE_BROWSER=1 (CI),
# when they fail. Screenshots go to test-artifacts/.

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> str | None:
    explicit = os.environ.get("CHROMIUM_PATH")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    if path is None:
        message = "Chromium not found (set CHROMIUM_PATH or install chromium): browser tests"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"{message} are required (REQUIRE_BROWSER=1)")
        warnings.warn(f"\n\n*** {message} SKIPPED ***\n", stacklevel=1)
        pytest.skip(f"{message} skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=path, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


# Installed in every page before the page's own scripts, outside its policy: each violation
# is reported to the test through a binding, which knows the page it came from.
POLICY_WATCH = """
document.addEventListener('securitypolicyviolation', (e) => window.__policyViolation(
  `${e.effectiveDirective} refused ${e.blockedURI || 'inline'}` +
  (e.sample ? ` "${e.sample}"` : '') + ` at ${e.sourceFile || e.documentURI}:${e.lineNumber}`
));
"""


@pytest.fixture
def policy_violations():
    """What the Content-Security-Policy refused on any page of the test's browser contexts,
    as `page URL: what` lines: each `securitypolicyviolation` event and each console message
    Chromium writes for one. `new_context` fails the test at teardown if there is any."""
    return []


def policy_watch(context, violations: list[str]) -> None:
    def reported(source, text):
        violations.append(f"{source['page'].url}: {text}")

    def logged(message):
        if "Content Security Policy" in message.text:
            where = message.page.url if message.page else message.location.get("url")
            violations.append(f"{where}: console: {message.text}")

    context.expose_binding("__policyViolation", reported)
    context.add_init_script(POLICY_WATCH)
    context.on("console", logged)


def events_flushed(context) -> None:
    """Let each open page dispatch what it has queued (a violation's event is a task queued
    after the refusal), so that a violation at the test's last step is not lost."""
    from playwright.sync_api import Error

    for page in context.pages:
        # A page closed, crashed or navigating away has nothing more to tell.
        with contextlib.suppress(Error):
            page.evaluate("() => new Promise((resolve) => setTimeout(resolve, 50))")


@pytest.fixture
def new_context(browser, live_server, policy_violations):
    """`new_context(**kwargs)`: a browser context on the live server, every page of which is
    watched for Content-Security-Policy violations; the test fails at teardown on any."""
    contexts = []

    def make(**kwargs):
        kwargs.setdefault("base_url", live_server.url)
        context = browser.new_context(**kwargs)
        context.set_default_timeout(15_000)
        policy_watch(context, policy_violations)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        events_flushed(context)
        context.close()
    if policy_violations:
        lines = "\n  ".join(policy_violations)
        pytest.fail(f"The Content-Security-Policy refused something:\n  {lines}", pytrace=False)


@pytest.fixture
def page(new_context):
    return new_context().new_page()


FULL_PAGE_MAX_PX = 4000


@pytest.fixture
def screenshot(request):
    ARTIFACTS.mkdir(exist_ok=True)

    def take(page, label: str):
        name = (
            f"{request.node.name}-{label}.png".replace("/", "_").replace("[", "-").replace("]", "")
        )
        # A full-page capture of a very tall page leaves Chromium's hit testing off from its
        # layout (a click after it landed beside the button it was aimed at): past that
        # height, the visible part only.
        tall = page.evaluate("document.documentElement.scrollHeight") > FULL_PAGE_MAX_PX
        page.screenshot(path=str(ARTIFACTS / name), full_page=not tall)

    return take


# --- stand-ins for paid providers, at the HTTP boundary ---------------------------------------


@pytest.fixture
def stand_in_provider():
    """`stand_in_provider(answer) -> base_url`: an OpenAI-compatible server on loopback that
    answers every chat completion with `answer(api_key) -> (status, json body, headers)`."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    servers = []

    def start(answer) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                status, payload, headers = answer(key)
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def recording_provider(offline_provider_url):
    """`(base_url, requests)`: a loopback server in front of the offline provider that passes
    every request on over HTTP and keeps each chat completion's JSON body in `requests`, in
    the order they arrived: what the provider was sent, read at the HTTP boundary."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    requests, lock = [], threading.Lock()
    passed = ("Content-Type", "Authorization", "X-Assay-Purpose", "X-Offline-Faults")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.endswith("/chat/completions"):
                with lock:
                    requests.append(json.loads(body))
            answer = httpx.post(
                offline_provider_url.removesuffix("/v1") + self.path,
                content=body,
                headers={h: self.headers[h] for h in passed if self.headers.get(h)},
                timeout=60,
            )
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    server.shutdown()
    server.server_close()


@pytest.fixture
def echoing_provider(stand_in_provider):
    """`echoing_provider(status) -> base_url`: answers every chat completion with `status`
    and an error body that repeats the API key it was sent, as some providers do."""

    def start(status: int) -> str:
        def answer(key):
            error = {
                "message": f"Incorrect API key provided: {key}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
            return status, {"error": error}, {"X-Echoed-Key": key}

        return stand_in_provider(answer)

    return start


@pytest.fixture
def answering_provider(stand_in_provider):
    """`answering_provider(content) -> base_url`: every chat completion answers `content`."""

    def start(content: str) -> str:
        def answer(_key):
            return (
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "stand-in",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
                },
                {},
            )

        return stand_in_provider(answer)

    return start
