"""LLM gateway throughput against a bare litellm loop, in the same run.

    .venv/bin/python benchmarks/llm_throughput.py [--calls 2000] [--quick]

Starts the offline provider at 300 ms latency, a Celery worker for the `llm` queue (prefork,
two processes, as `make run` does) against a database and Redis of its own, and sends N calls
through the whole path (enqueue -> worker -> gateway -> litellm -> HTTP -> ledger row).
In the same run, N calls through a bare `litellm.acompletion` loop at the same concurrency.
Prints calls/s for both, the ideal (concurrency / latency), CPU ms per call for both, the
workers' peak RSS, and the most requests the provider saw in flight at once. Then: a
requests-per-minute limit over a minute's window, and a run with 10% 429, 2% 500 and 1%
timeouts injected.
"""

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import socket
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx  # noqa: E402
import psutil  # noqa: E402

LATENCY_MS = 300
QUEUE = "bench-llm"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_db(url: str, name: str) -> str:
    parts = urlparse(url)
    return urlunparse(parts._replace(path=f"/{name}"))


class Provider:
    def __init__(self, **knobs):
        self.port = free_port()
        args = [sys.executable, "-m", "offline_llm", "--port", str(self.port)]
        for key, value in knobs.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        self.process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}/v1"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base + "/models", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise SystemExit("the offline provider did not start")

    def stats(self) -> dict:
        return httpx.get(self.base + "/stats").json()

    def reset(self) -> None:
        httpx.post(self.base + "/stats/reset")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class Workers:
    def __init__(self, env: dict, processes: int = 2):
        celery = str(Path(sys.executable).parent / "celery")
        hostname = f"bench-{os.getpid()}@{socket.gethostname()}"
        self.process = subprocess.Popen(
            [celery, "-A", "config", "worker", "--queues", QUEUE, "--concurrency", str(processes),
             "--without-mingle", "--without-gossip", "--loglevel", "WARNING",
             "--hostname", hostname],
            cwd=ROOT, env=env, start_new_session=True,
        )  # fmt: skip
        self.root = psutil.Process(self.process.pid)
        self.hostname = hostname
        from config.celery import app

        deadline = time.monotonic() + 60
        while not app.control.ping(destination=[hostname], timeout=0.5):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("the llm worker did not start")

    def tree(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.NoSuchProcess):
            return [self.root, *self.root.children(recursive=True)]
        return []

    def cpu_seconds(self) -> float:
        total = 0.0
        for p in self.tree():
            with contextlib.suppress(psutil.NoSuchProcess):
                t = p.cpu_times()
                total += t.user + t.system
        return total

    def rss(self) -> tuple[int, int]:
        sizes = []
        for p in self.tree():
            with contextlib.suppress(psutil.NoSuchProcess):
                sizes.append(p.memory_info().rss)
        return (max(sizes) if sizes else 0), sum(sizes)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 15)
        self.process.wait(30)


def messages(i: int) -> list[dict]:
    return [
        {"role": "user", "content": f"<question>My account {i} was hacked; what now?</question>"}
    ]


def gateway_run(workers: Workers, model, calls: int, tag: str) -> dict:
    from apps.llm.models import CallStatus, LLMCall
    from workers.llm import BATCH_SIZE, complete_batch_task

    requests = [
        {"model_id": model.pk, "purpose": "sample", "messages": messages(i),
         "caller": f"{tag}:{i}"}
        for i in range(calls)
    ]  # fmt: skip
    cpu0 = workers.cpu_seconds()
    peak_max = peak_sum = 0
    started = time.monotonic()
    for i in range(0, calls, BATCH_SIZE):
        complete_batch_task.apply_async(args=[requests[i : i + BATCH_SIZE]], queue=QUEUE)
    finished = LLMCall.objects.filter(caller__startswith=f"{tag}:")
    while True:
        m, s = workers.rss()
        peak_max, peak_sum = max(peak_max, m), max(peak_sum, s)
        ok = finished.filter(status=CallStatus.OK).count()
        if ok >= calls:
            break
        if time.monotonic() - started > 900:
            raise SystemExit(f"{tag}: only {ok} of {calls} calls finished in 15 minutes")
        time.sleep(0.1)
    wall = time.monotonic() - started
    cpu = workers.cpu_seconds() - cpu0
    return {"rate": calls / wall, "cpu_ms": cpu * 1000 / calls, "wall": wall,
            "rss_max": peak_max, "rss_sum": peak_sum}  # fmt: skip


def bare_run(base: str, concurrency: int, calls: int) -> dict:
    import litellm

    async def main():
        gate = asyncio.Semaphore(concurrency)

        async def one(i):
            async with gate:
                await litellm.acompletion(
                    model="openai/offline-terse", messages=messages(i), api_base=base,
                    api_key="offline-demo", num_retries=0, max_retries=0, timeout=60,
                )  # fmt: skip

        await asyncio.gather(*(one(i) for i in range(calls)))

    asyncio.run(main_warmup(base))
    cpu0, started = time.process_time(), time.monotonic()
    asyncio.run(main())
    wall = time.monotonic() - started
    return {
        "rate": calls / wall,
        "cpu_ms": (time.process_time() - cpu0) * 1000 / calls,
        "wall": wall,
    }


