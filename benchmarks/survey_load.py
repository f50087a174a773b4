"""Survey load: 500 participants arriving within a minute, against gunicorn with production
settings on 127.0.0.1, and in the same run a minimal view inserting one row as the baseline.

    .venv/bin/python benchmarks/survey_load.py [--participants 500] [--arrival 60] [--speedup 10]

Needs DATABASE_URL's server (a database of its own, `assay_bench_surveys`, is created and
dropped; the database named in the URL is not touched) and REDIS_URL.

Server: gunicorn as the Docker image runs it (3 workers x 4 threads, access log on), with
DJANGO_ENV=production. TLS ends at a proxy in production, so every request carries
`X-Forwarded-Proto: https` and SECURE_SSL_REDIRECT stays on; cookies are Secure and CSRF checks
Origin, as behind the real proxy. The rate limiter runs on every request; only its limit is
raised, because every simulated participant comes from one address.

Client: one asyncio process, one aiohttp session (pooled keep-alive connections), cookies kept
per participant by hand. Each participant behaves as a browser: opens the Prolific link (and
fetches the page's CSS and scripts once), reads the consent form and agrees, follows every
redirect with a GET, reads the instructions, answers five scenarios (each answer with its
explanation autosaved as htmx does, then the page submitted) and the demographics, and lands on
the page with the completion code.

Pacing models a person, compressed in time by --speedup (10: a 20-minute session takes about
two minutes, so the load is ten times what 500 real people would make). A person's pauses
(medians, uncompressed): 30 s on the consent form, 45 s on the instructions and example, 60 s
reading a scenario before the first answer, 20 s for each further answer (choose, write a
sentence, autosave), 5 s before submitting the page, 20 s on demographics. Each pause is drawn
lognormally around its median (sigma 0.5) and scaled by the person's own pace (lognormal,
sigma 0.2, kept within 0.7-1.4: a longer tail would only thin the load out and lengthen the
run). So participants overlap as they would, and the report shows how many were active at once
(from their first request to their last response) and the latency while at least 100 were.

Prints p50/p95/p99 per step, the database round trips each step made (median and most,
BEGIN and COMMIT included, counted in the server by benchmarks/queries.py) and the time Django
spent on it there (past gunicorn's queue), each step's p95 as a ratio of the answer save's
p95 in the same run, errors, lost, duplicated or wrong answers,
scenarios over or under k, peak active participants, and answer-save throughput against the baseline view: both driven
by the same number of concurrent clients, interleaved in short rounds so that other load on the
machine affects both alike. Writes the output, dated, to benchmarks/RESULTS.md ("## Survey
load"), replacing the previous one.
"""

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import os
import random
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlencode, urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import aiohttp  # noqa: E402
import psutil  # noqa: E402

DB_NAME = "assay_bench_surveys"
K, N = 5, 5
HOST = "127.0.0.1"
ANSWERS = {"H1": "yes", "H2": "4", "H3": "3", "P1": "5", "P2": "2", "P3": "4", "P4": "4"}
STEPS = [
    "entry",
    "static files",
    "consent",
    "instructions page",
    "instructions",
    "scenario page",
    "answer save",
    "scenario submit",
    "demographics page",
    "demographics",
    "done page",
]
# A person's pauses in seconds (medians) before the action, before compression.
THINK = {
    "consent": 30,
    "instructions": 45,
    "read scenario": 60,
    "answer": 20,
    "submit": 5,
    "demographics": 20,
}
PAUSE_SIGMA, PACE_SIGMA = 0.5, 0.2
ROUNDS = 5  # the throughput comparison alternates baseline and answer saves this many times
BUSY = 100  # "participants active at once" that the latency target is stated for
QUERIES_HEADER = "X-Bench-Queries"  # benchmarks/queries.py: the request's database round trips
SERVER_MS_HEADER = "X-Bench-Server-Ms"  # and the time Django took, past gunicorn's queue
SAVE = "answer save"  # the step every other step's p95 is compared with, in the same run


