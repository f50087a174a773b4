"""Batch mode at HelpBench's size (benchmarks/providers.py --part batch runs it).

One offline provider whose batches take BATCH_SECONDS, fail 2 % of their lines (a 500 in
the error file) and let the first batch expire; six offline models with a batch API at
gpt-4.1's list prices ($2 in, $8 out per million tokens: every call's price is a whole
number of micro-dollars, so that half of it is one too); one worker node of two processes
and Celery beat polling every POLL_SECONDS.

1. Live, for the baseline: a run of LIVE_QUESTIONS of the questions, sampled and graded by
   checklist, with the engine's live calls: worker CPU per call, peak RSS.
2. Batch: 40,500 answers (1,350 questions x 6 models x 5 samples) sampled in batch mode,
   then every answer graded by checklist in batch mode. A pool process is SIGKILLed while it
   records a batch (mid-poll), and beat is SIGKILLed while batches are pending and started
   again.

Targets: every row done exactly once (one OK ledger row per row, no row failed); the ledger's
cost exactly half the list price of the same tokens, and every answer the live run also made
(the same request: the same model, question, sample and seed) costs exactly half of what it
cost live; worker peak RSS <= 300 MB; worker CPU per call in batch mode at most live mode's.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BATCH_SECONDS = 20
POLL_SECONDS = 2
HOLD_SECONDS = 20  # a killed reader's hold runs out this soon
FAILED_LINES = 0.02
QUESTIONS, MODELS, SAMPLES = 1350, 6, 5
LIVE_QUESTIONS = 100
PRICE = (Decimal("2.00"), Decimal("8.00"))
RSS_MAX_MB = 300
SEED = 2024


class Beat:
    """Celery beat for the benchmark's app (the engine's tasks on its queue)."""

    def __init__(self, env: dict, schedule: Path):
        celery = str(Path(sys.executable).parent / "celery")
        with contextlib.suppress(FileNotFoundError):
            schedule.unlink()
        self.process = subprocess.Popen(
            [celery, "-A", "benchmarks.run_at_scale", "beat", "--schedule", str(schedule)],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
        )

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


def batch_models(base: str):
    from apps.llm.models import ModelConfig
    from benchmarks.run_at_scale import build_models

    names = [f"offline-batch-{i + 1:02d}" for i in range(MODELS)]
    models = build_models(base, names, prefix="Batch", limit=16, timeout=60)
    grader = build_models(base, ["offline-grader"], prefix="Batch grader", limit=256, timeout=60)
    every = [*models, *grader]
    ModelConfig.objects.filter(pk__in=[m.pk for m in every]).update(
        batch_api=True, input_price_per_mtok=PRICE[0], output_price_per_mtok=PRICE[1]
    )
    return list(ModelConfig.objects.filter(pk__in=[m.pk for m in models])), ModelConfig.objects.get(
        pk=grader[0].pk
    )


def batched(run) -> None:
    run.__class__.objects.filter(pk=run.pk).update(batch_mode=True)
    run.refresh_from_db()


def cpu_per_call(memory, calls: int) -> float:
    return memory.cpu_seconds() * 1000 / max(calls, 1)


def ok_calls(prefix: str, mark: int):
    from apps.llm.models import CallStatus, LLMCall

    return LLMCall.objects.filter(pk__gt=mark, caller__startswith=prefix, status=CallStatus.OK)


def live_phase(*, questions, models, grader, nodes) -> dict:
    from apps.grading.models import CallState, ChecklistCall, GradingMode
    from apps.grading.services import grading_run_create, grading_run_launch
    from apps.runs.models import ResponseStatus
    from apps.runs.services import sampling_run_create, sampling_run_launch
    from benchmarks.run_at_scale import Memory, ledger_mark, run_ended, watch

    memory = Memory()
    mark = ledger_mark()
    run = sampling_run_create(
        name="live", questions=questions, models=models, samples_per_item=SAMPLES, seed=SEED
    )
    rows = run.responses.all()
    run = sampling_run_launch(run=run)
    watch(
        rows=rows,
        finished=run_ended(run, rows, waiting=(ResponseStatus.PENDING, ResponseStatus.RUNNING)),
        nodes=nodes,
        memory=memory,
    )
    grading = grading_run_create(sampling_run=run, grader=grader, mode=GradingMode.CHECKLIST)
    grading = grading_run_launch(run=grading)
    checklists = ChecklistCall.objects.filter(grading_run=grading)
    watch(
        rows=checklists,
        finished=run_ended(grading, checklists, waiting=(CallState.PENDING, CallState.RUNNING)),
        nodes=nodes,
        memory=memory,
    )
    calls = ok_calls("runs.sample:", mark).count() + ok_calls("grading.checklist:", mark).count()
    return {
        "run": run,
        "calls": calls,
        "cpu_ms": cpu_per_call(memory, calls),
        "rss": memory.max_mb(),
        "memory": memory.summary(),
    }


def batch_phase(*, questions, models, grader, nodes, env, provider, out: Path) -> dict:
    import httpx
    from django.db.models import Count

    from apps.grading.models import CallState, ChecklistCall, GradingMode
    from apps.grading.services import grading_run_create, grading_run_launch
    from apps.llm.models import LLMCall, ProviderBatch
    from apps.runs.models import ResponseStatus
    from apps.runs.services import sampling_run_create, sampling_run_launch
    from benchmarks.run_at_scale import Memory, ledger_mark, run_ended, watch

    httpx.post(provider.base + "/offline/batches", json={"expire_next": 1}).raise_for_status()
    memory = Memory()
    mark = ledger_mark()
    beat = {"now": Beat(env, out / "beat-schedule")}
    kills: dict = {}

    def killer():
        """SIGKILL the pool process recording a batch (once it has recorded part of it), and
        beat while batches are pending; start beat again 5 s later."""
        if "worker" not in kills:
            reading = (
                ProviderBatch.objects.filter(recorded_at__isnull=True, recorded__gt=0)
                .exclude(held_by="")
                .values_list("held_by", "pk")
                .first()
            )
            if reading:
                pid = int(reading[0].split(":")[1])
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    kills["worker"] = (pid, reading[1], time.monotonic())
        if "beat" not in kills and ProviderBatch.objects.filter(status="in_progress").exists():
            beat["now"].kill()
            kills["beat"] = time.monotonic()
        if "beat" in kills and "beat again" not in kills and time.monotonic() - kills["beat"] > 5:
            beat["now"] = Beat(env, out / "beat-schedule")
            kills["beat again"] = time.monotonic()

    try:
        t0 = time.monotonic()
        run = sampling_run_create(
            name="batch", questions=questions, models=models, samples_per_item=SAMPLES, seed=SEED
        )
        batched(run)
        rows = run.responses.all()
        run = sampling_run_launch(run=run)
        watch(
            rows=rows,
            finished=run_ended(run, rows, waiting=(ResponseStatus.PENDING, ResponseStatus.RUNNING)),
            nodes=nodes,
            memory=memory,
            on_tick=killer,
        )
        sampled = time.monotonic() - t0
        grading = grading_run_create(sampling_run=run, grader=grader, mode=GradingMode.CHECKLIST)
        batched(grading)
        grading = grading_run_launch(run=grading)
        checklists = ChecklistCall.objects.filter(grading_run=grading)
        watch(
            rows=checklists,
            finished=run_ended(grading, checklists, waiting=(CallState.PENDING, CallState.RUNNING)),
            nodes=nodes,
            memory=memory,
            on_tick=killer,
        )
        graded = time.monotonic() - t0 - sampled
    finally:
        beat["now"].kill()
    answers = ok_calls("runs.sample:", mark)
    judged = ok_calls("grading.checklist:", mark)
    ledger = LLMCall.objects.filter(pk__gt=mark)
    listed = sum(
        (PRICE[0] * c.input_tokens + PRICE[1] * c.output_tokens) / 10**6
        for c in ledger.only("input_tokens", "output_tokens").iterator()
    )
    spent = sum((c or Decimal(0)) for c in ledger.values_list("cost_usd", flat=True))
    batches = ProviderBatch.objects.filter(pk__gt=0)
    return {
        "run": run,
        "grading": grading,
        "rows": rows.count(),
        "rows_status": dict(rows.order_by().values_list("status").annotate(n=Count("pk"))),
        "checklists": checklists.count(),
        "checklist_status": dict(
            checklists.order_by().values_list("status").annotate(n=Count("pk"))
        ),
        "answers_ok": answers.count(),
        "answers_once": answers.values("caller").distinct().count(),
        "judged_ok": judged.count(),
        "judged_once": judged.values("caller").distinct().count(),
        "not_batch": ledger.filter(batch__isnull=True).count(),
        "ledger": ledger.count(),
        "ledger_status": dict(ledger.order_by().values_list("status").annotate(n=Count("pk"))),
        "spent": spent,
        "listed": listed,
        "batches": dict(batches.order_by().values_list("status").annotate(n=Count("pk"))),
        "retried": sum(batches.values_list("retried", flat=True)),
        "provider": provider.stats()["batches"],
        "calls": answers.count() + judged.count(),
        "cpu_ms": cpu_per_call(memory, answers.count() + judged.count()),
        "rss": memory.max_mb(),
        "memory": memory.summary(),
        "kills": kills,
        "sampled_s": sampled,
        "graded_s": graded,
    }


def same_requests(live_run, batch_run) -> tuple[int, int]:
    """(answers the live run and the batch run both made with one request, of those how many
    cost exactly half in the batch)."""
    from apps.runs.models import Response, ResponseStatus

    def costs(run):
        done = Response.objects.filter(run=run, status=ResponseStatus.DONE)
        return {
            (r["model_id"], r["question_id"], r["sample_index"]): (r["seed"], r["cost_usd"])
            for r in done.values("model_id", "question_id", "sample_index", "seed", "cost_usd")
        }

    live, batch = costs(live_run), costs(batch_run)
    both = [k for k in live if k in batch and live[k][0] == batch[k][0]]
    return len(both), sum(batch[k][1] * 2 == live[k][1] for k in both)


def report(say, live: dict, batch: dict, *, quick: bool) -> bool:
    expected_rows = batch["rows"]
    done_once = (
        batch["rows_status"] == {"done": expected_rows}
        and batch["answers_ok"] == batch["answers_once"] == expected_rows
        and batch["checklist_status"] == {"done": batch["checklists"]}
        and batch["judged_ok"] == batch["judged_once"] == batch["checklists"]
        and batch["not_batch"] == 0
    )
    half = batch["spent"] == batch["listed"] / 2
    pairs, halves = batch["pairs"]
    rss_ok = batch["rss"] <= RSS_MAX_MB
    cpu_ok = batch["cpu_ms"] <= live["cpu_ms"]
    killed = "worker" in batch["kills"] and "beat" in batch["kills"]
    ok = done_once and half and pairs == halves and rss_ok and cpu_ok and killed
    say("## Batch mode at HelpBench's size (benchmarks/providers.py --part batch)")
    say()
    say(
        f"{batch['rows']:,} answers ({QUESTIONS if not quick else 'quick:'} questions x "
        f"{MODELS} models x {SAMPLES} samples) and their checklist grading ({batch['checklists']:,}"
        f" calls) in batch mode, against the offline provider: batches of {BATCH_SECONDS} s, "
        f"{100 * FAILED_LINES:.0f} % of lines failed, the first batch expired; beat polling "
        f"every {POLL_SECONDS} s; one worker node of 2 processes."
        + (" Quick mode: fewer questions." if quick else "")
    )
    say()
    say("| | live (baseline) | batch | target |")
    say("|---|---|---|---|")
    say(
        f"| calls answered | {live['calls']:,} | {batch['calls']:,} "
        f"(sampled in {batch['sampled_s']:.0f} s, graded in {batch['graded_s']:.0f} s) | |"
    )
    say(
        f"| rows done exactly once | — | answers {batch['answers_once']:,} of {expected_rows:,}, "
        f"checklists {batch['judged_once']:,} of {batch['checklists']:,}; rows "
        f"{batch['rows_status']} / {batch['checklist_status']}; ledger rows outside a batch: "
        f"{batch['not_batch']} | **{'met' if done_once else 'not met'}** |"
    )
    say(
        f"| ledger cost | — | ${batch['spent']:.6f} = half of the list price "
        f"${batch['listed']:.6f}: **{half}**; answers made by both runs with one request: "
        f"{halves:,} of {pairs:,} cost exactly half | exactly half |"
    )
    say(
        f"| worker CPU per call | {live['cpu_ms']:.2f} ms | {batch['cpu_ms']:.2f} ms = "
        f"**{batch['cpu_ms'] / max(live['cpu_ms'], 1e-9):.2f}** of live | <= 1 |"
    )
    say(f"| worker peak RSS | {live['rss']:.0f} MB | **{batch['rss']:.0f} MB** | <= {RSS_MAX_MB} |")
    say()
    kills = batch["kills"]
    worker = kills.get("worker")
    say(
        f"- Killed: pool process {worker[0]} while it recorded batch {worker[1]}; "
        if worker
        else "- No pool process was caught recording a batch; "
    )
    say(
        f"  beat {'killed while batches were pending and started again' if 'beat' in kills else 'not killed'}."
    )
    say(
        f"- Ledger by status: {batch['ledger_status']}; batches by status: {batch['batches']}; "
        f"rows put back or asked again: {batch['retried']:,}; the provider's count: "
        f"{batch['provider']}."
    )
    say(f"- Worker RSS, live: {live['memory']}; batch: {batch['memory']}.")
    say()
    say("Targets: " + ("**met**." if ok else "**not met**."))
    return ok


def run(say, *, env: dict, quick: bool, out: Path) -> bool:
    from benchmarks.run_at_scale import Provider, Workers, build_questions

    env = dict(
        env,
        LLM_BATCH_POLL_SECONDS=str(POLL_SECONDS),
        LLM_BATCH_HOLD_SECONDS=str(HOLD_SECONDS),
    )
    provider = Provider(
        latency_ms=300,
        batch_seconds=BATCH_SECONDS if not quick else 8,
        batch_rate_failed=FAILED_LINES,
        fault_seed=11,
    )
    nodes = [Workers(env, processes=2, name="batches")]
    try:
        questions = build_questions(QUESTIONS if not quick else 150)
        models, grader = batch_models(provider.base)
        live = live_phase(
            questions=questions[: LIVE_QUESTIONS if not quick else 20],
            models=models,
            grader=grader,
            nodes=nodes,
        )
        print(f"live: {live}", file=sys.stderr, flush=True)
        provider.reset()
        batch = batch_phase(
            questions=questions,
            models=models,
            grader=grader,
            nodes=nodes,
            env=env,
            provider=provider,
            out=out,
        )
        batch["pairs"] = same_requests(live["run"], batch["run"])
    finally:
        for node in nodes:
            node.stop()
        provider.stop()
    return report(say, live, batch, quick=quick)
