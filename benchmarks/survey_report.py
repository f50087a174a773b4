"""The survey report at the published size, and the proxy run that answers it.

    .venv/bin/python benchmarks/survey_report.py            # 100 scenarios x 5 people, 5 x 5 proxies
    .venv/bin/python benchmarks/survey_report.py --quick    # 20 scenarios, a fast check

Against a database of its own (assay_bench_survey, created and dropped on the server of
DATABASE_URL) and Redis db 7, with the offline provider at 300 ms (started with --port 0; the
URL it announces is read from its first line) and one Celery worker (prefork, 2 processes,
`-Q llm`, the product's app and routes: the Redis db is the benchmark's own):

1. a study over 100 PrivacyLens scenarios (the fixture's 40, copied under new names, as a
   researcher's larger file would hold them) with the bundled demo responses, rated by 100
   simulated people x 5 scenarios (5 ratings a scenario, written as completed assignments);
2. a proxy run of 5 offline models x 5 runs over the 100 scenarios (2,500 calls) through the
   worker, from launch to finished, against the same 2,500 requests (same messages, model,
   seed and X-Assay-Purpose header) through a bare `litellm.acompletion` loop at the same
   number in flight, over as many processes (benchmarks/run_at_scale.py's loop); afterwards
   every call must be done once, with an assignment and 7 answers, none repeated;
3. on those people and proxies (about 21,000 answers), `survey_data` + `survey_report` (every
   table; each figure's SVG drawn and timed apart), the median of a few repetitions, against
   2 s; and `survey_intervals` (1,000 resamples, every alpha and rho) against 30 s.

A missed target gets a cProfile of the function that missed it in the output. Prints a
markdown report (also benchmarks/output/survey_report.md); a full-size run writes it, dated,
under "## Survey report" in benchmarks/RESULTS.md.
"""

import argparse
import contextlib
import cProfile
import csv
import datetime as dt
import io
import json
import os
import pstats
import random
import re
import select
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks.own_stack import with_db  # noqa: E402
from benchmarks.run_at_scale import (  # noqa: E402 (after the path is set)
    CLIENT_NICE,
    PROVIDER_NICE,
    bare_run,
    renice,
)

DB_NAME = "assay_bench_survey"
REDIS_DB = 7
LATENCY_MS = 300
PROCESSES = 2
LIMIT = 16  # max_concurrent of each proxy model, as in benchmarks/run_at_scale.py
RUNS_PER_MODEL = 5
RATINGS_PER_SCENARIO = 5
SCENARIOS_PER_PERSON = 5
REPEATS = 5
MODELS = [
    "offline-terse",
    "offline-thorough",
    "offline-friendly",
    "offline-careful",
    "offline-casual",
]
SCENARIOS = (
    Path(__file__).resolve().parents[1] / "apps/surveys/fixtures/privacylens-scenarios-40.json"
)
RESPONSES = ROOT / "apps" / "surveys" / "fixtures" / "demo-responses-40.csv"
TARGET_REPORT_S, TARGET_INTERVALS_S, TARGET_RATIO = 2.0, 30.0, 0.8
HOST = socket.gethostname()
ANNOUNCED_URL = re.compile(r"http://\S+/v1")


class Provider:
    """The offline provider on a port of its own choosing (it announces its URL)."""

    def __init__(self, **knobs):
        import httpx

        args = [sys.executable, "-m", "offline_llm", "--port", "0"]
        for key, value in knobs.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLINE_LLM_")}
        self.process = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        renice(self.process.pid, PROVIDER_NICE)
        self.base = None
        deadline = time.monotonic() + 20
        while self.base is None and time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the offline provider exited ({self.process.returncode})")
            readable, _, _ = select.select([self.process.stdout], [], [], 0.1)
            if readable:
                found = ANNOUNCED_URL.search(self.process.stdout.readline())
                self.base = found.group(0) if found else None
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base + "/models", timeout=1).status_code == 200:
                    return
            time.sleep(0.2)
        raise SystemExit("the offline provider did not start")

    def stats(self) -> dict:
        import httpx

        return httpx.get(self.base + "/stats").json()

    def reset(self) -> None:
        import httpx

        httpx.post(self.base + "/stats/reset")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


