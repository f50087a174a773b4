"""What a benchmark runs in: PostgreSQL and Redis found (or started, as `make run` starts
them), a database of the benchmark's own made afresh and migrated, and the measurements in a
child process whose Django settings see that database from the start."""

import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent


def with_db(url: str, name: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def measured(
    script: str, *, db_name: str, redis_db: int | None, keep_db: bool = False, **env: str
) -> int:
    """Run `script --inner` with this command's arguments against a new database `db_name`
    (dropped afterwards unless `keep_db`) and, given `redis_db`, that Redis database as cache
    and broker; `env` adds settings. The child's exit status."""
    import psycopg

    from config.stack import Stack

    stack = Stack()
    try:
        stack.start_services()
        child = dict(stack.env, DATABASE_URL=with_db(stack.env["DATABASE_URL"], db_name))
        if redis_db is not None:
            redis_url = urlunparse(urlparse(stack.env["REDIS_URL"])._replace(path=f"/{redis_db}"))
            child.update(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url)
        # As in production: with DEBUG on, Django keeps every query's SQL per process and
        # formats it, which a worker making thousands of writes should not measure.
        child.update(DEBUG="false", **env)
        server = with_db(stack.env["DATABASE_URL"], "postgres").replace(
            "postgres://", "postgresql://", 1
        )
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {db_name}")
        try:
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "-v", "0"],
                cwd=ROOT,
                env=child,
                check=True,
            )
            return subprocess.call(
                [sys.executable, script, "--inner", *sys.argv[1:]], cwd=ROOT, env=child
            )
        finally:
            if not keep_db:
                with psycopg.connect(server, autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)")
    finally:
        stack.stop()
