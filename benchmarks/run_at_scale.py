"""Model runs at the published scale: 450 questions x 18 models x 5 answers, then grading.

    .venv/bin/python benchmarks/run_at_scale.py [--questions 450 --models 18 --samples 5]
    .venv/bin/python benchmarks/run_at_scale.py --quick     # 40 x 6 x 5, a fast check

Against a database of its own (assay_bench_scale, created and dropped on the server of
DATABASE_URL) and Redis db 3, with the offline provider at 300 ms latency and Celery workers
(prefork, 2 processes, as `make run` starts them) on a queue of the benchmark's own:

1. generated questions in the nine topics, each with an approved rubric of 12 criteria
   (its own and the shared presentation ones), and offline models of differing styles;
2. a sampling run over them through the bulk engine (apps/llm/engine.py); at 30 % done one
   pool process holding a batch is killed with SIGKILL and the worker starts another; the run
   must end with every response once, none lost, and the provider must have received at
   most (responses + the calls the dead process held) requests;
3. in the same run, a bare `litellm.acompletion` loop sending the same requests at the same
   concurrency from as many processes (the baseline), and a one-model run at a limit of 16,
   where the limit, not the CPU, binds (ideal 16 / 0.3 s), beside the same requests through
   bare litellm under a semaphore of 16 (what litellm itself leaves of the ideal);
4. a checklist grading run over every answer, measured the same way;
5. a smaller sampling run and its grading against a provider injecting 10 % 429, 2 % 500,
   1 % hangs (timeouts) and 3 % malformed JSON: both must end, and every judgment be met,
   not met or an explicit error.

Prints a markdown report (also written to benchmarks/output/run_at_scale.md).
"""

import argparse
import contextlib
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks import own_stack  # noqa: E402

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

LATENCY_MS = 300
QUEUE = "bench-scale"
DB_NAME = "assay_bench_scale"
REDIS_DB = 3
LEASE_SECONDS = 15
PROCESSES = 2
LIMIT = 16
PROVIDER_NICE, CLIENT_NICE = -10, -5
GRADER_LIMIT = 256
CRITERIA_PER_RUBRIC = 12
FIXTURE = Path(__file__).resolve().parents[1] / "apps/questions/fixtures/questions.json"
HOST = socket.gethostname()


def __getattr__(name: str):
    # `celery -A benchmarks.run_at_scale worker` looks up `app` here: the project's app with
    # the engine's tasks routed to the benchmark's queue (a batch queues its successor).
    if name == "app":
        return celery_app()
    raise AttributeError(name)


def celery_app():
    from config.celery import app

    routes = dict(app.conf.task_routes)
    routes["workers.engine.*"] = {"queue": QUEUE}
    app.conf.task_routes = routes
    return app