class Worker:
    """One Celery worker node, prefork, on the `llm` queue, as `make run` starts it."""

    def __init__(self, env: dict):
        import signal  # noqa: F401 (stop() sends SIGTERM to the group)

        from config.celery import app

        celery = str(Path(sys.executable).parent / "celery")
        self.hostname = f"survey-{os.getpid()}@{HOST}"
        self.process = subprocess.Popen(
            [
                celery,
                "-A",
                "config",
                "worker",
                "-Q",
                "llm",
                "--concurrency",
                str(PROCESSES),
                "--pool",
                "prefork",
                "--without-mingle",
                "--without-gossip",
                "--loglevel",
                "ERROR",
                "--hostname",
                self.hostname,
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 90
        while not app.control.ping(destination=[self.hostname], timeout=0.5):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"the worker {self.hostname} did not start")
        import psutil

        root = psutil.Process(self.process.pid)
        for p in [root, *root.children(recursive=True)]:
            renice(p.pid, CLIENT_NICE)

    def stop(self) -> None:
        import signal

        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


# --- data ---------------------------------------------------------------------------------------


def scenario_files(count: int) -> tuple[str, str]:
    """`count` PrivacyLens records and their responses (CSV): the fixture's 40, then copies
    of them under new names (main3-copy-1, ...), as a researcher's larger file would be."""
    records = json.loads(SCENARIOS.read_text())
    responses = {r["scenario"]: r for r in csv.DictReader(io.StringIO(RESPONSES.read_text()))}
    out, rows = [], []
    for i in range(count):
        record = dict(records[i % len(records)])
        source = record["name"]
        if i >= len(records):
            record["name"] = f"{source}-copy-{i // len(records)}"
        out.append(record)
        rows.append({**responses[source], "scenario": record["name"]})
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return json.dumps(out), text.getvalue()


def build_study(name: str, count: int):
    from apps.surveys import services
    from apps.surveys.forms import DEFAULT_TEXTS
    from apps.surveys.models import Scenario

    records, responses = scenario_files(count)
    services.scenario_import_json(text=records)
    names = [r["name"] for r in json.loads(records)]
    scenarios = list(Scenario.objects.filter(name__in=names).order_by("name"))
    codes = {
        "code_completed": "DONE1234",
        "code_no_consent": "NOPE1234",
        "code_failed_attention": "ATTN1234",
        "code_full": "FULL1234",
    }
    study = services.study_create(
        scenarios=scenarios,
        name=name,
        ratings_per_scenario=RATINGS_PER_SCENARIO,
        scenarios_per_participant=SCENARIOS_PER_PERSON,
        **DEFAULT_TEXTS,
        **codes,
    )
    services.response_import_csv(text=responses, study=study)
    return study


def build_people(study, seed: int = 7) -> tuple[int, int]:
    """Simulated people, each rating SCENARIOS_PER_PERSON scenarios, so that every scenario
    has RATINGS_PER_SCENARIO ratings: completed assignments with an answer per item (each
    scenario and item has a leaning of its own, each person strays from it)."""
    from django.utils import timezone

    from apps.surveys.models import (
        AgeBand,
        Answer,
        Assignment,
        AssignmentStatus,
        Education,
        Gender,
        Income,
        ItemKind,
        Participant,
        ParticipantKind,
        ParticipantStatus,
        SurveyItem,
    )

    rng = random.Random(seed)
    scenarios = list(study.study_scenarios.order_by("scenario__name"))
    items = list(SurveyItem.objects.filter(study=study, attention_check=False))
    n = len(scenarios)
    groups = n // SCENARIOS_PER_PERSON
    count = n * RATINGS_PER_SCENARIO // SCENARIOS_PER_PERSON
    now = timezone.now()
    pick = [
        [v for v, _label in choices.choices if v != "no_say"]
        for choices in (AgeBand, Gender, Education, Income)
    ]
    people = Participant.objects.bulk_create(
        Participant(
            study=study,
            kind=ParticipantKind.HUMAN,
            prolific_pid=f"{p + 1:024x}",
            status=ParticipantStatus.FINISHED,
            simulated=True,
            consented_at=now,
            finished_at=now,
            age=rng.choice(pick[0]),
            gender=rng.choice(pick[1]),
            education=rng.choice(pick[2]),
            income=rng.choice(pick[3]),
        )
        for p in range(count)
    )
    leaning = {(s, i.code): rng.random() for s in range(n) for i in items}
    assignments, values = [], []
    for p, person in enumerate(people):
        block = p % groups
        for position in range(SCENARIOS_PER_PERSON):
            s = block * SCENARIOS_PER_PERSON + position
            assignments.append(
                Assignment(
                    participant=person,
                    study_scenario=scenarios[s],
                    position=position + 1,
                    status=AssignmentStatus.COMPLETED,
                    reserved_at=now,
                    reserved_until=now,
                    answered_at=now,
                    completed_at=now,
                )
            )
            answers = {}
            for item in items:
                x = min(max(leaning[s, item.code] + rng.gauss(0, 0.2), 0), 0.999)
                if item.kind == ItemKind.YES_NO:
                    answers[item] = "yes" if x >= 0.5 else "no"
                else:
                    answers[item] = str(1 + int(x * len(item.scale_labels)))
            values.append(answers)
    assignments = Assignment.objects.bulk_create(assignments, batch_size=2000)
    Answer.objects.bulk_create(
        (
            Answer(
                assignment=a,
                item=item,
                value=value,
                explanation=f"Simulated ({item.code}).",
                first_saved_at=now,
                saved_at=now,
            )
            for a, answers in zip(assignments, values, strict=True)
            for item, value in answers.items()
        ),
        batch_size=5000,
    )
    return count, len(assignments)


def build_models(base: str, names: list[str]) -> list:
    from decimal import Decimal

    from apps.llm.models import ModelConfig

    return ModelConfig.objects.bulk_create(
        ModelConfig(
            display_name=name,
            family="Offline",
            litellm_model=f"openai/{name}",
            api_base=base,
            max_concurrent=LIMIT,
            timeout_seconds=60,
            input_price_per_mtok=Decimal("2.50"),
            output_price_per_mtok=Decimal("10.00"),
        )
        for name in names
    )


# --- the proxy run ------------------------------------------------------------------------------


def proxy_run(*, study, models, runs: int, seed: int):
    """Create, launch and queue a proxy run; wait until it has finished. (run, seconds seen,
    the calls running at each look: how many, and of how many models)."""
    from django.db.models import Count

    from apps.llm.models import RunStatus
    from apps.surveys.services.proxies import proxy_run_create, proxy_run_launch
    from workers.leases import requeue_expired

    run = proxy_run_create(study=study, models=models, runs_per_model=runs, seed=seed)
    started = time.monotonic()
    run = proxy_run_launch(run=run)  # which queues its chains when it commits
    last_sweep = last_print = started
    running = run.calls.filter(status="running").order_by()
    looks = []
    while True:
        run.refresh_from_db(fields=["status", "finished_at", "launched_at"])
        now = time.monotonic()
        if run.status != RunStatus.RUNNING:
            return run, now - started, looks
        by_model = dict(
            running.values_list("participant__model_id")
            .annotate(n=Count("pk"))
            .values_list("participant__model_id", "n")
        )
        looks.append((sum(by_model.values()), len(by_model)))
        if now - last_sweep >= 5:
            requeue_expired()  # what beat would run
            last_sweep = now
        if now - last_print >= 15:
            done = run.calls.filter(status="done").count()
            print(f"  … {now - started:.0f} s: {done} calls done", file=sys.stderr, flush=True)
            last_print = now
        if now - started > 1800:
            raise SystemExit("the proxy run did not finish in 30 minutes")
        time.sleep(0.2)


def proxy_requests(run, base: str) -> list[dict]:
    """Every call of the run as the gateway sent it (the engine's own view of its rows)."""
    from apps.surveys.services.proxies import PROXY_WORK

    ids = list(run.calls.order_by("pk").values_list("pk", flat=True))
    calls, refused = PROXY_WORK.calls(ids)
    if refused:
        raise SystemExit(f"calls refused: {refused[:3]}")
    return [
        {
            "model": c.model.litellm_model,
            "base": base,
            "headers": {"X-Assay-Purpose": "survey_proxy"},
            "params": c.params,
            "json": True,
            "messages": c.messages,
        }
        for c in calls
    ]


def proxy_checks(run, study, calls: int, items: int) -> dict:
    from django.db.models import Count

    from apps.llm.models import CallStatus, LLMCall
    from apps.surveys.models import Answer, Assignment, AssignmentStatus

    assignments = Assignment.objects.filter(
        participant__proxy_run=run, status=AssignmentStatus.PROXY
    )
    answers = Answer.objects.filter(assignment__in=assignments)
    callers = [f"proxy_call:{pk}" for pk in run.calls.values_list("pk", flat=True)]
    ledger = LLMCall.objects.filter(caller__in=callers, status=CallStatus.OK)
    ok_per_call = ledger.order_by().values("caller").annotate(n=Count("pk"))
    by_status = dict(
        run.calls.order_by()
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    return {
        "calls": by_status,
        "ledger_ok": ledger.count(),
        "answered_twice": sum(r["n"] - 1 for r in ok_per_call if r["n"] > 1),
        "assignments": assignments.count(),
        "assignments_dup": assignments.order_by()
        .values("participant", "study_scenario")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .count(),
        "answers": answers.count(),
        "answers_dup": answers.order_by()
        .values("assignment", "item")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .count(),
        "expected": (calls, calls * items),
    }


# --- the report ---------------------------------------------------------------------------------


def time_report(study, repeats: int) -> dict:
    from apps.analysis.survey import survey_report
    from apps.analysis.survey_data import survey_data

    tables, loads, cpu, figures = [], [], [], {}
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        data = survey_data(study=study)
        t1 = time.perf_counter()
        report = survey_report(data)
        t2 = time.perf_counter()
        cpu.append(time.process_time() - c0)
        loads.append(t1 - t0)
        tables.append(t2 - t0)
        for name, figure in report.figures.items():
            t = time.perf_counter()
            svg = figure.svg()
            figures.setdefault(name, []).append(time.perf_counter() - t)
            assert svg.lstrip().startswith("<"), name
    return {
        "median": statistics.median(tables),
        "all": tables,
        "load": statistics.median(loads),
        "cpu": statistics.median(cpu),
        "figures": {name: statistics.median(v) for name, v in figures.items()},
        "answers": report.answers,
        "people": report.people,
        "proxies": report.proxies,
        "scenarios": report.scenarios,
        "tables": len(report.tables) + len(report.figures),
    }


def time_intervals(study) -> dict:
    from apps.analysis.survey import RESAMPLES, survey_intervals, survey_statistics
    from apps.analysis.survey_data import survey_data

    data = survey_data(study=study)
    specs = survey_statistics(data)
    t0 = time.perf_counter()
    intervals = survey_intervals(data)
    seconds = time.perf_counter() - t0
    alphas = sum(1 for k in intervals if k.startswith("alpha:"))
    defined = sum(1 for v in intervals.values() if v[0] == v[0] and v[0] is not None)
    return {
        "seconds": seconds,
        "statistics": len(intervals),
        "specs": len(specs),
        "alphas": alphas,
        "rhos": len(intervals) - alphas,
        "defined": defined,
        "resamples": RESAMPLES,
    }


def profile(func, *, top: int = 18) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    func()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
    stats.print_stats(top)
    text = out.getvalue()
    # Keep the table (drop the header lines before it) and shorten the project's paths.
    text = text[text.find("   ncalls") :] if "   ncalls" in text else text
    return text.replace(str(ROOT) + "/", "").rstrip()


def inner(opts) -> int:
    import django

    django.setup()
    import redis

    from apps.llm.engine import BATCH_SIZE, IN_FLIGHT_MAX
    from apps.surveys.services.proxies import proxy_items

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    n = 20 if opts.quick else opts.scenarios
    lines: list[str] = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    def note(text):
        print(text, file=sys.stderr, flush=True)

    load0 = os.getloadavg()
    began = time.monotonic()
    provider = Provider(latency_ms=LATENCY_MS)
    worker = Worker(dict(os.environ))
    try:
        t0 = time.monotonic()
        study = build_study("Survey report benchmark", n)
        people, rated = build_people(study)
        models = build_models(provider.base, MODELS)
        items = len(proxy_items(study=study))
        note(
            f"built {n} scenarios, {people} people ({rated} assignments) in "
            f"{time.monotonic() - t0:.1f} s"
        )

        # Warm-up on a study of its own: the pool processes' first calls import and build
        # litellm's clients and connections, as the bare loop's first two requests do.
        warm = build_study("Warm-up", 2)
        proxy_run(study=warm, models=models, runs=1, seed=1)

        provider.reset()
        run, seen, looks = proxy_run(study=study, models=models, runs=RUNS_PER_MODEL, seed=2024)
        pstats_run = provider.stats()
        wall = (run.finished_at - run.launched_at).total_seconds()
        total = run.calls.count()
        checks = proxy_checks(run, study, total, items)
        note(f"proxy run: {total} calls in {wall:.1f} s ({seen:.1f} s seen); {checks}")

        concurrency = min(len(models) * LIMIT, PROCESSES * min(BATCH_SIZE, IN_FLIGHT_MAX))
        requests = proxy_requests(run, provider.base)
        provider.reset()
        bare = bare_run(requests, concurrency, PROCESSES)
        bare_stats = provider.stats()
        note(f"bare loop: {bare}")
    finally:
        worker.stop()
        provider.stop()

    timing = time_report(study, REPEATS)
    note(f"report: {timing}")
    intervals = time_intervals(study)
    note(f"intervals: {intervals}")

    rate = total / wall
    ratio = rate / bare["rate"]
    met_report = timing["median"] <= TARGET_REPORT_S
    met_intervals = intervals["seconds"] <= TARGET_INTERVALS_S
    met_ratio = ratio >= TARGET_RATIO
    calls_ok = (
        checks["calls"] == {"done": total}
        and checks["ledger_ok"] == total
        and checks["answered_twice"] == 0
        and (checks["assignments"], checks["answers"]) == checks["expected"]
        and checks["assignments_dup"] == 0
        and checks["answers_dup"] == 0
    )
    profiles = {}
    if not met_report:
        from apps.analysis.survey import survey_report
        from apps.analysis.survey_data import survey_data

        profiles["survey_data + survey_report"] = profile(
            lambda: survey_report(survey_data(study=study))
        )
    if not met_intervals:
        from apps.analysis.survey import survey_intervals
        from apps.analysis.survey_data import survey_data

        data = survey_data(study=study)
        profiles["survey_intervals"] = profile(lambda: survey_intervals(data))

    load1 = os.getloadavg()
    size = "Quick" if opts.quick else "Full size"
    cmd = " ".join(["benchmarks/survey_report.py", *sys.argv[2:]]).strip()
    say(f"### {size} — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    say()
    say(
        f"`.venv/bin/python {cmd}`: a study over {n} scenarios (the fixture's 40 PrivacyLens "
        f"records, copied under new names up to {n}) with the bundled demo responses; "
        f"{people} simulated people x {SCENARIOS_PER_PERSON} scenarios ({RATINGS_PER_SCENARIO} "
        f"ratings a scenario, {rated:,} completed assignments); a proxy run of {len(models)} "
        f"offline models ({', '.join(MODELS)}) x {RUNS_PER_MODEL} runs = {total:,} calls, "
        f"{items} items each. Offline provider at {LATENCY_MS} ms (nice {PROVIDER_NICE}); one "
        f"Celery worker, prefork, {PROCESSES} processes, `-Q llm` (nice {CLIENT_NICE}, as the "
        f"bare loop), DEBUG off; models at max_concurrent {LIMIT}. Machine: {os.cpu_count()} "
        f"cores; load average {load0[0]:.2f} at start, {load1[0]:.2f} at the end (other "
        f"sessions' tests were running, if any). Whole run {(time.monotonic() - began) / 60:.1f} "
        "min."
    )
    say()
    say("| target | met | measured |")
    say("|---|---|---|")
    rows = [
        (
            f"report tables (`survey_data` + `survey_report`) ≤ {TARGET_REPORT_S:.0f} s",
            met_report,
            f"{timing['median']:.2f} s, median of {REPEATS} (reading the rows "
            f"{timing['load']:.2f} s; CPU of this process {timing['cpu']:.2f} s); "
            f"{timing['median'] / TARGET_REPORT_S:.2f} of the target",
        ),
        (
            f"bootstrap intervals (`survey_intervals`) ≤ {TARGET_INTERVALS_S:.0f} s",
            met_intervals,
            f"{intervals['seconds']:.1f} s for {intervals['statistics']} statistics "
            f"({intervals['alphas']} alphas, {intervals['rhos']} rhos) x "
            f"{intervals['resamples']:,} resamples; "
            f"{intervals['seconds'] / TARGET_INTERVALS_S:.2f} of the target",
        ),
        (
            f"proxy run / bare litellm loop ≥ {TARGET_RATIO}",
            met_ratio,
            f"{ratio:.2f} ({rate:.1f} against {bare['rate']:.1f} calls/s)",
        ),
        (
            f"exactly {total:,} calls done once, {total:,} assignments, "
            f"{total:,} x {items} answers, none duplicated",
            calls_ok,
            f"calls {checks['calls']}, ledger ok {checks['ledger_ok']:,} (answered twice "
            f"{checks['answered_twice']}), assignments {checks['assignments']:,} "
            f"({checks['assignments_dup']} repeated), answers {checks['answers']:,} "
            f"({checks['answers_dup']} repeated)",
        ),
    ]
    for label, ok, measured in rows:
        say(f"| {label} | {'yes' if ok else '**NO**'} | {measured} |")
    say()
    say(
        f"| run | calls/s | wall time | provider max in flight |\n|---|---|---|---|\n"
        f"| proxy run, {total:,} calls, launch to finished | {rate:.1f} | {wall:.1f} s "
        f"| {pstats_run['max_in_flight']} |\n"
        f"| bare litellm loop, the same {len(requests):,} requests, {concurrency} in flight over "
        f"{PROCESSES} processes | {bare['rate']:.1f} | {bare['wall']:.1f} s "
        f"| {bare_stats['max_in_flight']} |"
    )
    busy = [(n_calls, n_models) for n_calls, n_models in looks if n_calls]
    if busy:
        say()
        say(
            f"Calls claimed by the worker's batches (status running, in flight or waiting for "
            f"their model's limit) during the proxy run, looked at every 0.2 s ({len(busy)} "
            f"looks with any): at most {max(c for c, _m in busy)}, on average "
            f"{statistics.mean(c for c, _m in busy):.1f}; models among them at most "
            f"{max(m for _c, m in busy)}, on average {statistics.mean(m for _c, m in busy):.1f} "
            f"(each model at most {LIMIT} at once; {concurrency} allowed in all)."
        )
    say()
    figures = ", ".join(f"{name} {s * 1000:.0f} ms" for name, s in timing["figures"].items())
    say(
        f"The report read {timing['answers']:,} answers ({timing['people']} people, "
        f"{timing['proxies']} proxies, {timing['scenarios']} scenarios) into "
        f"{timing['tables']} tables and figures; each run in s: "
        f"{', '.join(f'{t:.2f}' for t in timing['all'])}. Drawing each figure's SVG, apart "
        f"(median): {figures}; {sum(timing['figures'].values()):.2f} s in all."
    )
    for name, text in profiles.items():
        say()
        say(f"Target missed: where `{name}` spends its time (cProfile, cumulative):")
        say()
        say("```")
        say(text)
        say("```")
    out = ROOT / "benchmarks" / "output"
    out.mkdir(exist_ok=True)
    (out / "survey_report.md").write_text("\n".join(lines) + "\n")
    if not opts.quick and not opts.no_results:
        results_write("\n".join(lines))
    return 0 if met_report and met_intervals and met_ratio and calls_ok else 1


SECTION = "## Survey report"
SECTION_INTRO = (
    "`DATABASE_URL=postgres://postgres@127.0.0.1:5432/assay REDIS_URL=redis://127.0.0.1:6379/0 "
    ".venv/bin/python benchmarks/survey_report.py` (100 scenarios x 5 people, 5 proxies x 5 "
    "runs; `--quick` is 20 scenarios). Database assay_bench_survey and Redis db 7 of its own. "
    "Targets: the report's tables in 2 s, its bootstrap intervals in 30 s, a proxy run at "
    "0.8 or more of a bare litellm loop at the same concurrency."
)


def results_write(text: str) -> None:
    """The run, newest first, under SECTION in RESULTS.md (made at the end if missing)."""
    path = ROOT / "benchmarks" / "RESULTS.md"
    current = path.read_text()
    if SECTION not in current:
        current = current.rstrip("\n") + f"\n\n{SECTION}\n\n{SECTION_INTRO}\n"
    head, tail = current.split(SECTION, 1)
    # After the section's introduction (its first paragraph), before its earlier runs.
    intro_end = tail.find("\n### ")
    if intro_end < 0:
        intro_end = len(tail.rstrip("\n"))
    tail = tail[:intro_end].rstrip("\n") + "\n\n" + text + "\n" + tail[intro_end:]
    path.write_text(head + SECTION + tail.rstrip("\n") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenarios", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="20 scenarios")
    parser.add_argument("--keep-db", action="store_true", help="leave the database for a look")
    parser.add_argument("--no-results", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    return inner(opts) if opts.inner else outer(opts)


def outer(opts) -> int:
    """Start (or find) PostgreSQL and Redis, make a database of our own, and run the
    measurements in a child process whose Django settings see it from the start."""
    import psycopg

    from config.stack import Stack

    stack = Stack()
    try:
        stack.start_services()
        db_url = with_db(stack.env["DATABASE_URL"], DB_NAME)
        redis_url = urlunparse(urlparse(stack.env["REDIS_URL"])._replace(path=f"/{REDIS_DB}"))
        env = dict(
            stack.env,
            DATABASE_URL=db_url,
            REDIS_URL=redis_url,
            CELERY_BROKER_URL=redis_url,
            DEBUG="false",  # as in production: no per-query SQL kept in the worker
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


if __name__ == "__main__":
    sys.exit(main())
