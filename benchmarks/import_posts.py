"""Importing candidate posts at the published pool's scale, against a raw COPY of the same file.

    .venv/bin/python benchmarks/import_posts.py               # 3,000,000 posts
    .venv/bin/python benchmarks/import_posts.py --rows 200000 # a quick check

Against a database of its own (assay_bench_import, created, migrated and dropped on the
server of DATABASE_URL; the embedded one when unset):

1. benchmarks/make_candidate_posts.py writes N posts to a temporary CSV file;
2. the baseline: the same file loaded by a bare `COPY ... FROM STDIN (FORMAT csv)` into an
   unindexed scratch table of text columns (PostgreSQL's own parser, no checks), in the
   same run;
3. the import path: `manage.py import_posts FILE` in a subprocess (every check, the COPY
   into the indexed table, the topic rows, VACUUM ANALYZE), whose peak RSS is read from
   wait4's rusage;
4. a draw of 100 posts in each of the nine topics afterwards (`sample_draw`).

Targets: import time at most 2 x the raw COPY's; the importer's peak RSS at most 300 MB;
the nine draws in at most 5 s in all. Prints a markdown report.
"""

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DB_NAME = "assay_bench_import"
GENERATOR = ROOT / "benchmarks" / "make_candidate_posts.py"
TIME_RATIO_MAX, RSS_MAX_MB, DRAWS_MAX_S = 2.0, 300, 5.0
SCRATCH = "bench_raw_posts"


def with_db(url: str, name: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def raw_copy(path: Path) -> float:
    """Seconds to COPY the file, as PostgreSQL's CSV parser reads it, into a bare table."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {SCRATCH}")
        cursor.execute(
            f"CREATE TABLE {SCRATCH} (external_id text, subreddit text, title text, body text, "
            "created_utc text, topics text)"
        )
        cursor.execute("CHECKPOINT")
        started = time.perf_counter()
        with (
            cursor.cursor.copy(f"COPY {SCRATCH} FROM STDIN (FORMAT csv, HEADER true)") as copy,
            path.open("rb") as f,
        ):
            while chunk := f.read(1 << 20):
                copy.write(chunk)
        elapsed = time.perf_counter() - started
        cursor.execute(f"SELECT count(*) FROM {SCRATCH}")  # noqa: S608 (a constant)
        rows = cursor.fetchone()[0]
        cursor.execute(f"DROP TABLE {SCRATCH}")
        cursor.execute("CHECKPOINT")
    return elapsed, rows


def import_run(path: Path) -> tuple[float, float, int, str]:
    """(seconds, peak RSS in MB, exit status, last output) of `manage.py import_posts`."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "import_posts", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    out = process.stdout.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), out.strip()


def draws() -> tuple[float, list[tuple[str, int, float]]]:
    from apps.questions.models import Topic
    from apps.questions.services.sampling import sample_draw

    timings = []
    for seed, topic in enumerate(Topic.objects.order_by("order"), start=1):
        started = time.perf_counter()
        sample = sample_draw(topic=topic, size=100, seed=seed)
        timings.append((topic.name, sample.posts.count(), time.perf_counter() - started))
    return sum(t for _n, _c, t in timings), timings


def inner(opts) -> int:
    import django

    django.setup()
    from django.db import connection

    say = print
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        path = Path(tmp) / "candidate-posts.csv"
        started = time.perf_counter()
        with path.open("w") as out:
            subprocess.run([sys.executable, str(GENERATOR), str(opts.rows)], stdout=out, check=True)
        made = time.perf_counter() - started
        size_mb = path.stat().st_size / 1e6
        raw_s, raw_rows = raw_copy(path)
        connection.close()
        import_s, rss_mb, code, out = import_run(path)
        if code != 0:
            say(f"import_posts failed (exit {code}): {out}")
            return 1
    draws_s, timings = draws()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM questions_sourcepost")
        posts = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM questions_sourceposttopic")
        topic_rows = cursor.fetchone()[0]
    ratio = import_s / raw_s
    now = dt.datetime.now(dt.UTC)
    say(f"Measured {now:%Y-%m-%d %H:%M} UTC.")
    say(
        f"{opts.rows:,} posts, {size_mb:,.0f} MB of CSV (generated in {made:.0f} s, not "
        f"measured); {os.cpu_count()} cores; PostgreSQL on the same machine"
    )
    say("")
    say("| path | rows | seconds | rows/s |")
    say("|---|---|---|---|")
    say(
        f"| raw COPY (FORMAT csv) into an unindexed scratch table | {raw_rows:,} | "
        f"{raw_s:.1f} | {raw_rows / raw_s:,.0f} |"
    )
    say(
        f"| `manage.py import_posts` (checks, COPY, topic rows, VACUUM ANALYZE) | {posts:,} | "
        f"{import_s:.1f} | {posts / import_s:,.0f} |"
    )
    say("")
    say(f"Stored: {posts:,} posts, {topic_rows:,} topic rows. Importer: {out}")
    say("")
    say("| topic | drawn | seconds |")
    say("|---|---|---|")
    for name, count, seconds in timings:
        say(f"| {name} | {count} | {seconds:.2f} |")
    say("")
    checks = [
        ("import time / raw COPY time", ratio <= TIME_RATIO_MAX, f"{ratio:.2f} (target ≤ 2)"),
        ("importer peak RSS", rss_mb <= RSS_MAX_MB, f"{rss_mb:.0f} MB (target ≤ {RSS_MAX_MB})"),
        ("nine draws of 100", draws_s <= DRAWS_MAX_S, f"{draws_s:.2f} s (target ≤ 5)"),
    ]
    say("| check | met | measured |")
    say("|---|---|---|")
    for label, ok, measured in checks:
        say(f"| {label} | {'yes' if ok else '**NO**'} | {measured} |")
    return 0 if all(ok for _l, ok, _m in checks) else 2


def outer(opts) -> int:
    """Start (or find) PostgreSQL and Redis, make a database of our own, and measure in a
    child process whose Django settings see it from the start."""
    import psycopg

    from config.stack import Stack

    stack = Stack()
    try:
        stack.start_services()
        env = dict(
            stack.env, DATABASE_URL=with_db(stack.env["DATABASE_URL"], DB_NAME), DEBUG="false"
        )
        server = with_db(stack.env["DATABASE_URL"], "postgres").replace(
            "postgres://", "postgresql://", 1
        )
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {DB_NAME}")
        try:
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
            )
            return subprocess.call(
                [sys.executable, __file__, "--inner", *sys.argv[1:]], cwd=ROOT, env=env
            )
        finally:
            if not opts.keep_db:
                with psycopg.connect(server, autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    finally:
        stack.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--keep-db", action="store_true", help="leave the database for a look")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    return inner(opts) if opts.inner else outer(opts)


if __name__ == "__main__":
    sys.exit(main())