async def main_warmup(base: str) -> None:
    import litellm

    await litellm.acompletion(
        model="openai/offline-terse", messages=messages(-1), api_base=base, api_key="offline-demo"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="fewer calls, no one-minute test")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if not opts.inner:
        return outer()
    calls = 300 if opts.quick else opts.calls
    import django

    django.setup()
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    from apps.llm.models import LLMCall, ModelConfig
    from workers.llm import BATCH_SIZE

    env = dict(os.environ)
    provider = Provider(latency_ms=LATENCY_MS)
    workers = Workers(env)
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    try:
        say(f"# LLM gateway throughput — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
        say(f"{calls} calls per run; offline provider latency {LATENCY_MS} ms; "
            f"llm worker: prefork, 2 processes, batches of {BATCH_SIZE}; {os.cpu_count()} cores")  # fmt: skip
        say()
        say(
            "| limit | path | calls/s | ideal | ratio | CPU ms/call | provider max in flight | worker peak RSS (max / all) |"
        )
        say("|---|---|---|---|---|---|---|---|")
        results = {}
        for limit in (16, 64):
            model = ModelConfig.objects.create(
                display_name=f"bench-{limit}", family="Offline", litellm_model="openai/offline-terse",
                api_base=provider.base, max_concurrent=limit, timeout_seconds=60,
                input_price_per_mtok=Decimal("0"), output_price_per_mtok=Decimal("0"),
            )  # fmt: skip
            ideal = limit / (LATENCY_MS / 1000)
            provider.reset()
            bare = bare_run(provider.base, limit, calls)
            bare_peak = provider.stats()["max_in_flight"]
            provider.reset()
            gate = gateway_run(workers, model, calls, f"g{limit}")
            gate_peak = provider.stats()["max_in_flight"]
            results[limit] = (bare, gate)
            say(f"| {limit} | bare litellm loop | {bare['rate']:.1f} | {ideal:.1f} | {bare['rate'] / ideal:.2f} | "
                f"{bare['cpu_ms']:.1f} | {bare_peak} | — |")  # fmt: skip
            say(f"| {limit} | gateway (Celery) | {gate['rate']:.1f} | {ideal:.1f} | {gate['rate'] / ideal:.2f} | "
                f"{gate['cpu_ms']:.1f} | {gate_peak} | {gate['rss_max'] / 2**20:.0f} MB / "
                f"{gate['rss_sum'] / 2**20:.0f} MB |")  # fmt: skip
            if gate_peak > limit:
                say(f"**LIMIT BROKEN: provider saw {gate_peak} > {limit} in flight**")
        say()
        _b16, g16 = results[16]
        b64, g64 = results[64]
        say(
            f"- limit 16: gateway throughput / ideal = {g16['rate'] / (16 / 0.3):.2f} (target ≥ 0.9)"
        )
        say(f"- limit 64: gateway / bare throughput = {g64['rate'] / b64['rate']:.2f} (target ≥ 0.8); "
            f"CPU per call gateway / bare = {g64['cpu_ms'] / b64['cpu_ms']:.2f} (target ≤ 1.5)")  # fmt: skip

        if not opts.quick:
            rpm = 600
            model = ModelConfig.objects.create(
                display_name="bench-rpm", family="Offline", litellm_model="openai/offline-terse",
                api_base=provider.base, max_concurrent=64, requests_per_minute=rpm,
                timeout_seconds=60,
            )  # fmt: skip
            n = rpm + rpm // 2
            started = time.monotonic()
            provider.reset()
            gateway_run(workers, model, n, "rpm")
            say(
                f"- requests-per-minute limit {rpm}: {n} calls took {time.monotonic() - started:.0f} s; "
                f"most the provider received in any 60 s window: "
                f"{provider.stats()['max_per_minute']} (must be ≤ {rpm})"
            )

        workers_faulty = None
        faulty = Provider(latency_ms=LATENCY_MS, rate_429=0.10, rate_500=0.02, rate_hang=0.01,
                          retry_after=1, hang_seconds=600, fault_seed=11)  # fmt: skip
        try:
            model = ModelConfig.objects.create(
                display_name="bench-faults", family="Offline", litellm_model="openai/offline-terse",
                api_base=faulty.base, max_concurrent=64, timeout_seconds=5,
            )  # fmt: skip
            started = time.monotonic()
            gateway_run(workers, model, calls, "faults")
            rows = LLMCall.objects.filter(caller__startswith="faults:")
            callers_ok = rows.filter(status="ok").values("caller").distinct().count()
            by_status = {
                s: rows.filter(status=s).count()
                for s in ("ok", "rate_limited", "server_error", "timeout")
            }
            say(f"- faults injected (10% 429, 2% 500, 1% hang → 5 s timeout): {callers_ok}/{calls} calls "
                f"answered, none lost, in {time.monotonic() - started:.0f} s; attempts by status {by_status}; "
                f"retries in the ledger: {rows.filter(attempt__gt=1).count()}")  # fmt: skip
        finally:
            faulty.stop()
            del workers_faulty
    finally:
        workers.stop()
        provider.stop()
    out = ROOT / "benchmarks" / "output"
    out.mkdir(exist_ok=True)
    (out / "llm_throughput.md").write_text("\n".join(lines) + "\n")
    return 0


def outer() -> int:
    """Start (or find) PostgreSQL and Redis, make a database of our own, and run the
    measurements in a child process whose Django settings see it from the start."""
    from config.stack import Stack

    stack = Stack()
    try:
        stack.start_services()
        db_url = with_db(stack.env["DATABASE_URL"], "assay_bench")
        redis_url = urlunparse(urlparse(stack.env["REDIS_URL"])._replace(path="/9"))
        env = dict(stack.env, DATABASE_URL=db_url, REDIS_URL=redis_url)
        import psycopg

        server = with_db(stack.env["DATABASE_URL"], "postgres").replace(
            "postgres://", "postgresql://", 1
        )
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS assay_bench WITH (FORCE)")
            admin.execute("CREATE DATABASE assay_bench")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
        )
        return subprocess.call(
            [sys.executable, __file__, "--inner", *sys.argv[1:]], cwd=ROOT, env=env
        )
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