def session_minutes() -> float:
    """A person's mean time from the link to the code, uncompressed (the requests' own time
    left out)."""
    medians = THINK["consent"] + THINK["instructions"] + THINK["demographics"]
    medians += N * (THINK["read scenario"] + (len(ANSWERS) - 1) * THINK["answer"] + THINK["submit"])
    return medians * math.exp(PAUSE_SIGMA**2 / 2) * math.exp(PACE_SIGMA**2 / 2) / 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def with_db(url: str, name: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def run_sql(admin_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql)


def explanation(pid: str, code: str) -> str:
    return f"{code} from {pid[:8]}: it keeps the private details out of the reply."


def prepare(env: dict, participants: int) -> tuple[str, str]:
    """Migrate a fresh database; one live study with participants x N / K scenarios."""
    admin = with_db(env["DATABASE_URL"], "postgres")
    run_sql(admin, f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    run_sql(admin, f"CREATE DATABASE {DB_NAME}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    # Production serves hashed static files from a manifest, as the Docker image does.
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    scenarios = participants * N // K
    code = f"""
import csv, io, json
from django.db import connection
from apps.surveys import services
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import Scenario
base = json.load(open('apps/surveys/fixtures/privacylens-scenarios-40.json'))
records = []
for i in range({scenarios + 40}):
    r = json.loads(json.dumps(base[i % 40])); r['name'] = f"bench{{i}}"; records.append(r)
services.scenario_import_json(text=json.dumps(records))
out = io.StringIO(); w = csv.writer(out); w.writerow(['scenario', 'response', 'model'])
for r in records: w.writerow([r['name'], 'Hi, here is what you asked for, without the private details.', 'bench'])
codes = dict(code_completed='DONE1', code_no_consent='NOPE1', code_failed_attention='ATTN1', code_full='FULL1')
def study(slug, names, k):
    s = services.study_create(slug=slug, name=slug, scenarios=Scenario.objects.filter(name__in=names),
        ratings_per_scenario=k, scenarios_per_participant={N}, **DEFAULT_TEXTS, **codes)
    services.response_import_csv(text=out.getvalue(), study=s)
    services.study_set_status(study=s, status='live')
study('load', [f"bench{{i}}" for i in range({scenarios})], {K})
study('saves', [f"bench{{i}}" for i in range({scenarios}, {scenarios + 40})], 1000)
with connection.cursor() as c:
    c.execute('CREATE TABLE bench_baseline (id bigserial primary key, value text, created_at timestamptz)')
"""
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, check=True
    )
    return "load", "saves"


class Server:
    """gunicorn as docker/Dockerfile starts it (access log to a file instead of stdout)."""

    def __init__(self, env: dict, workers: int, threads: int, log_dir: str):
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "config.wsgi",
                "--bind",
                f"{HOST}:{self.port}",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--access-logfile",
                str(Path(log_dir) / "access.log"),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        self.base = f"http://{HOST}:{self.port}"

    async def ready(self, http: aiohttp.ClientSession, workers: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with http.get(f"{self.base}/healthz", headers=PROXY) as r:
                    if r.status == 200:
                        break
            await asyncio.sleep(0.2)
        else:
            raise SystemExit("gunicorn did not start")
        # Every worker up and serving (connections spread over them) before anything is timed.
        while len(psutil.Process(self.process.pid).children()) < workers:
            await asyncio.sleep(0.2)

        async def ping():
            async with http.get(f"{self.base}/healthz", headers=PROXY) as r:
                await r.read()

        for _ in range(3):
            await asyncio.gather(*(ping() for _ in range(24)))

    def pids(self) -> list[int]:
        with contextlib.suppress(psutil.Error):
            return [self.process.pid, *(p.pid for p in psutil.Process(self.process.pid).children())]
        return [self.process.pid]

    def cpu_seconds(self) -> float:
        with contextlib.suppress(psutil.Error):
            procs = [psutil.Process(self.process.pid)]
            procs += procs[0].children(recursive=True)
            total = 0.0
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    t = p.cpu_times()
                    total += t.user + t.system
            return total
        return 0.0

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 15)
        self.process.wait(30)


PROXY = {"X-Forwarded-Proto": "https"}  # what the TLS-terminating proxy adds


@dataclass
class Run:
    """What the load phase records."""

    stats: dict = field(default_factory=lambda: defaultdict(list))  # step -> [ms]
    busy: dict = field(default_factory=lambda: defaultdict(list))  # step -> [ms] at >= BUSY
    queries: dict = field(default_factory=lambda: defaultdict(list))  # step -> [round trips]
    server: dict = field(default_factory=lambda: defaultdict(list))  # step -> [ms in Django]
    timeline: list = field(default_factory=list)  # (t, ms) for every request
    errors: list = field(default_factory=list)
    sessions: list = field(default_factory=list)  # seconds from first request to last response
    active: int = 0
    peak: int = 0
    started: float = 0.0


class Browser:
    """One participant's browser: its own cookies (the session's jar is a dummy), the Origin
    and Referer a browser sends, and the proxy's header."""

    def __init__(self, http: aiohttp.ClientSession, base: str, run: Run):
        self.http, self.base, self.run = http, base, run
        self.origin = "https://" + urlparse(base).netloc
        self.cookies: dict[str, str] = {}

    async def send(
        self, step: str, method: str, path: str, expect: int, *, htmx=False, data=None
    ) -> "Reply":
        headers = {**PROXY, "Origin": self.origin, "Referer": self.origin + "/"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if method == "POST":
            headers["X-CSRFToken"] = self.cookies.get("csrftoken", "")
        if htmx:
            headers["HX-Request"] = "true"
        started = time.perf_counter()
        try:
            async with self.http.request(
                method, self.base + path, headers=headers, data=data, allow_redirects=False
            ) as response:
                body = await response.text()
                status, got = response.status, response.headers
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.run.errors.append(f"{step}: {type(exc).__name__}")
            raise RuntimeError(step) from exc
        ms = (time.perf_counter() - started) * 1000
        self.run.stats[step].append(ms)
        self.run.timeline.append((started - self.run.started, ms))
        if self.run.active >= BUSY:
            self.run.busy[step].append(ms)
        if got.get(QUERIES_HEADER, "").isdigit():  # benchmarks/queries.py (not static files)
            self.run.queries[step].append(int(got[QUERIES_HEADER]))
            self.run.server[step].append(float(got.get(SERVER_MS_HEADER, "nan")))
        for raw in got.getall("Set-Cookie", []):
            name, _, rest = raw.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        if status != expect:
            self.run.errors.append(f"{step}: HTTP {status}")
            raise RuntimeError(step)
        return Reply(status, urlparse(got.get("Location", "")).path, body)

    async def follow(self, step: str, redirect: "Reply") -> tuple[str, str]:
        """GET the page a redirect points at, as a browser does; (its path, its body)."""
        return redirect.location, (await self.send(step, "GET", redirect.location, 200)).body


class Reply(NamedTuple):
    status: int
    location: str  # the path a redirect points at
    body: str


class Person:
    def __init__(self, speedup: float, rng: random.Random):
        self.rng, self.speedup = rng, speedup
        self.pace = min(1.4, max(0.7, rng.lognormvariate(0, PACE_SIGMA)))

    async def think(self, what: str) -> None:
        median = THINK[what] * self.pace / self.speedup
        await asyncio.sleep(median * self.rng.lognormvariate(0, PAUSE_SIGMA))


STATIC = re.compile(r'(?:href|src)="(/static/[^"]+)"')
SHOWN = re.compile(r'name="shown" value="([^"]+)"')


async def participant(http, base, slug, delay, speedup, run: Run, rng) -> str:
    await asyncio.sleep(delay)
    run.active += 1
    run.peak = max(run.peak, run.active)
    began = time.perf_counter()
    b, person = Browser(http, base, run), Person(speedup, rng)
    pid = secrets.token_hex(12)
    ids = {"PROLIFIC_PID": pid, "STUDY_ID": "b" * 24, "SESSION_ID": secrets.token_hex(12)}
    try:
        page = (await b.send("entry", "GET", f"/s/{slug}/?{urlencode(ids)}", 200)).body
        for asset in STATIC.findall(page):  # once: the browser caches them for the session
            await b.send("static files", "GET", asset, 200)
        await person.think("consent")
        shown = SHOWN.search(page)
        form = {**ids, "decision": "agree", "shown": shown.group(1) if shown else ""}
        r = await b.send("consent", "POST", f"/s/{slug}/consent/", 302, data=form)
        if r.location.endswith("/done/"):
            await b.follow("done page", r)
            return "full"
        path, _ = await b.follow("instructions page", r)
        await person.think("instructions")
        r = await b.send("instructions", "POST", path, 302)
        path, _ = await b.follow("scenario page", r)
        while "/scenario/" in path:
            await person.think("read scenario")
            form = {}
            for code, value in ANSWERS.items():
                if form:
                    await person.think("answer")
                fields = {f"value_{code}": value, f"explanation_{code}": explanation(pid, code)}
                r = await b.send(
                    "answer save", "POST", f"{path}answer/{code}/", 200, htmx=True, data=fields
                )
                if "Saved" not in r.body:
                    run.errors.append("answer save: not saved")
                form.update(fields)
            await person.think("submit")
            r = await b.send("scenario submit", "POST", path, 302, data=form)
            step = "scenario page" if "/scenario/" in r.location else "demographics page"
            path, _ = await b.follow(step, r)
        await person.think("demographics")
        demographics = {
            "age": "no_say",
            "gender": "no_say",
            "education": "no_say",
            "income": "no_say",
        }
        r = await b.send("demographics", "POST", path, 302, data=demographics)
        _, page = await b.follow("done page", r)
        if "DONE1" not in page:
            run.errors.append("done page: no completion code")
            return "error"
        return "finished"
    except RuntimeError:
        return "error"
    finally:
        run.active -= 1
        run.sessions.append(time.perf_counter() - began)


async def load(
    run: Run, base, slug, count, arrival, speedup, seed
) -> tuple[list[str], float, float]:
    rng = random.Random(seed)
    # gunicorn closes a keep-alive connection idle for 2 s (its --keep-alive default); reusing
    # one it is closing at that moment fails, so idle ones are let go sooner here.
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=1)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()
    ) as http:
        delays = sorted(rng.uniform(0, arrival) for _ in range(count))
        cpu, run.started = time.process_time(), time.perf_counter()
        outcomes = await asyncio.gather(
            *(
                participant(http, base, slug, d, speedup, run, random.Random(rng.random()))
                for d in delays
            )
        )
        wall = time.perf_counter() - run.started
    return outcomes, wall, time.process_time() - cpu


async def save_targets(http, base: str, slug: str, clients: int) -> list[tuple[str, dict, dict]]:
    """Enrol participants in the throughput study; one autosave request per (participant, item)."""
    targets, run = [], Run()
    for _ in range(clients):
        b = Browser(http, base, run)
        pid = secrets.token_hex(12)
        ids = {"PROLIFIC_PID": pid, "STUDY_ID": "b" * 24, "SESSION_ID": secrets.token_hex(12)}
        await b.send("entry", "GET", f"/s/{slug}/?{urlencode(ids)}", 200)
        r = await b.send(
            "consent", "POST", f"/s/{slug}/consent/", 302, data={**ids, "decision": "agree"}
        )
        r = await b.send("instructions", "POST", r.location, 302)
        path = r.location
        headers = {
            **PROXY,
            "Origin": b.origin,
            "Referer": b.origin + "/",
            "HX-Request": "true",
            "X-CSRFToken": b.cookies["csrftoken"],
            "Cookie": "; ".join(f"{k}={v}" for k, v in b.cookies.items()),
        }
        for code, value in ANSWERS.items():
            fields = {f"value_{code}": value, f"explanation_{code}": explanation(pid, code)}
            targets.append((f"{base}{path}answer/{code}/", fields, headers))
    return targets


async def hammer(http, requests, seconds: float, concurrency: int) -> tuple[int, float]:
    """(requests done, seconds taken) for `concurrency` clients sending `requests` round robin."""
    done = 0
    stop = time.monotonic() + seconds

    async def worker(offset: int):
        nonlocal done
        i = offset
        while time.monotonic() < stop:
            url, data, headers = requests[i % len(requests)]
            async with http.post(url, data=data, headers=headers) as r:
                await r.read()
                if r.status != 200:
                    raise SystemExit(f"{url}: HTTP {r.status}")
            done += 1
            i += concurrency

    started = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return done, time.monotonic() - started


async def throughput(base, slug, clients, seconds, rounds=ROUNDS) -> tuple[float, float]:
    """(baseline/s, answer saves/s): the same clients, alternating in `rounds` short rounds."""
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(
        connector=connector, cookie_jar=aiohttp.DummyCookieJar()
    ) as http:
        targets = await save_targets(http, base, slug, clients)
        baseline = [(f"{base}/bench/baseline/", {"value": "x" * 60}, PROXY)] * len(targets)
        await hammer(http, baseline, 1, clients)  # warm both paths, untimed
        await hammer(http, targets, 1, clients)
        totals = {"baseline": [0, 0.0], "saves": [0, 0.0]}
        for _ in range(rounds):
            for name, requests in (("baseline", baseline), ("saves", targets)):
                n, took = await hammer(http, requests, seconds / rounds, clients)
                totals[name][0] += n
                totals[name][1] += took
    return (totals["baseline"][0] / totals["baseline"][1], totals["saves"][0] / totals["saves"][1])


def process_cpu() -> dict[int, tuple[float, float, str, str]]:
    """pid -> (start time, CPU seconds, name, user) of every process that can be read."""
    out = {}
    for p in psutil.process_iter(["create_time", "cpu_times", "name", "username"]):
        info = p.info
        if info["cpu_times"] is not None:
            cpu = info["cpu_times"].user + info["cpu_times"].system
            out[p.pid] = (info["create_time"], cpu, info["name"] or "", info["username"] or "")
    return out


def others_cpu(before: dict, after: dict, ours: set[int], since: float) -> tuple[float, float]:
    """(PostgreSQL and Redis, every other process but ours): CPU seconds used between two
    process_cpu() snapshots. Processes that ended in between are missed: lower bounds."""
    db = other = 0.0
    for pid, (created, cpu, name, user) in after.items():
        if pid in ours:
            continue
        if pid in before and before[pid][0] == created:
            used = cpu - before[pid][1]
        elif created >= since:
            used = cpu
        else:
            continue
        if user in ("postgres", "redis") or name.startswith(("postgres", "redis")):
            db += used
        else:
            other += used
    return db, other


def cpu_seconds(before, after, idle: bool) -> float:
    """The machine's CPU seconds between two psutil.cpu_times(): busy, or idle (and waiting)."""
    fields = ("idle", "iowait") if idle else ("user", "nice", "system", "irq", "softirq", "steal")
    return sum(getattr(after, f) - getattr(before, f) for f in fields)


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]