def renice(pid: int, value: int) -> None:
    """Other sessions share this machine: the benchmark's processes go ahead of them, the
    provider (which stands for a remote service) ahead of the clients measured, and the
    worker and the bare loop alike, so that both sides of each ratio see the same CPU."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, value)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Provider:
    def __init__(self, **knobs):
        import httpx

        self.port = free_port()
        args = [sys.executable, "-m", "offline_llm", "--port", str(self.port)]
        for key, value in knobs.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        out = ROOT / "benchmarks" / "output"
        out.mkdir(exist_ok=True)
        # Its tracebacks (say, out of file descriptors) go to a file, not over the report.
        self.log = open(out / f"provider-{self.port}.log", "w")  # noqa: SIM115
        self.process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self.log)
        renice(self.process.pid, PROVIDER_NICE)
        self.base = f"http://127.0.0.1:{self.port}/v1"
        self.cpu0 = 0.0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base + "/models", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise SystemExit("the offline provider did not start")

    def stats(self) -> dict:
        import httpx

        stats = httpx.get(self.base + "/stats").json()
        # The provider's own CPU per request since the last reset: it shares the machine.
        stats["cpu_ms"] = (self.cpu() - self.cpu0) * 1000 / max(stats["requests"], 1)
        return stats

    def cpu(self) -> float:
        import psutil

        t = psutil.Process(self.process.pid).cpu_times()
        return t.user + t.system

    def reset(self) -> None:
        import httpx

        httpx.post(self.base + "/stats/reset")
        self.cpu0 = self.cpu()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class Workers:
    """One Celery worker node (prefork) on the benchmark's queue; `host` names the machine
    it stands for."""

    def __init__(self, env: dict, *, processes: int, name: str, host: str = HOST):
        import psutil

        celery = str(Path(sys.executable).parent / "celery")
        self.hostname = f"{name}-{os.getpid()}@{host}"
        self.process = subprocess.Popen(
            [
                celery,
                "-A",
                "benchmarks.run_at_scale",
                "worker",
                "--queues",
                QUEUE,
                "--concurrency",
                str(processes),
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
        self.root = psutil.Process(self.process.pid)
        app = celery_app()
        deadline = time.monotonic() + 90
        while not app.control.ping(destination=[self.hostname], timeout=0.5):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"the worker {self.hostname} did not start")
        for p in self.tree():
            renice(p.pid, CLIENT_NICE)

    def tree(self) -> list:
        import psutil

        with contextlib.suppress(psutil.NoSuchProcess):
            return [self.root, *self.root.children(recursive=True)]
        return []

    def children(self) -> list:
        import psutil

        with contextlib.suppress(psutil.NoSuchProcess):
            return self.root.children()
        return []

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


class Memory:
    """Peak RSS of every worker process seen, by pid."""

    def __init__(self):
        self.peak: dict[int, int] = {}
        self.pss: dict[int, int] = {}
        self.role: dict[int, str] = {}
        self.cpu_first: dict[int, float] = {}
        self.cpu_last: dict[int, float] = {}

    def sample(self, nodes: list[Workers]) -> None:
        import psutil

        for node in nodes:
            for p in node.tree():
                with contextlib.suppress(psutil.NoSuchProcess):
                    full = p.memory_full_info()
                    rss = full.rss
                    # Pool processes share the pages forked from their parent: RSS counts
                    # them in each, PSS divides them among the sharers.
                    self.pss[p.pid] = max(self.pss.get(p.pid, 0), getattr(full, "pss", 0))
                    t = p.cpu_times()
                    self.cpu_first.setdefault(p.pid, t.user + t.system)
                    self.cpu_last[p.pid] = t.user + t.system
                    self.peak[p.pid] = max(self.peak.get(p.pid, 0), rss)
                    self.role.setdefault(p.pid, "parent" if p.pid == node.root.pid else "child")

    def summary(self) -> str:
        if not self.peak:
            return "—"
        mb = {pid: size / 2**20 for pid, size in self.peak.items()}
        parts = ", ".join(f"{self.role[pid][0]}{pid}: {v:.0f}" for pid, v in sorted(mb.items()))
        pss = max(self.pss.values(), default=0) / 2**20
        return f"{max(mb.values()):.0f} MB ({parts}); PSS max {pss:.0f} MB"

    def cpu_seconds(self) -> float:
        """CPU the worker processes used while watched (a killed one's up to its last look)."""
        return sum(self.cpu_last[pid] - self.cpu_first[pid] for pid in self.cpu_last)

    def __repr__(self) -> str:
        return f"<RSS {self.summary()}; CPU {self.cpu_seconds():.0f} s>"

    def max_mb(self) -> float:
        return max(self.peak.values(), default=0) / 2**20


# --- data ---------------------------------------------------------------------------------


OPENERS = [
    "",
    "Quick question. ",
    "Sorry if this is basic. ",
    "I'm not very technical. ",
    "Please help, I'm panicking a bit. ",
    "Asking for my mother. ",
    "Hi all. ",
    "This is for my small business. ",
    "Long-time lurker here. ",
]
CLOSERS = [
    "",
    " Thanks in advance.",
    " What should I do first?",
    " Is this serious?",
    " I'm on Android, if that matters.",
    " I use an iPhone.",
    " It started yesterday.",
    " This has been going on for a week.",
    " Any advice is welcome.",
]


def build_questions(count: int) -> list:
    """`count` questions in the nine topics, from the fixture's texts, varied; each with an
    approved rubric of CRITERIA_PER_RUBRIC criteria (own ones, then the shared set's)."""
    from django.utils import timezone

    from apps.questions.models import Question, Topic, length_bucket_for
    from apps.rubrics.models import Criterion, Origin, Rubric, RubricState, SharedCriterionSet

    fixture = json.loads(FIXTURE.read_text())
    topics = {t.name: t for t in Topic.objects.all()}
    by_topic = defaultdict(list)
    for q in fixture["questions"]:
        by_topic[q["topic"]].append(q)
    names = [t for t in fixture["topics"] if t in topics and by_topic[t]]
    shared = SharedCriterionSet.objects.order_by("-version").first()
    shared_criteria = list(shared.criteria.order_by("order"))
    own_count = CRITERIA_PER_RUBRIC - len(shared_criteria)
    sources, rows = [], []
    for i in range(count):
        topic = names[i % len(names)]
        pool = by_topic[topic]
        source = pool[(i // len(names)) % len(pool)]
        k = i // (len(names) * len(pool))
        text = OPENERS[k % len(OPENERS)] + source["text"] + CLOSERS[(k // 3 + i) % len(CLOSERS)]
        needs = (bool(source.get("needs_sensemaking")), bool(source.get("needs_guidance")))
        rows.append(
            Question(
                external_id=f"scale-{i + 1:04d}",
                topic=topics[topic],
                text=text,
                length_bucket=length_bucket_for(text),
                mentions_prior_attempt=bool(source.get("mentions_prior_attempt")),
                needs_sensemaking=needs[0],
                needs_guidance=needs[1],
            )
        )
        sources.append((source, pool))
    questions = Question.objects.bulk_create(rows)
    now = timezone.now()
    rubrics = Rubric.objects.bulk_create(
        Rubric(
            question=q,
            version=1,
            state=RubricState.APPROVED,
            shared_set=shared,
            updated_at=now,
            submitted_at=now,
            approved_at=now,
            verified_at=now,
        )
        for q in questions
    )
    criteria = []
    for rubric, (source, pool) in zip(rubrics, sources, strict=True):
        own = list(source["criteria"])
        # Pad from the topic's other questions: same subject, distinct texts.
        for other in pool:
            for c in other["criteria"]:
                if len(own) >= own_count:
                    break
                if all(c["text"].lower() != o["text"].lower() for o in own):
                    own.append(c)
        for order, c in enumerate(own[:own_count], 1):
            criteria.append(
                Criterion(
                    rubric=rubric,
                    text=c["text"],
                    polarity=c["polarity"],
                    kind=c["kind"],
                    points=c["points"],
                    order=order,
                    origin=Origin.EXPERT,
                )
            )
        for s in shared_criteria:
            criteria.append(
                Criterion(
                    rubric=rubric,
                    text=s.text,
                    polarity=s.polarity,
                    kind=s.kind,
                    points=s.points,
                    order=own_count + s.order,
                    origin=Origin.SHARED,
                    shared_source=s,
                )
            )
    Criterion.objects.bulk_create(criteria, batch_size=5000)
    return questions


def build_models(base: str, names: list[str], *, prefix: str, limit: int, timeout: int) -> list:
    from apps.llm.models import ModelConfig

    return ModelConfig.objects.bulk_create(
        ModelConfig(
            display_name=f"{prefix} {name}",
            family="Offline",
            litellm_model=f"openai/{name}",
            api_base=base,
            max_concurrent=limit,
            timeout_seconds=timeout,
            input_price_per_mtok=Decimal("2.50"),
            output_price_per_mtok=Decimal("10.00"),
        )
        for name in names
    )


# --- running and watching -------------------------------------------------------------------


def sweep() -> None:
    from workers.leases import requeue_expired

    requeue_expired()  # what beat runs every quarter of a lease


def ledger_mark() -> int:
    from apps.llm.models import LLMCall

    return LLMCall.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def watch(*, rows, finished, nodes, memory, on_tick=None, limit=3 * 3600) -> float:
    """Poll until `finished()`; sweep expired leases meanwhile; track RSS. Seconds taken."""
    started = time.monotonic()
    last_sweep = last_print = started
    while True:
        memory.sample(nodes)
        now = time.monotonic()
        if now - last_sweep >= LEASE_SECONDS / 4:
            sweep()
            last_sweep = now
        if on_tick is not None:
            on_tick()
        if now - last_print >= 30:
            counts = status_counts(rows)
            print(f"  … {now - started:.0f} s: {counts}", file=sys.stderr, flush=True)
            last_print = now
        if finished():
            return time.monotonic() - started
        if now - started > limit:
            raise SystemExit(f"not finished after {limit} s")
        time.sleep(0.5)


def status_counts(rows) -> dict:
    from django.db.models import Count

    return {s: n for s, n in rows.order_by().values_list("status").annotate(n=Count("pk"))}


# --- the bare litellm loop --------------------------------------------------------------------


def bare_child(path: str, concurrency: int) -> int:
    """One process of the bare loop: import, warm up, say ready, wait for go, send."""
    import asyncio

    import litellm

    requests = json.loads(Path(path).read_text())

    async def one(gate, r, check):
        async with gate:
            response = await litellm.acompletion(
                model=r["model"],
                messages=r["messages"],
                api_base=r["base"],
                api_key="offline-demo",
                num_retries=0,
                max_retries=0,
                timeout=60,
                extra_headers=r["headers"],
                **r["params"],
            )
            if check:
                json.loads(response.choices[0].message.content)

    async def run(items):
        gate = asyncio.Semaphore(concurrency)
        await asyncio.gather(*(one(gate, r, r["json"]) for r in items))

    asyncio.run(run(requests[:2]))
    print("ready", flush=True)
    sys.stdin.readline()
    cpu0, t0 = time.process_time(), time.time()
    asyncio.run(run(requests))
    print(json.dumps({"start": t0, "end": time.time(), "cpu": time.process_time() - cpu0}))
    return 0


def bare_run(requests: list[dict], concurrency: int, processes: int) -> dict:
    """The same requests through bare litellm, split over `processes` at `concurrency` in all."""
    out = ROOT / "benchmarks" / "output"
    out.mkdir(exist_ok=True)
    children = []
    for k in range(processes):
        path = out / f"bare-{k}.json"
        path.write_text(json.dumps(requests[k::processes]))
        children.append(
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--bare-child",
                    str(path),
                    "--concurrency",
                    str(max(1, concurrency // processes)),
                ],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    for child in children:
        renice(child.pid, CLIENT_NICE)
    for child in children:
        if child.stdout.readline().strip() != "ready":
            raise SystemExit("a bare-loop process did not start")
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    results = [json.loads(child.stdout.readline()) for child in children]
    for child in children:
        child.wait(30)
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    return {
        "rate": len(requests) / wall,
        "wall": wall,
        "cpu_ms": sum(r["cpu"] for r in results) * 1000 / len(requests),
    }


def sample_requests(run, base: str, count: int) -> list[dict]:
    from apps.llm.selectors import prompt_render

    rows = run.responses.select_related("model", "question").order_by("pk")[:count]
    return [
        {
            "model": r.model.litellm_model,
            "base": base,
            "headers": {"X-Assay-Purpose": "sample"},
            "params": {"seed": r.seed},
            "json": False,
            "messages": prompt_render(template=run.prompt, variables={"question": r.question.text}),
        }
        for r in rows
    ]


def grading_requests(sampling_run, grader, base: str, count: int) -> list[dict]:
    from apps.grading.services import approved_rubrics, criteria_of
    from apps.llm.models import Purpose
    from apps.llm.selectors import prompt_current, prompt_render
    from apps.runs.models import ResponseStatus

    prompt = prompt_current(purpose=Purpose.GRADE_CHECKLIST)
    rows = list(
        sampling_run.responses.filter(status=ResponseStatus.DONE)
        .select_related("question")
        .order_by("pk")[:count]
    )
    rubrics = approved_rubrics(r.question_id for r in rows)
    criteria = criteria_of(r.pk for r in rubrics.values())
    out = []
    for r in rows:
        listed = criteria[rubrics[r.question_id].pk]
        items = [
            {"id": n, "text": c.text, "polarity": c.polarity, "kind": c.kind}
            for n, c in enumerate(listed, 1)
        ]
        messages = prompt_render(
            template=prompt,
            variables={
                "question": r.question.text,
                "response": r.text,
                "criteria": json.dumps(items, ensure_ascii=False),
            },
        )
        out.append(
            {
                "model": grader.litellm_model,
                "base": base,
                "messages": messages,
                "json": True,
                "headers": {"X-Assay-Purpose": "grade_checklist"},
                "params": {"temperature": 0, "seed": r.seed},
            }
        )
    return out


# --- the phases ---------------------------------------------------------------------------------


def sampling_phase(*, name, questions, models, samples, nodes, memory, kill=None):
    """Create, launch and watch a sampling run; `kill(run)` is called every tick."""
    from apps.runs.models import Response, ResponseStatus
    from apps.runs.services import sampling_run_create, sampling_run_launch

    t0 = time.monotonic()
    run = sampling_run_create(
        name=name, questions=questions, models=models, samples_per_item=samples, seed=2024
    )
    created = time.monotonic() - t0
    rows = Response.objects.filter(run=run)
    total = rows.count()
    mark = ledger_mark()
    run = sampling_run_launch(run=run)  # which queues its chains

    finished = run_ended(run, rows, waiting=(ResponseStatus.PENDING, ResponseStatus.RUNNING))

    watch(
        rows=rows,
        finished=finished,
        nodes=nodes,
        memory=memory,
        on_tick=(lambda: kill(run)) if kill else None,
    )
    return run, total, created, mark


def run_ended(run, rows, *, waiting):
    """A check for `watch`: no row in the `waiting` states, and the run finished."""
    from apps.llm.models import RunStatus

    def finished() -> bool:
        counts = status_counts(rows)
        if any(counts.get(state) for state in waiting):
            return False
        run.refresh_from_db(fields=["status"])
        return run.status == RunStatus.FINISHED

    return finished


def run_wall(run, rows) -> float:
    from django.db.models import Max

    last = rows.aggregate(m=Max("completed_at"))["m"]
    return (last - run.launched_at).total_seconds()


def ledger_rows(mark: int, prefix: str) -> tuple[int, dict]:
    from django.db.models import Count

    from apps.llm.models import LLMCall

    rows = LLMCall.objects.filter(pk__gt=mark, caller__startswith=prefix)
    return rows.count(), dict(rows.order_by().values_list("status").annotate(n=Count("pk")))


def repeated_calls(mark: int, prefix: str) -> int:
    """Rows answered by the provider more than once (a call made again after a worker died)."""
    from django.db.models import Count

    from apps.llm.models import CallStatus, LLMCall

    ok = LLMCall.objects.filter(pk__gt=mark, caller__startswith=prefix, status=CallStatus.OK)
    dup = ok.order_by().values("caller").annotate(n=Count("pk")).filter(n__gt=1)
    return sum(r["n"] - 1 for r in dup)


def grading_phase(*, sampling_run, grader, nodes, memory):
    from apps.grading.models import CallState, ChecklistCall, GradingMode
    from apps.grading.services import grading_run_create, grading_run_launch
    from apps.runs.models import ResponseStatus

    expected = sampling_run.responses.filter(status=ResponseStatus.DONE).count()
    run = grading_run_create(sampling_run=sampling_run, grader=grader, mode=GradingMode.CHECKLIST)
    mark = ledger_mark()
    run = grading_run_launch(run=run)  # which queues its chains
    rows = ChecklistCall.objects.filter(grading_run=run)

    finished = run_ended(run, rows, waiting=(CallState.PENDING, CallState.RUNNING))

    watch(rows=rows, finished=finished, nodes=nodes, memory=memory)
    return run, expected, mark


def judgment_counts(run) -> dict:
    from django.db.models import Count, Q

    from apps.grading.models import CallState, Judgment

    j = Judgment.objects.filter(grading_run=run)
    return j.aggregate(
        total=Count("pk"),
        n_met=Count("pk", filter=Q(status=CallState.DONE, met=True)),
        n_not_met=Count("pk", filter=Q(status=CallState.DONE, met=False)),
        n_error=Count("pk", filter=Q(status=CallState.ERROR) & ~Q(error="")),
        n_other=Count(
            "pk",
            filter=~(
                Q(status=CallState.DONE, met__isnull=False)
                | (Q(status=CallState.ERROR) & ~Q(error=""))
            ),
        ),
    )


def criteria_expected(run) -> int:
    from django.db.models import Count, OuterRef, Subquery, Sum

    from apps.grading.models import ChecklistCall
    from apps.rubrics.models import Criterion

    per = (
        Criterion.objects.filter(rubric=OuterRef("rubric"))
        .order_by()
        .values("rubric")
        .annotate(n=Count("pk"))
        .values("n")
    )
    calls = ChecklistCall.objects.filter(grading_run=run).annotate(n=Subquery(per))
    return calls.aggregate(s=Sum("n"))["s"] or 0


def inner(opts) -> int:
    import django

    django.setup()
    celery_app()
    import redis
    from django.conf import settings
    from django.db.models import Count

    from apps.grading.models import CallState, ChecklistCall, Judgment, ResponseScore
    from apps.llm.engine import BATCH_SIZE, IN_FLIGHT_MAX
    from apps.runs.models import Response, ResponseStatus

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    n_q, n_m, n_s = (40, 6, 5) if opts.quick else (opts.questions, opts.models, opts.samples)
    # About 80 s at the ideal rate: a run at a limit of 16 takes many minutes, so its second
    # of start and tail should weigh here no more than a few per cent.
    ideal_calls = 200 if opts.quick else 4000
    bare_calls = 400 if opts.quick else 2000
    fault_q, fault_m = (20, 3) if opts.quick else (100, 4)
    lines: list[str] = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    def note(text):
        print(text, file=sys.stderr, flush=True)

    env = dict(os.environ)
    load0 = os.getloadavg()
    began = time.monotonic()
    provider = Provider(latency_ms=LATENCY_MS)
    nodes = [Workers(env, processes=PROCESSES, name="scale")]
    results: dict = {}
    try:
        t0 = time.monotonic()
        questions = build_questions(n_q)
        names = [f"offline-scale-{i + 1:02d}" for i in range(n_m)]
        models = build_models(provider.base, names, prefix="Scale", limit=LIMIT, timeout=60)
        grader = build_models(
            provider.base, ["offline-grader"], prefix="Scale grader", limit=GRADER_LIMIT, timeout=60
        )[0]
        ideal_model = build_models(
            provider.base, ["offline-scale-ideal"], prefix="Ideal", limit=LIMIT, timeout=60
        )[0]
        note(f"built {n_q} questions, {n_m} models in {time.monotonic() - t0:.1f} s")

        # Warm-up: the pool processes' first calls build litellm's clients and connections.
        sampling_phase(
            name="warm-up",
            questions=questions[:5],
            models=models,
            samples=n_s,
            nodes=nodes,
            memory=Memory(),
        )

        # -- the concurrency limit binds: one model, limit 16 ----------------------------------
        memory = Memory()
        provider.reset()
        per_q = 5 if opts.quick else 10  # answers per question, so that the questions suffice
        ideal_run, ideal_total, _c, _m = sampling_phase(
            name="ideal",
            questions=questions[: ideal_calls // per_q],
            models=[ideal_model],
            samples=per_q,
            nodes=nodes,
            memory=memory,
        )
        ideal_wall = run_wall(ideal_run, ideal_run.responses.all())
        ideal = {
            "rate": ideal_total / ideal_wall,
            "wall": ideal_wall,
            "peak": provider.stats()["max_in_flight"],
        }
        note(f"ideal run: {ideal}")
        # For context, the same requests through bare litellm at the same limit, one process
        # (an asyncio.Semaphore of 16): what litellm itself leaves of the ideal.
        provider.reset()
        bare_ideal = bare_run(sample_requests(ideal_run, provider.base, ideal_calls), LIMIT, 1)
        bare_ideal["peak"] = provider.stats()["max_in_flight"]
        note(f"bare at the limit: {bare_ideal}")

        # -- sampling at scale, with a kill ------------------------------------------------------
        concurrency = min(n_m * LIMIT, PROCESSES * min(BATCH_SIZE, IN_FLIGHT_MAX))
        memory = Memory()
        kill: dict = {}

        def killer(run):
            if kill.get("done"):
                if "recovered" not in kill:
                    held = Response.objects.filter(
                        run=run, status=ResponseStatus.RUNNING, lease_owner=kill["owner"]
                    ).count()
                    if held == 0:
                        kill["recovered"] = time.monotonic() - kill["at"]
                return
            rows = Response.objects.filter(run=run)
            done = rows.filter(status__in=[ResponseStatus.DONE, ResponseStatus.FAILED]).count()
            if done < 0.3 * run_total[0]:
                return
            candidates = []
            for child in nodes[0].children():
                owner = f"{HOST}:{child.pid}"
                held = rows.filter(status=ResponseStatus.RUNNING, lease_owner=owner).count()
                candidates.append((held, child.pid, owner))
            held, pid, owner = max(candidates)
            if held < min(50, BATCH_SIZE // 4):
                return  # between batches: wait for one holding a batch
            os.kill(pid, signal.SIGKILL)
            kill.update(
                done=True, pid=pid, owner=owner, held=held, at=time.monotonic(), progress=done
            )
            note(f"killed pool process {pid} holding {held} rows at {done} done")
            # The worker's prefork parent starts another process in its place, so the run
            # goes on with as many processes as the bare loop has (a worker node of its
            # own added here made the sampling ratio flattering).
            t = time.monotonic()
            while time.monotonic() - t < 60:
                pids = {c.pid for c in nodes[0].children()}
                if len(pids - {pid}) >= PROCESSES:
                    break
                time.sleep(0.05)
            kill["started_in"] = time.monotonic() - t
            kill["replacement"] = sorted({c.pid for c in nodes[0].children()} - {pid})

        run_total = [n_q * n_m * n_s]
        provider.reset()
        run, total, created, mark = sampling_phase(
            name="at scale",
            questions=questions,
            models=models,
            samples=n_s,
            nodes=nodes,
            memory=memory,
            kill=killer,
        )
        pstats = provider.stats()
        rows = Response.objects.filter(run=run)
        wall = run_wall(run, rows)
        counts = status_counts(rows)
        ledger_n, ledger_by = ledger_rows(mark, "runs.sample:")
        dups = (
            rows.order_by()
            .values("model", "question", "sample_index")
            .annotate(n=Count("pk"))
            .filter(n__gt=1)
            .count()
        )
        failed_without_reason = rows.filter(status=ResponseStatus.FAILED, error="").count()
        sampling = {
            "total": total,
            "created": created,
            "wall": wall,
            "rate": total / wall,
            "rows_rate": (total + ledger_n) / wall,
            "ledger": ledger_n,
            "ledger_by": ledger_by,
            "counts": counts,
            "dups": dups,
            "failed_no_reason": failed_without_reason,
            "requests": pstats["requests"],
            "peak": pstats["max_in_flight"],
            "provider_cpu": pstats["cpu_ms"],
            "memory": memory,
            "repeated": repeated_calls(mark, "runs.sample:"),
        }
        note(f"sampling: {sampling}")

        # -- the bare loop: the same requests, the same concurrency, as many processes -------------
        provider.reset()
        bare_s = bare_run(sample_requests(run, provider.base, bare_calls), concurrency, PROCESSES)
        bare_stats = provider.stats()
        bare_s["peak"], bare_s["provider_cpu"] = bare_stats["max_in_flight"], bare_stats["cpu_ms"]
        note(f"bare (sampling requests): {bare_s}")

        # -- grading at scale -----------------------------------------------------------------------
        for extra in nodes[1:]:
            extra.stop()  # grading runs on the two-process worker alone
        nodes = nodes[:1]
        memory = Memory()
        provider.reset()
        grun, expected, gmark = grading_phase(
            sampling_run=run, grader=grader, nodes=nodes, memory=memory
        )
        gstats = provider.stats()
        gcalls = ChecklistCall.objects.filter(grading_run=grun)
        gwall = run_wall(grun, gcalls)
        gledger_n, gledger_by = ledger_rows(gmark, "grading.checklist:")
        jcounts = judgment_counts(grun)
        scores = ResponseScore.objects.filter(grading_run=grun).count()
        grading = {
            "total": gcalls.count(),
            "expected": expected,
            "wall": gwall,
            "rate": gcalls.count() / gwall,
            "judgments": jcounts,
            "scores": scores,
            "rows_rate": (jcounts["total"] + gcalls.count() + gledger_n + scores) / gwall,
            "ledger": gledger_n,
            "ledger_by": gledger_by,
            "counts": status_counts(gcalls),
            "requests": gstats["requests"],
            "peak": gstats["max_in_flight"],
            "provider_cpu": gstats["cpu_ms"],
            "memory": memory,
            "criteria": criteria_expected(grun),
        }
        note(f"grading: {grading}")
        g_concurrency = min(GRADER_LIMIT, PROCESSES * min(BATCH_SIZE, IN_FLIGHT_MAX))
        provider.reset()
        bare_g = bare_run(
            grading_requests(run, grader, provider.base, bare_calls), g_concurrency, PROCESSES
        )
        bare_stats = provider.stats()
        bare_g["peak"], bare_g["provider_cpu"] = bare_stats["max_in_flight"], bare_stats["cpu_ms"]
        note(f"bare (grading requests): {bare_g}")

        # -- faults -------------------------------------------------------------------------------------
        faulty = Provider(
            latency_ms=LATENCY_MS,
            rate_429=0.10,
            rate_500=0.02,
            rate_hang=0.01,
            rate_malformed=0.03,
            retry_after=1,
            hang_seconds=30,
            fault_seed=11,
        )
        try:
            fmodels = build_models(
                faulty.base,
                [f"offline-fault-{i + 1}" for i in range(fault_m)],
                prefix="Faulty",
                limit=LIMIT,
                timeout=5,
            )
            fgrader = build_models(
                faulty.base, ["offline-grader"], prefix="Faulty grader", limit=64, timeout=5
            )[0]
            memory_f = Memory()
            frun, ftotal, _c, fmark = sampling_phase(
                name="faults",
                questions=questions[:fault_q],
                models=fmodels,
                samples=n_s,
                nodes=nodes,
                memory=memory_f,
            )
            frows = Response.objects.filter(run=frun)
            f_sampling = {
                "total": ftotal,
                "wall": run_wall(frun, frows),
                "counts": status_counts(frows),
                "failed_by": dict(
                    frows.filter(status=ResponseStatus.FAILED)
                    .order_by()
                    .values_list("error_kind")
                    .annotate(n=Count("pk"))
                ),
                "failed_no_reason": frows.filter(status=ResponseStatus.FAILED, error="").count(),
                "ledger_by": ledger_rows(fmark, "runs.sample:")[1],
                "stats": faulty.stats(),
            }
            faulty.reset()
            fgrun, fexpected, fgmark = grading_phase(
                sampling_run=frun, grader=fgrader, nodes=nodes, memory=memory_f
            )
            fcalls = ChecklistCall.objects.filter(grading_run=fgrun)
            fj = judgment_counts(fgrun)
            f_grading = {
                "total": fcalls.count(),
                "expected": fexpected,
                "wall": run_wall(fgrun, fcalls),
                "counts": status_counts(fcalls),
                "error_by": dict(
                    fcalls.filter(status=CallState.ERROR)
                    .order_by()
                    .values_list("error_kind")
                    .annotate(n=Count("pk"))
                ),
                "judgments": fj,
                "criteria": criteria_expected(fgrun),
                "scores": ResponseScore.objects.filter(grading_run=fgrun).count(),
                "scorable": fcalls.filter(status=CallState.DONE).count(),
                "ledger_by": ledger_rows(fgmark, "grading.checklist:")[1],
                "stats": faulty.stats(),
                "memory": memory_f,
                "judgment_errors_by": dict(
                    Judgment.objects.filter(grading_run=fgrun, status=CallState.ERROR)
                    .order_by()
                    .values_list("error_kind")
                    .annotate(n=Count("pk"))
                ),
            }
        finally:
            faulty.stop()
        results = {
            "ideal": ideal,
            "bare_ideal": bare_ideal,
            "sampling": sampling,
            "bare_s": bare_s,
            "kill": kill,
            "grading": grading,
            "bare_g": bare_g,
            "f_sampling": f_sampling,
            "f_grading": f_grading,
        }
    finally:
        for node in nodes:
            node.stop()
        provider.stop()
    report(
        say,
        results,
        opts=opts,
        shape=(n_q, n_m, n_s),
        load0=load0,
        concurrency=(concurrency, g_concurrency),
        elapsed=time.monotonic() - began,
        lease=settings.LLM_LEASE_SECONDS,
        chains=settings.LLM_ENGINE_CHAINS,
        batch=BATCH_SIZE,
    )
    out = ROOT / "benchmarks" / "output"
    out.mkdir(exist_ok=True)
    (out / "run_at_scale.md").write_text("\n".join(lines) + "\n")
    return 0 if results.get("ok") else 1


def report(say, r, *, opts, shape, load0, concurrency, elapsed, lease, chains, batch) -> None:
    from apps.llm.engine import IN_FLIGHT_MAX

    n_q, n_m, n_s = shape
    s, g, bs, bg, ideal, kill = (
        r["sampling"],
        r["grading"],
        r["bare_s"],
        r["bare_g"],
        r["ideal"],
        r["kill"],
    )
    fs, fg = r["f_sampling"], r["f_grading"]
    load1 = os.getloadavg()
    ideal_rate = LIMIT / (LATENCY_MS / 1000)
    from apps.llm.engine import BATCH_SECONDS

    cmd = " ".join(["benchmarks/run_at_scale.py", *sys.argv[2:]]).strip()
    say(f"## Model runs at scale — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    say()
    say(
        f"`.venv/bin/python {cmd}`: {n_q} questions x {n_m} offline models x {n_s} answers "
        f"= {s['total']:,} answers, then a checklist grading run over them. Offline provider "
        f"at {LATENCY_MS} ms; one Celery worker, prefork, {PROCESSES} processes, DEBUG off, "
        f"batches of {batch} refilled for up to {BATCH_SECONDS:.0f} s, {chains} chains, lease "
        f"{lease} s, sweep every {lease / 4:.2f} s from the "
        f"script; models at max_concurrent {LIMIT} each (grader {GRADER_LIMIT}), priced "
        f"$2.50/$10 per Mtok, no budget. Machine: {os.cpu_count()} cores; load average "
        f"{load0[0]:.2f} at start, {load1[0]:.2f} at the end (other sessions' tests were "
        f"running, if any). Whole run {elapsed / 60:.1f} min."
    )
    say()
    say(
        "| run | calls/s | ratio to bare loop | ratio to ideal | wall time | rows written/s "
        "| worker peak RSS, max (per process, MB) | provider max in flight |"
    )
    say("|---|---|---|---|---|---|---|---|")
    say(
        f"| sampling, {s['total']:,} answers | {s['rate']:.1f} | {s['rate'] / bs['rate']:.2f} "
        f"| — | {s['wall']:.0f} s | {s['rows_rate']:.0f} ({s['total']:,} responses + "
        f"{s['ledger']:,} ledger rows) | {s['memory'].summary()} | {s['peak']} |"
    )
    say(
        f"| bare litellm loop, same sampling requests, "
        f"{concurrency[0]} in flight over {PROCESSES} processes | {bs['rate']:.1f} | 1 | — "
        f"| {bs['wall']:.0f} s | — | — | {bs['peak']} |"
    )
    say(
        f"| one model, limit {LIMIT}, {int(ideal['rate'] * ideal['wall'] + 0.5):,} answers "
        f"| {ideal['rate']:.1f} | — | {ideal['rate'] / ideal_rate:.2f} (ideal "
        f"{ideal_rate:.1f}) | {ideal['wall']:.0f} s | — | — | {ideal['peak']} |"
    )
    bi = r["bare_ideal"]
    say(
        f"| bare litellm loop, the same {int(bi['rate'] * bi['wall'] + 0.5):,} requests, "
        f"a semaphore of {LIMIT} in 1 process | {bi['rate']:.1f} | — | "
        f"{bi['rate'] / ideal_rate:.2f} | {bi['wall']:.0f} s | — | — | {bi['peak']} |"
    )
    jt = g["judgments"]
    say(
        f"| checklist grading, {g['total']:,} answers | {g['rate']:.1f} "
        f"| {g['rate'] / bg['rate']:.2f} | — | {g['wall']:.0f} s | {g['rows_rate']:.0f} "
        f"({jt['total']:,} judgments + {g['total']:,} calls + {g['ledger']:,} ledger + "
        f"{g['scores']:,} scores) | {g['memory'].summary()} | {g['peak']} |"
    )
    say(
        f"| bare litellm loop, same grading requests, {concurrency[1]} in flight over "
        f"{PROCESSES} processes | {bg['rate']:.1f} | 1 | — | {bg['wall']:.0f} s | — | — "
        f"| {bg['peak']} |"
    )
    say()
    s_cpu = s["memory"].cpu_seconds() * 1000 / s["total"]
    g_cpu = g["memory"].cpu_seconds() * 1000 / max(g["total"], 1)
    say(
        f"CPU per call, worker processes (engine, gateway, litellm, recording) against the "
        f"bare loop: sampling {s_cpu:.1f} ms / {bs['cpu_ms']:.1f} ms, grading {g_cpu:.1f} ms / "
        f"{bg['cpu_ms']:.1f} ms. A batch has at most {IN_FLIGHT_MAX} calls in the gateway at "
        f"once (apps/llm/engine.py IN_FLIGHT_MAX), so {concurrency[0]} and {concurrency[1]} in "
        f"flight at most over {PROCESSES} processes; the bare loop runs at the same. The "
        f"offline provider shares the machine (nice -10): its CPU per request was "
        f"{s['provider_cpu']:.1f} ms sampling / {bs['provider_cpu']:.1f} ms bare, "
        f"{g['provider_cpu']:.1f} ms grading / {bg['provider_cpu']:.1f} ms bare."
    )
    say()
    bound = s["total"] + kill.get("held", 0)
    counts = s["counts"]
    say(
        "**Kill during sampling.** "
        + (
            f"At {kill['progress']:,} answers done, SIGKILL to pool process {kill['pid']} "
            f"holding {kill['held']} rows (running, lease_owner {kill['owner']}); the "
            f"worker's prefork parent started another in its place in "
            f"{kill['started_in']:.1f} s (pool now {kill['replacement']}); the dead process's rows "
            f"were all taken back after {kill.get('recovered', float('nan')):.0f} s."
            if kill.get("done")
            else "No process was killed (the run ended first)."
        )
        + f" End: {sum(counts.values()):,} responses ({counts}), {s['dups']} duplicated "
        f"(model, question, sample), {s['failed_no_reason']} failed without a reason; "
        f"provider requests {s['requests']:,} ≤ {bound:,} (= {s['total']:,} + "
        f"{kill.get('held', 0)} held at the kill); calls answered twice: {s['repeated']}; "
        f"ledger {s['ledger_by']}."
    )
    say()
    fj = fg["judgments"]
    say(
        f"**Faults** (10% 429, 2% 500, 1% hangs of 30 s against a 5 s timeout, 3% malformed "
        f"JSON; {n_s} answers x {fs['total'] // n_s:,} question-model pairs). Sampling: "
        f"{fs['total']:,} responses ended in {fs['wall']:.0f} s: {fs['counts']}; failed by "
        f"kind {fs['failed_by']}, {fs['failed_no_reason']} without a reason; ledger "
        f"{fs['ledger_by']}; provider {fs['stats']['requests']:,} requests, faults "
        f"{fs['stats']['faults']}. Grading: {fg['total']:,} checklist calls for "
        f"{fg['expected']:,} answered responses in {fg['wall']:.0f} s: {fg['counts']}, errors "
        f"by kind {fg['error_by']}; judgments {fj['total']:,} = {fj['n_met']:,} met + "
        f"{fj['n_not_met']:,} not met + {fj['n_error']:,} errors (+ {fj['n_other']} other), criteria "
        f"of the graded rubrics {fg['criteria']:,}; judgment errors by kind "
        f"{fg['judgment_errors_by']}; scores {fg['scores']:,} for {fg['scorable']:,} answers "
        f"graded without error; ledger {fg['ledger_by']}; provider "
        f"{fg['stats']['requests']:,} requests, faults {fg['stats']['faults']}."
    )
    say()
    checks = [
        (
            "sampling / bare loop ≥ 0.8",
            s["rate"] / bs["rate"] >= 0.8,
            f"{s['rate'] / bs['rate']:.2f}",
        ),
        (
            "grading / bare loop ≥ 0.8",
            g["rate"] / bg["rate"] >= 0.8,
            f"{g['rate'] / bg['rate']:.2f}",
        ),
        (
            f"one model at limit {LIMIT} / ideal ≥ 0.9",
            ideal["rate"] / ideal_rate >= 0.9,
            f"{ideal['rate'] / ideal_rate:.2f}",
        ),
        (
            "worker peak RSS ≤ 300 MB a process",
            max(s["memory"].max_mb(), g["memory"].max_mb()) <= 300,
            f"{max(s['memory'].max_mb(), g['memory'].max_mb()):.0f} MB",
        ),
        (
            f"exactly {s['total']:,} responses, none duplicated",
            sum(counts.values()) == s["total"] and s["dups"] == 0,
            f"{sum(counts.values()):,}",
        ),
        (
            "none lost: all done, or failed with a reason",
            counts.get("done", 0) + counts.get("failed", 0) == s["total"]
            and s["failed_no_reason"] == 0,
            f"{counts}",
        ),
        (
            "provider requests ≤ answers + held at the kill",
            s["requests"] <= bound,
            f"{s['requests']:,} ≤ {bound:,}",
        ),
        (
            "provider never above the limits",
            ideal["peak"] <= LIMIT and s["peak"] <= n_m * LIMIT and g["peak"] <= GRADER_LIMIT,
            f"{ideal['peak']}, {s['peak']}, {g['peak']}",
        ),
        (
            "grading: every answer graded, judgments = criteria",
            g["total"] == g["expected"] and jt["total"] == g["criteria"] and jt["n_other"] == 0,
            f"{g['total']:,}/{g['expected']:,}, {jt['total']:,}/{g['criteria']:,}",
        ),
        (
            "faults: both runs end; every judgment met, not met or an explicit error; counts add up",
            sum(fs["counts"].values()) == fs["total"]
            and set(fs["counts"]) <= {"done", "failed"}
            and fs["failed_no_reason"] == 0
            and fg["total"] == fg["expected"]
            and set(fg["counts"]) <= {"done", "error"}
            and fj["total"] == fg["criteria"] == fj["n_met"] + fj["n_not_met"] + fj["n_error"]
            and fj["n_other"] == 0,
            f"{fj['n_met']:,} + {fj['n_not_met']:,} + {fj['n_error']:,} = {fj['total']:,}",
        ),
    ]
    say("| target | met | measured |")
    say("|---|---|---|")
    for label, ok, measured in checks:
        say(f"| {label} | {'yes' if ok else '**NO**'} | {measured} |")
    r["ok"] = all(ok for _l, ok, _m in checks)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=450)
    parser.add_argument("--models", type=int, default=18)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="40 questions x 6 models x 5")
    parser.add_argument("--keep-db", action="store_true", help="leave the database for a look")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bare-child", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=1, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.bare_child:
        return bare_child(opts.bare_child, opts.concurrency)
    if opts.inner:
        return inner(opts)
    return outer(opts)


def outer(opts) -> int:
    return own_stack.measured(
        __file__,
        db_name=DB_NAME,
        redis_db=REDIS_DB,
        keep_db=opts.keep_db,
        LLM_LEASE_SECONDS=str(LEASE_SECONDS),
    )


if __name__ == "__main__":
    sys.exit(main())
