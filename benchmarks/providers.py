"""Real providers at real scale: adaptive concurrency against a limit the engine is not
told, and batch mode at HelpBench's size (benchmarks/provider_batches.py says how).

    .venv/bin/python benchmarks/providers.py                 # both, the targets below
    .venv/bin/python benchmarks/providers.py --part batch    # one part: adaptive or batch
    .venv/bin/python benchmarks/providers.py --quick         # shorter phases, a fast check

Against a database of its own (assay_bench_providers, created and dropped on the server of
DATABASE_URL) and Redis db 4, with the offline provider at 300 ms latency hiding a limit of
48 requests at once (it answers 429 with Retry-After above it, apps' limiter unaware), and
Celery workers on a queue of the benchmark's own. One offline model with adaptive
concurrency, a floor of 2 and a ceiling of 256, samples answers in a run larger than the
measurement; twice:

1. one worker node of 2 processes;
2. two worker nodes of 1 process each, under different host names, sharing one limit in
   Redis as workers on two machines would.

Each time the hidden limit is dropped to 16 at DROP_AT seconds, and the run is cancelled
AFTER_DROP seconds later. The ideal is the hidden limit over the latency (160 calls/s, then
53.3). Targets: from 60 s after launch until the drop, completions at >= 0.9 of the ideal;
from 30 s after the drop until the end, >= 0.9 of the new ideal; 429s <= 2 % of the calls
made. The limit's changes (apps.llm.models.LimitChange) are summarised beside.

Prints a markdown report (also written to benchmarks/output/providers.md).
"""

import argparse
import datetime as dt
import os
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import provider_batches  # noqa: E402
from benchmarks.own_stack import measured  # noqa: E402
from benchmarks.run_at_scale import (  # noqa: E402
    LATENCY_MS,
    Memory,
    Provider,
    Workers,
    build_questions,
    watch,
)

DB_NAME = "assay_bench_providers"
REDIS_DB = 4
HIDDEN, DROPPED = 48, 16
CEILING, FLOOR = 256, 2
SETTLE_SECONDS = 60  # after launch: from then on, at the ideal
RESETTLE_SECONDS = 30  # after the drop: from then on, at the new ideal
TARGET = 0.9
LIMITED_MAX = 0.02


def ideal(limit: int) -> float:
    return limit / (LATENCY_MS / 1000)


def set_hidden(provider: Provider, concurrent: int) -> None:
    import httpx

    httpx.post(provider.base + "/offline/limit", json={"concurrent": concurrent}).raise_for_status()


def adaptive_model(base: str, name: str):
    from apps.llm.models import ModelConfig

    return ModelConfig.objects.create(
        display_name=f"Adaptive {name}",
        family="Offline",
        litellm_model="openai/offline-terse",
        api_base=base,
        max_concurrent=CEILING,
        adapts_concurrency=True,
        min_concurrent=FLOOR,
        timeout_seconds=60,
        input_price_per_mtok=Decimal("2.50"),
        output_price_per_mtok=Decimal("10.00"),
    )


def rate_between(rows, start: dt.datetime, end: dt.datetime) -> float:
    done = rows.filter(completed_at__gte=start, completed_at__lt=end).count()
    return done / max((end - start).total_seconds(), 1e-9)


def timeline(rows, launched: dt.datetime, end: dt.datetime, step: int = 10) -> list[str]:
    """Completions a second in each `step`-second window since launch."""
    out, t = [], 0
    while launched + dt.timedelta(seconds=t + step) <= end:
        a, b = launched + dt.timedelta(seconds=t), launched + dt.timedelta(seconds=t + step)
        out.append(f"{rate_between(rows, a, b):.0f}")
        t += step
    return out


def phase(*, label, provider, nodes, questions, samples, drop_at, after_drop) -> dict:
    from django.utils import timezone

    from apps.llm.models import CallStatus, LimitChange, LLMCall
    from apps.runs.models import Response
    from apps.runs.services import sampling_run_create, sampling_run_launch
    from apps.runs.services.sampling import sampling_run_cancel

    set_hidden(provider, HIDDEN)
    provider.reset()
    model = adaptive_model(provider.base, label)
    run = sampling_run_create(
        name=label, questions=questions, models=[model], samples_per_item=samples, seed=7
    )
    rows = Response.objects.filter(run=run)
    run = sampling_run_launch(run=run)
    launched = run.launched_at
    marks: dict[str, dt.datetime] = {}

    def tick():
        elapsed = (timezone.now() - launched).total_seconds()
        if "drop" not in marks and elapsed >= drop_at:
            set_hidden(provider, DROPPED)
            marks["drop"] = timezone.now()
        if "drop" in marks and (timezone.now() - marks["drop"]).total_seconds() >= after_drop:
            marks["end"] = timezone.now()
            sampling_run_cancel(run=run)  # RunError if it ran out of answers: too small

    memory = Memory()
    watch(rows=rows, finished=lambda: "end" in marks, nodes=nodes, memory=memory, on_tick=tick)
    drop, end = marks["drop"], marks["end"]
    calls = LLMCall.objects.filter(model=model)
    counts = Counter(calls.values_list("status", flat=True))
    attempts = sum(counts.values())
    limited = counts.get(CallStatus.RATE_LIMITED, 0)
    changes = list(LimitChange.objects.filter(model=model))
    before = [c for c in changes if c.at < drop]
    after = [c for c in changes if c.at >= drop + dt.timedelta(seconds=RESETTLE_SECONDS)]
    stats = provider.stats()
    return {
        "label": label,
        "nodes": ", ".join(n.hostname for n in nodes),
        "settled": rate_between(rows, launched + dt.timedelta(seconds=SETTLE_SECONDS), drop),
        "resettled": rate_between(rows, drop + dt.timedelta(seconds=RESETTLE_SECONDS), end),
        "attempts": attempts,
        "limited": limited,
        "share": limited / max(attempts, 1),
        "faults": stats["faults"].get("limit", 0),
        "changes": Counter(c.why for c in changes),
        "limit_before": (min(c.new for c in before[-20:]), max(c.new for c in before[-20:]))
        if before
        else None,
        "limit_after": (min(c.new for c in after), max(c.new for c in after)) if after else None,
        "first_cut": next(
            ((c.at - launched).total_seconds() for c in changes if c.why == "cut"), None
        ),
        "timeline": timeline(rows, launched, end),
        "drop_at": (drop - launched).total_seconds(),
        "memory": memory.summary(),
    }