def verify(env: dict) -> dict:
    code = f"""
import json
from collections import Counter
from django.db.models import Count, Q
from apps.surveys.models import Answer, Assignment, Participant, Study, StudyScenario
ANSWERS = {ANSWERS!r}
s = Study.objects.get(slug='load')
finished = Participant.objects.filter(study=s, status='finished')
expected = Assignment.objects.filter(participant__in=finished).count() * len(ANSWERS)
rows = Answer.objects.filter(assignment__participant__in=finished).values_list(
    'assignment_id', 'item__code', 'value', 'explanation', 'assignment__participant__prolific_pid')
per = Counter((a, c) for a, c, *_ in rows)
wrong = sum(1 for a, c, v, e, pid in rows
            if v != ANSWERS[c] or e != f"{{c}} from {{pid[:8]}}: it keeps the private details out of the reply.")
completed = dict(StudyScenario.objects.filter(study=s).annotate(
    n=Count('assignments', filter=Q(assignments__status='completed'))).values_list('pk', 'n'))
print(json.dumps(dict(finished=finished.count(), expected=expected, saved=len(per),
    duplicated=sum(1 for v in per.values() if v > 1), wrong=wrong,
    over=sum(1 for n in completed.values() if n > s.ratings_per_scenario),
    under=sum(1 for n in completed.values() if n < s.ratings_per_scenario),
    scenarios=len(completed))))
"""
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def timeline_rows(run: Run, active_at, wall: float, window: float = 15.0) -> list[str]:
    rows = [
        "| from s | active at once (max) | requests/s | p95 ms |",
        "| ---: | ---: | ---: | ---: |",
    ]
    buckets = defaultdict(list)
    for t, ms in run.timeline:
        buckets[int(t // window)].append(ms)
    for i in range(int(wall // window) + 1):
        values = buckets.get(i, [])
        peak = max((n for t, n in active_at if i * window <= t < (i + 1) * window), default=0)
        rows.append(
            f"| {i * window:.0f} | {peak} | {len(values) / window:.0f} | {pct(values, 95):.0f} |"
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--participants", type=int, default=500)
    parser.add_argument(
        "--arrival", type=float, default=60.0, help="seconds over which they arrive"
    )
    parser.add_argument("--speedup", type=float, default=10.0, help="time compression of pauses")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--save-seconds", type=float, default=10.0)
    parser.add_argument("--save-clients", type=int, default=16)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        raise SystemExit(
            "Set DATABASE_URL and REDIS_URL (the database named there is not touched)."
        )
    began, load_before = time.monotonic(), os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="assay-bench-")
    env = dict(
        os.environ,
        DATABASE_URL=with_db(os.environ["DATABASE_URL"], DB_NAME),
        DJANGO_SETTINGS_MODULE="benchmarks.settings",
        DJANGO_ENV="production",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS=f"{HOST},localhost",
        STATIC_ROOT=str(Path(tmp) / "static"),
        # One address sends everyone's requests here; the per-address limit is for the internet.
        SURVEY_RATE_LIMIT_PER_MINUTE="10000000",
    )
    for name in ("DJANGO_ALLOW_ASYNC_UNSAFE", "SECURE_SSL_REDIRECT", "DEBUG", "LOG_LEVEL"):
        env.pop(name, None)
    load_slug, saves_slug = prepare(env, args.participants)
    server = Server(env, args.workers, args.threads, tmp)
    run, active_at = Run(), []  # active_at: (s, participants active at once), 10 times a second
    load_end = []  # the load averages when the load phase ended
    others = []  # CPU seconds in the load phase: [PostgreSQL+Redis, other processes, machine]

    async def measured():
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
            await server.ready(http, args.workers)
        cpu0, machine0, procs0 = server.cpu_seconds(), psutil.cpu_times(), process_cpu()
        since = time.time()
        task = asyncio.ensure_future(
            load(
                run,
                server.base,
                load_slug,
                args.participants,
                args.arrival,
                args.speedup,
                args.seed,
            )
        )
        t0 = time.perf_counter()
        while not task.done():
            await asyncio.sleep(0.1)
            active_at.append((time.perf_counter() - t0, run.active))
        result = task.result()
        machine1, load_end[:] = psutil.cpu_times(), os.getloadavg()
        ours = {os.getpid(), *server.pids()}
        busy = cpu_seconds(machine0, machine1, idle=False)
        total = busy + cpu_seconds(machine0, machine1, idle=True)
        others[:] = [*others_cpu(procs0, process_cpu(), ours, since), total]
        server_cpu = server.cpu_seconds() - cpu0
        rates = await throughput(server.base, saves_slug, args.save_clients, args.save_seconds)
        return result, server_cpu, busy / total if total else float("nan"), rates

    try:
        (outcomes, wall, client_cpu), server_cpu, machine_busy, (base_rps, save_rps) = asyncio.run(
            measured()
        )
    finally:
        server.stop()
    v = verify(env)
    everything = [ms for step in STEPS for ms in run.stats.get(step, [])]
    busy_all = [ms for step in STEPS for ms in run.busy.get(step, [])]
    busy_seconds = sum(0.1 for _t, n in active_at if n >= BUSY)
    lines = [
        f"{dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} · {args.participants} participants "
        f"arriving within {args.arrival:.0f} s, a person's pauses compressed {args.speedup:g}x "
        f"(a ~{session_minutes():.0f} min session in ~{session_minutes() / args.speedup:.1f} min)"
        f" · gunicorn {args.workers} workers x {args.threads} threads (access log on, as "
        f"docker/Dockerfile), DJANGO_ENV=production, X-Forwarded-Proto: https with "
        f"SECURE_SSL_REDIRECT on · {os.cpu_count()} cores, load average (1 min) "
        f"{load_before[0]:.2f} before the run, {load_end[0]:.2f} as the load phase ended · "
        f"load phase {wall:.0f} s",
        "",
        f"| step | requests | queries (median, max) | p50 ms | p95 ms | p99 ms | "
        f"p95 ms at >= {BUSY} active | p95 / {SAVE} p95 | at >= {BUSY} active | "
        f"in Django p50 / p95 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    save_p95, save_busy_p95 = pct(run.stats.get(SAVE, []), 95), pct(run.busy.get(SAVE, []), 95)
    for step in STEPS:
        values, busy_values = run.stats.get(step, []), run.busy.get(step, [])
        counted = run.queries.get(step, [])
        queries = f"{pct(counted, 50):.0f}, {max(counted)}" if counted else "-"
        inside = run.server.get(step, [])
        django_ms = f"{pct(inside, 50):.0f} / {pct(inside, 95):.0f}" if inside else "-"
        lines.append(
            f"| {step} | {len(values)} | {queries} | {pct(values, 50):.0f} | "
            f"{pct(values, 95):.0f} | {pct(values, 99):.0f} | {pct(busy_values, 95):.0f} | "
            f"{pct(values, 95) / save_p95:.2f} | {pct(busy_values, 95) / save_busy_p95:.2f} | "
            f"{django_ms} |"
        )
    lines.append(
        f"| all | {len(everything)} | | {pct(everything, 50):.0f} | {pct(everything, 95):.0f} | "
        f"{pct(everything, 99):.0f} | {pct(busy_all, 95):.0f} | | | |"
    )
    errors = run.errors
    busy_p95 = {step: pct(run.busy[step], 95) for step in STEPS if run.busy.get(step)}
    worst = max(busy_p95, key=busy_p95.get) if busy_p95 else "none"
    targets = [
        (
            f"p95 <= 150 ms in every step while >= {BUSY} active (worst: {worst}, "
            f"{busy_p95.get(worst, float('nan')):.0f} ms)",
            bool(busy_p95) and max(busy_p95.values()) <= 150,
        ),
        ("0 errors", not errors and "error" not in outcomes),
        (
            "0 answers lost, duplicated or wrong",
            v["expected"] == v["saved"] and not v["duplicated"] and not v["wrong"],
        ),
        ("0 scenarios over or under k", not v["over"] and not v["under"]),
        ("answer saves >= 0.5 x baseline", save_rps / base_rps >= 0.5),
    ]
    lines += [
        "",
        f"- participants: {outcomes.count('finished')} finished, {outcomes.count('full')} found "
        f"the study full, {outcomes.count('error')} failed; peak active at once: {run.peak}; "
        f"sessions took {pct(run.sessions, 50):.0f} s (median) to {max(run.sessions, default=0):.0f} s; "
        f">= {BUSY} active for {busy_seconds:.0f} s, during which {len(busy_all)} requests "
        f"had p50 {pct(busy_all, 50):.0f} / p95 {pct(busy_all, 95):.0f} / p99 {pct(busy_all, 99):.0f} ms",
        f"- errors: {len(errors)}" + (f" ({', '.join(sorted(set(errors))[:5])})" if errors else ""),
        f"- answers: {v['saved']} saved of {v['expected']} expected for {v['finished']} finished "
        f"participants; lost {v['expected'] - v['saved']}, duplicated {v['duplicated']}, "
        f"not the last value given {v['wrong']}",
        f"- scenarios over k: {v['over']}, under k: {v['under']} (of {v['scenarios']}, k = {K})",
        f"- answer-save throughput: {save_rps:.0f}/s vs baseline insert view {base_rps:.0f}/s "
        f"= {save_rps / base_rps:.2f} ({args.save_clients} concurrent clients each, "
        f"{args.save_seconds:.0f} s each, alternating in {ROUNDS} rounds)",
        f"- CPU during the load phase ({wall:.0f} s x {os.cpu_count()} cores): machine "
        f"{machine_busy:.0%} busy; gunicorn {server_cpu:.0f} s, load generator "
        f"{client_cpu:.0f} s ({client_cpu / wall:.0%} of one core), PostgreSQL and Redis "
        f"{others[0]:.0f} s (shared with anyone else's use), other processes (someone else's "
        f"work) at least {others[1]:.0f} s ({others[1] / others[2]:.0%} of the machine)",
        f"- whole benchmark {time.monotonic() - began:.0f} s",
        "- targets: " + "; ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in targets),
        "",
        *timeline_rows(run, active_at, wall),
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_write:
        write_results(report, args)
    admin = with_db(os.environ["DATABASE_URL"], "postgres")
    run_sql(admin, f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def write_results(report: str, args) -> None:
    path = ROOT / "benchmarks" / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    command = "DATABASE_URL=... REDIS_URL=... .venv/bin/python benchmarks/survey_load.py" + (
        " " + " ".join(sys.argv[1:]) if sys.argv[1:] else ""
    )
    section = f"## Survey load\n\n`{command}`\n\n{report}\n\n"
    # This section only, up to the next one (other benchmarks keep theirs here too).
    pattern = re.compile(r"^## Survey load\n.*?(?=^## |\Z)", re.S | re.M)
    text = (
        pattern.sub(lambda _m: section, text, count=1)
        if pattern.search(text)
        else text.rstrip("\n") + "\n\n" + section
    )
    path.write_text(text.rstrip("\n") + "\n")


if __name__ == "__main__":
    sys.exit(main())
