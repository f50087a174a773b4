import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from apps.accounts.roles import Role
from tests.factories import PASSWORD, user_with_role
from tests.llm.offline_fixture import offline_provider, offline_provider_url

__all__ = ["offline_provider", "offline_provider_url"]

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"

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
def password():
    return PASSWORD


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
            [celery, "-A", "config", "worker", "--pool", pool, "--queues", queue,
             "--hostname", f"{uuid.uuid4().hex[:8]}@%h", "--without-mingle", "--without-gossip",
             "--loglevel", "WARNING"],
            cwd=ROOT, env=child_env, start_new_session=True,
        )  # fmt: skip
        processes.append(process)
        return queue, process

    yield start
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def celery_worker_queue(start_worker):
    queue, _process = start_worker()
    return queue


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
    ("apps.questions.migrations.0002_seed_topics", "seed"),
    ("apps.rubrics.migrations.0002_shared_criteria_v1", "seed"),
    ("apps.surveys.migrations.0002_default_items", "seed"),
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
    items.sort(key=lambda item: "tests/browser/" in str(item.path))