def report(say, results: list[dict], *, opts) -> bool:
    first, second = ideal(HIDDEN), ideal(DROPPED)
    say("## Adaptive concurrency against a hidden limit (benchmarks/providers.py)")
    say()
    say(
        f"Offline provider at {LATENCY_MS} ms, hidden limit {HIDDEN} at once, dropped to "
        f"{DROPPED} mid-run; one model with adaptive concurrency (floor {FLOOR}, ceiling "
        f"{CEILING}). Ideal: {first:.1f} calls/s, then {second:.1f}."
        + (" Quick mode: shorter phases." if opts.quick else "")
    )
    say()
    say(
        "| workers | from 60 s to the drop | from 30 s after the drop | 429s | "
        "limit before the drop | limit after | changes |"
    )
    say("|---|---|---|---|---|---|---|")
    ok = True
    for r in results:
        a, b = r["settled"] / first, r["resettled"] / second
        met = a >= TARGET and b >= TARGET and r["share"] <= LIMITED_MAX
        ok &= met
        changes = ", ".join(f"{k} {v}" for k, v in sorted(r["changes"].items()))
        say(
            f"| {r['label']} ({r['nodes']}) | {r['settled']:.1f}/s = **{a:.2f}** of ideal | "
            f"{r['resettled']:.1f}/s = **{b:.2f}** | {r['limited']} of {r['attempts']} = "
            f"**{100 * r['share']:.2f} %** | {r['limit_before']} | {r['limit_after']} | "
            f"{changes} |"
        )
    say()
    for r in results:
        say(
            f"- {r['label']}: completions a second, 10 s windows from launch (drop at "
            f"{r['drop_at']:.0f} s): {' '.join(r['timeline'])}; first cut at "
            f"{r['first_cut']:.1f} s; the provider refused {r['faults']}; worker RSS "
            f"{r['memory']}."
        )
    say()
    say(
        f"Targets: >= {TARGET} of the ideal from {SETTLE_SECONDS} s and from "
        f"{RESETTLE_SECONDS} s after the drop; 429s <= {100 * LIMITED_MAX:.0f} %: "
        + ("**met**." if ok else "**not met**.")
    )
    return ok


def inner(opts) -> int:
    import django

    django.setup()
    import redis

    from benchmarks.run_at_scale import celery_app

    celery_app()
    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    drop_at, after_drop = (75, 45) if opts.quick else (120, 75)
    questions_n, samples = (900, 20) if opts.quick else (1500, 20)
    lines: list[str] = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    env = dict(os.environ)
    out = ROOT / "benchmarks" / "output"
    out.mkdir(exist_ok=True)
    ok = True
    if opts.part in ("all", "adaptive"):
        ok &= adaptive(
            say,
            env=env,
            opts=opts,
            drop_at=drop_at,
            after_drop=after_drop,
            questions_n=questions_n,
            samples=samples,
        )
    if opts.part in ("all", "batch"):
        say()
        ok &= provider_batches.run(say, env=env, quick=opts.quick, out=out)
    (out / "providers.md").write_text("\n".join(lines) + "\n")
    return 0 if ok else 1


def adaptive(say, *, env, opts, drop_at, after_drop, questions_n, samples) -> bool:
    provider = Provider(latency_ms=LATENCY_MS, limit_concurrent=HIDDEN)
    results = []
    try:
        questions = build_questions(questions_n)
        for label, shape in (("one node", [("a", 2)]), ("two hosts", [("a", 1), ("b", 1)])):
            nodes = [
                Workers(env, processes=processes, name=f"providers-{host}", host=f"host-{host}")
                for host, processes in shape
            ]
            try:
                results.append(
                    phase(
                        label=label,
                        provider=provider,
                        nodes=nodes,
                        questions=questions,
                        samples=samples,
                        drop_at=drop_at,
                        after_drop=after_drop,
                    )
                )
            finally:
                for node in nodes:
                    node.stop()
    finally:
        provider.stop()
    return report(say, results, opts=opts)


def outer(opts) -> int:
    return measured(
        __file__, db_name=DB_NAME, redis_db=REDIS_DB, keep_db=opts.keep_db, LLM_LEASE_SECONDS="15"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="shorter phases")
    parser.add_argument("--part", choices=("all", "adaptive", "batch"), default="all")
    parser.add_argument("--keep-db", action="store_true", help="leave the database for a look")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    return inner(opts) if opts.inner else outer(opts)


if __name__ == "__main__":
    sys.exit(main())
