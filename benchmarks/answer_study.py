"""The answer study at the published size, the proxies that answer it, and its report.

    .venv/bin/python benchmarks/answer_study.py            # 450 answers + 200 pairs x 5 people
    .venv/bin/python benchmarks/answer_study.py --quick    # 36 answers + 12 pairs, a fast check

Against a database of its own (assay_bench_answers, created and dropped on the server of
DATABASE_URL) and Redis db 12, with the offline provider at 300 ms (started with --port 0) and
one Celery worker (prefork, 2 processes, `-Q llm`), as benchmarks/survey_report.py (whose
provider, worker, proxy-run loop and profiler it uses):

1. a graded benchmark, bulk-created as the apps store it: 5 models x 9 topics x 4 questions x
   3 answers, each question's rubric ten factual criteria of 5 points and the newest shared
   presentation criteria, every criterion judged by a grading run, the scores computed by the
   grading app's own service (`scores_compute`), each (model, topic) with 6 answers below 0.65
   and 6 at or above it; an answer study drawn from it by `answer_study_create` (5 answers per
   stratum over 5 x 9 x 2 strata = 450 answers, 20 pairs for each of the 10 model pairs = 200
   pairs, k = 5), rated by the demo's simulated people (`simulated_answer_people_add`: 6 units
   a person, every unit exactly 5 ratings);
2. proxies: 3 offline models x 5 runs over the 650 units (9,750 calls) through the worker,
   from launch to finished, against the same requests through a bare `litellm.acompletion`
   loop at the same number in flight (benchmarks/run_at_scale.py's loop); then a sweep of one
   model at 6 temperatures x 1 run (3,900 calls, one model: at most 16 in flight), timed as
   well. No personas: with them the sweep holds a proxy for each of the 542 simulated people,
   650 calls each (352,300 calls). After each run, every call must be done once, with an
   assignment and its answers, none repeated;
3. on those people and proxies, `answer_study_data` + `answer_study_report` (every table; each
   figure's SVG drawn and timed apart), the median of a few repetitions, against 2 s; and
   `answer_study_intervals` (1,000 resamples) against 30 s.

A missed target gets a cProfile of the function that missed it in the output. Prints a
markdown report (also benchmarks/output/answer_study.md); a full-size run writes it, dated,
under "## Answer study" in benchmarks/RESULTS.md.
"""

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import own_stack  # noqa: E402
from benchmarks.run_at_scale import (  # noqa: E402 (after the path is set)
    CLIENT_NICE,
    PROVIDER_NICE,
    bare_run,
)
from benchmarks.survey_report import (  # noqa: E402
    LIMIT,
    PROCESSES,
    Provider,
    Worker,
    build_models,
    profile,
    proxy_requests,
    proxy_run,
)

DB_NAME = "assay_bench_answers"
REDIS_DB = 12
LATENCY_MS = 300
REPEATS = 5
RATINGS_PER_UNIT = 5
PROXY_RUNS = 5
PROXY_MODELS = ["offline-terse", "offline-thorough", "offline-friendly"]
SWEEP_MODEL = "offline-thorough"
SWEEP_TEMPERATURES = [Decimal(t) for t in ("0", "0.3", "0.6", "0.9", "1.2", "1.5")]
FACTUAL_CRITERIA, FACTUAL_POINTS = 10, 5
TARGET_REPORT_S, TARGET_INTERVALS_S, TARGET_RATIO = 2.0, 30.0, 0.8


@dataclass(frozen=True)
class Size:
    models: int
    topics: int
    questions_per_topic: int
    samples: int
    answers_per_stratum: int
    pairs_per_model_pair: int
    sweep_runs: int

    @property
    def pairs(self) -> int:
        return self.models * (self.models - 1) // 2 * self.pairs_per_model_pair

    @property
    def answers(self) -> int:
        return self.models * self.topics * 2 * self.answers_per_stratum


FULL = Size(5, 9, 4, 3, 5, 20, 1)
QUICK = Size(3, 3, 4, 3, 2, 4, 1)


# --- data ---------------------------------------------------------------------------------------


def answer_text(rng: random.Random, model: str, question: int, sample: int, good: bool) -> str:
    """Markdown as a model writes it: a short lead, a few steps, sometimes a closing line."""
    steps = rng.randint(2, 6) if good else rng.randint(1, 3)
    lines = [f"Here is what {model} suggests for question {question} (answer {sample + 1})."]
    lines += [""] + [
        f"{n}. **Step {n}**: check the setting, then {rng.choice(['save', 'retry', 'report'])} it."
        for n in range(1, steps + 1)
    ]
    if rng.random() < 0.5:
        lines += ["", "If that does not work, contact the service's support team."]
    return "\n".join(lines)


def build_benchmark(size: Size, seed: int = 30):
    """A finished sampling run and its grading run, bulk-created: per (model, topic) half the
    answers below 0.65, half at or above it; presentation verdicts drawn at random."""
    from django.utils import timezone

    from apps.grading.models import CallState, GradingMode, GradingRun, Judgment
    from apps.grading.services import scores_compute
    from apps.llm.models import ModelConfig, PromptTemplate, Purpose, RunStatus
    from apps.questions.models import LabelStatus, LengthBucket, Question, Topic
    from apps.rubrics.models import (
        Criterion,
        Kind,
        Origin,
        Polarity,
        Rubric,
        RubricState,
        SharedCriterionSet,
    )
    from apps.rubrics.scoring import ScoredCriterion, score
    from apps.runs.models import Response, ResponseStatus, SamplingRun

    rng = random.Random(seed)
    now = timezone.now()
    models = ModelConfig.objects.bulk_create(
        ModelConfig(
            display_name=f"Bench model {chr(65 + m)}",
            family=f"Family {chr(65 + m)}",
            litellm_model=f"openai/bench-model-{chr(97 + m)}",
            version="1",
        )
        for m in range(size.models)
    )
    grader = ModelConfig.objects.create(
        display_name="Bench grader", family="Offline", litellm_model="openai/offline-grader"
    )
    topics = list(Topic.objects.order_by("order", "pk")[: size.topics])
    assert len(topics) == size.topics, "the seeded topics"
    questions = Question.objects.bulk_create(
        Question(
            external_id=f"bench-answers-{t}-{q}",
            topic=topic,
            text=f"Question {q + 1} about {topic.name}: my account was locked, what can I do?",
            length_bucket=LengthBucket.SHORT,
            needs_guidance=True,
            label_status=LabelStatus.VERIFIED,
        )
        for t, topic in enumerate(topics)
        for q in range(size.questions_per_topic)
    )
    shared_set = SharedCriterionSet.objects.order_by("-version").first()
    shared = list(shared_set.criteria.order_by("order", "pk"))
    rubrics = Rubric.objects.bulk_create(
        Rubric(
            question=q,
            version=1,
            state=RubricState.APPROVED,
            updated_at=now,
            approved_at=now,
            verified_at=now,
            shared_set=shared_set,
        )
        for q in questions
    )
    criteria = Criterion.objects.bulk_create(
        [
            Criterion(
                rubric=r,
                text=f"Factual point {i + 1} of {r.question.external_id}",
                polarity=Polarity.POSITIVE,
                kind=Kind.FACTUAL,
                points=FACTUAL_POINTS,
                order=i,
            )
            for r in rubrics
            for i in range(FACTUAL_CRITERIA)
        ]
        + [
            Criterion(
                rubric=r,
                text=s.text,
                polarity=s.polarity,
                kind=Kind.PRESENTATION,
                points=s.points,
                order=FACTUAL_CRITERIA + i,
                origin=Origin.SHARED,
                shared_source=s,
            )
            for r in rubrics
            for i, s in enumerate(shared)
        ]
    )
    by_rubric: dict[int, list] = {}
    for c in criteria:
        by_rubric.setdefault(c.rubric_id, []).append(c)
    sampling = SamplingRun.objects.create(
        name="Answer-study benchmark: sampling",
        status=RunStatus.FINISHED,
        prompt=PromptTemplate.objects.filter(purpose=Purpose.SAMPLE).order_by("-version").first(),
        samples_per_item=size.samples,
    )
    sampling.model_configs.set(models)
    sampling.questions.set(questions)
    grading = GradingRun.objects.create(
        name="Answer-study benchmark: grading",
        sampling_run=sampling,
        grader=grader,
        mode=GradingMode.CHECKLIST,
        prompt=PromptTemplate.objects.filter(purpose=Purpose.GRADE_CHECKLIST)
        .order_by("-version")
        .first(),
        status=RunStatus.FINISHED,
        params={"temperature": 0},
    )
    # Alternate the bands over each (model, topic)'s answers: half below, half at or above.
    plan = []
    for m, model in enumerate(models):
        for qi, (question, rubric) in enumerate(zip(questions, rubrics, strict=True)):
            for sample in range(size.samples):
                good = (qi * size.samples + sample + m) % 2 == 0
                plan.append((model, question, rubric, sample, good))
    responses = Response.objects.bulk_create(
        (
            Response(
                run=sampling,
                model=model,
                question=question,
                sample_index=sample,
                status=ResponseStatus.DONE,
                text=answer_text(rng, model.display_name, question.pk, sample, good),
                completed_at=now,
            )
            for model, question, _rubric, sample, good in plan
        ),
        batch_size=2000,
    )
    judgments, bands_made = [], {True: 0, False: 0}
    for response, (_model, _question, rubric, _sample, good) in zip(responses, plan, strict=True):
        listed = by_rubric[rubric.pk]
        met_factual = rng.choice([9, 10]) if good else rng.randint(1, 4)
        verdicts = {
            c.pk: (i < met_factual) if c.kind == Kind.FACTUAL else rng.random() < 0.5
            for i, c in enumerate(listed)
        }
        breakdown = score(
            [ScoredCriterion(c.pk, c.polarity, c.kind, c.points) for c in listed], verdicts
        )
        assert (breakdown.score >= 0.65) == good, (breakdown.score, good)
        bands_made[good] += 1
        judgments += [
            Judgment(
                grading_run=grading,
                response=response,
                criterion=c,
                rubric=rubric,
                status=CallState.DONE,
                met=verdicts[c.pk],
                explanation=f"Judged {'met' if verdicts[c.pk] else 'not met'}.",
                completed_at=now,
            )
            for c in listed
        ]
    Judgment.objects.bulk_create(judgments, batch_size=5000)
    scored = scores_compute(grading_run_id=grading.pk, response_ids=[r.pk for r in responses])
    assert scored == len(responses), (scored, len(responses))
    return sampling, grading, {"responses": len(responses), "judgments": len(judgments)}


def build_study(size: Size, sampling, grading, *, name: str, **draw):
    from apps.answer_studies.services import answer_study_create

    settings = {
        "answers_per_stratum": size.answers_per_stratum,
        "pairs_per_model_pair": size.pairs_per_model_pair,
        **draw,
    }
    return answer_study_create(
        name=name,
        sampling_run=sampling,
        grading_run=grading,
        seed=30,
        ratings_per_unit=RATINGS_PER_UNIT,
        units_per_participant=5,
        **settings,
    )


# --- checks -------------------------------------------------------------------------------------


def proxy_checks(run, study) -> dict:
    """Every call done once (one ok ledger row each), an assignment per call and an answer per
    item its unit's kind is asked, none repeated."""
    from django.db.models import Count

    from apps.llm.models import CallStatus, LLMCall
    from apps.surveys.models import Answer, Assignment, AssignmentStatus
    from apps.surveys.services.proxies import proxy_items

    calls = run.calls.count()
    per_kind = dict(
        run.calls.order_by()
        .values_list("study_scenario__kind")
        .annotate(n=Count("pk"))
        .values_list("study_scenario__kind", "n")
    )
    expected_answers = sum(
        n * len(proxy_items(study=study, unit_kind=kind)) for kind, n in per_kind.items()
    )
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
    checks = {
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
        "expected": (calls, expected_answers),
    }
    checks["ok"] = (
        checks["calls"] == {"done": calls}
        and checks["ledger_ok"] == calls
        and checks["answered_twice"] == 0
        and (checks["assignments"], checks["answers"]) == checks["expected"]
        and checks["assignments_dup"] == 0
        and checks["answers_dup"] == 0
    )
    return checks


def checks_text(checks: dict) -> str:
    return (
        f"calls {checks['calls']}, ledger ok {checks['ledger_ok']:,} (answered twice "
        f"{checks['answered_twice']}), assignments {checks['assignments']:,} "
        f"({checks['assignments_dup']} repeated), answers {checks['answers']:,} of "
        f"{checks['expected'][1]:,} ({checks['answers_dup']} repeated)"
    )


def people_checks(study) -> dict:
    """Every unit rated exactly k times by simulated people."""
    from django.db.models import Count, Q

    from apps.surveys.models import AssignmentStatus

    counts = list(
        study.study_scenarios.annotate(
            n=Count(
                "assignments",
                filter=Q(
                    assignments__status=AssignmentStatus.COMPLETED,
                    assignments__participant__simulated=True,
                ),
            )
        ).values_list("n", flat=True)
    )
    return {"units": len(counts), "exactly_k": sum(1 for n in counts if n == RATINGS_PER_UNIT)}


# --- the report ---------------------------------------------------------------------------------


def time_report(study, repeats: int) -> dict:
    from apps.analysis.answer_study import answer_study_report
    from apps.analysis.answer_study_data import answer_study_data

    tables, loads, cpu, figures = [], [], [], {}
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        data = answer_study_data(study=study)
        t1 = time.perf_counter()
        report = answer_study_report(data)
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
        "ratings": len(data.survey.answers) + len(data.pairs),
        "people": report.people,
        "proxies": report.proxies,
        "answers": report.answers,
        "pairs": report.pairs,
        "tables": len(report.tables),
        "figure_count": len(report.figures),
    }


def time_intervals(study) -> dict:
    from apps.analysis.answer_study import answer_study_intervals
    from apps.analysis.answer_study_data import answer_study_data
    from apps.analysis.models import RESAMPLES

    data = answer_study_data(study=study)
    t0 = time.perf_counter()
    intervals = answer_study_intervals(data, resamples=RESAMPLES)
    seconds = time.perf_counter() - t0
    defined = sum(1 for v in intervals.values() if v[0] is not None and v[0] == v[0])
    kinds: dict[str, int] = {}
    for key in intervals:
        kinds[key.split(":", 1)[0]] = kinds.get(key.split(":", 1)[0], 0) + 1
    return {
        "seconds": seconds,
        "statistics": len(intervals),
        "defined": defined,
        "kinds": kinds,
        "resamples": RESAMPLES,
    }


def inner(opts) -> int:
    import django

    django.setup()
    import redis

    from apps.llm.engine import BATCH_SIZE, IN_FLIGHT_MAX
    from apps.llm.models import ModelConfig
    from apps.surveys.services.proxies import proxy_sweep_create

    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    size = QUICK if opts.quick else FULL
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
        sampling, grading, built = build_benchmark(size)
        t1 = time.monotonic()
        study = build_study(size, sampling, grading, name="Answer study benchmark")
        t2 = time.monotonic()
        from apps.demo.simulated_answer_people import (
            ANSWER_PEOPLE,
            simulated_answer_people_add,
        )

        people = simulated_answer_people_add(study=study)
        t3 = time.monotonic()
        rated = people_checks(study)
        units = study.study_scenarios.count()
        assert units == size.answers + size.pairs, (units, size)
        build_s = {"benchmark": t1 - t0, "draw": t2 - t1, "people": t3 - t2}
        note(f"built {built}, {units} units, {people} people; {build_s}; {rated}")
        models = build_models(provider.base, PROXY_MODELS)

        # Warm-up on a study of its own (1 answer per stratum, no pairs): the pool processes'
        # first calls import and build litellm's clients, as the bare loop's first two do.
        warm = build_study(size, sampling, grading, name="Warm-up", answers_per_stratum=1)
        warm.study_scenarios.exclude(
            pk__in=warm.study_scenarios.order_by("pk").values("pk")[:4]
        ).delete()
        proxy_run(study=warm, models=models, runs=1, seed=1)

        provider.reset()
        run, seen, looks = proxy_run(study=study, models=models, runs=PROXY_RUNS, seed=2024)
        pstats_run = provider.stats()
        wall = (run.finished_at - run.launched_at).total_seconds()
        total = run.calls.count()
        checks = proxy_checks(run, study)
        note(f"proxy run: {total} calls in {wall:.1f} s ({seen:.1f} s seen); {checks}")

        concurrency = min(len(models) * LIMIT, PROCESSES * min(BATCH_SIZE, IN_FLIGHT_MAX))
        requests = proxy_requests(run, provider.base)
        provider.reset()
        bare = bare_run(requests, concurrency, PROCESSES)
        bare_stats = provider.stats()
        note(f"bare loop: {bare}")

        swept = ModelConfig.objects.get(display_name=SWEEP_MODEL)
        sweep = proxy_sweep_create(
            study=study,
            model=swept,
            temperatures=SWEEP_TEMPERATURES,
            personas=False,
            runs_per_variant=size.sweep_runs,
            seed=2025,
        )
        provider.reset()
        sweep, _seen, _ = proxy_run_launched(sweep)
        sweep_stats = provider.stats()
        sweep_wall = (sweep.finished_at - sweep.launched_at).total_seconds()
        sweep_total = sweep.calls.count()
        sweep_checks = proxy_checks(sweep, study)
        variants = sorted(set(sweep.participants.values_list("variant", flat=True)))
        note(f"sweep: {sweep_total} calls in {sweep_wall:.1f} s; {sweep_checks}")
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
    people_ok = rated["exactly_k"] == rated["units"] == units
    profiles = {}
    if not met_report:
        from apps.analysis.answer_study import answer_study_report
        from apps.analysis.answer_study_data import answer_study_data

        profiles["answer_study_data + answer_study_report"] = profile(
            lambda: answer_study_report(answer_study_data(study=study)), top=30
        )
    if not met_intervals:
        from apps.analysis.answer_study import answer_study_intervals
        from apps.analysis.answer_study_data import answer_study_data

        data = answer_study_data(study=study)
        profiles["answer_study_intervals"] = profile(lambda: answer_study_intervals(data), top=30)

    load1 = os.getloadavg()
    heading = "Quick" if opts.quick else "Full size"
    cmd = " ".join(["benchmarks/answer_study.py", *sys.argv[2:]]).strip()
    say(f"### {heading} — {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    say()
    say(
        f"`.venv/bin/python {cmd}`: a graded benchmark bulk-created as the apps store it "
        f"({size.models} models x {size.topics} topics x {size.questions_per_topic} questions x "
        f"{size.samples} answers = {built['responses']:,} answers, {built['judgments']:,} "
        f"judgments: {FACTUAL_CRITERIA} factual criteria of {FACTUAL_POINTS} points and the "
        "shared presentation criteria per rubric, scores by `scores_compute`, half of each "
        "(model, topic) below 0.65); an answer study drawn from it by `answer_study_create` "
        f"({size.answers_per_stratum} answers per stratum = {size.answers} answers, "
        f"{size.pairs_per_model_pair} pairs per two models = {size.pairs} pairs, k = "
        f"{RATINGS_PER_UNIT}), rated by {people} simulated people "
        f"(`simulated_answer_people_add`, {ANSWER_PEOPLE['units_per_person']} units a person; "
        f"{rated['exactly_k']} of {rated['units']} units with exactly {RATINGS_PER_UNIT} "
        f"ratings). Built in {build_s['benchmark']:.1f} s (benchmark), {build_s['draw']:.1f} s "
        f"(draw), {build_s['people']:.1f} s (people). Proxies: {len(models)} offline models "
        f"({', '.join(PROXY_MODELS)}) x {PROXY_RUNS} runs = {total:,} calls; a sweep of "
        f"{SWEEP_MODEL} at {len(SWEEP_TEMPERATURES)} temperatures "
        f"({', '.join(str(t) for t in SWEEP_TEMPERATURES)}) x {size.sweep_runs} run(s), no "
        f"personas = {sweep_total:,} calls (variants: {', '.join(variants)}). Offline provider "
        f"at {LATENCY_MS} ms (nice {PROVIDER_NICE}); one Celery worker, prefork, {PROCESSES} "
        f"processes, `-Q llm` (nice {CLIENT_NICE}, as the bare loop), DEBUG off; models at "
        f"max_concurrent {LIMIT}. Machine: {os.cpu_count()} cores; load average "
        f"{load0[0]:.2f} at start, {load1[0]:.2f} at the end (other sessions' work was running, "
        f"if any). Whole run {(time.monotonic() - began) / 60:.1f} min."
    )
    say()
    say("| target | met | measured |")
    say("|---|---|---|")
    rows = [
        (
            f"report tables (`answer_study_data` + `answer_study_report`) ≤ "
            f"{TARGET_REPORT_S:.0f} s",
            met_report,
            f"{timing['median']:.2f} s, median of {REPEATS} (reading the rows "
            f"{timing['load']:.2f} s; CPU of this process {timing['cpu']:.2f} s); "
            f"{timing['median'] / TARGET_REPORT_S:.2f} of the target",
        ),
        (
            f"bootstrap intervals (`answer_study_intervals`) ≤ {TARGET_INTERVALS_S:.0f} s",
            met_intervals,
            f"{intervals['seconds']:.1f} s for {intervals['statistics']} intervals "
            f"({', '.join(f'{k} {n}' for k, n in sorted(intervals['kinds'].items()))}; "
            f"{intervals['defined']} defined) x {intervals['resamples']:,} resamples; "
            f"{intervals['seconds'] / TARGET_INTERVALS_S:.2f} of the target",
        ),
        (
            f"proxy run / bare litellm loop ≥ {TARGET_RATIO}",
            met_ratio,
            f"{ratio:.2f} ({rate:.1f} against {bare['rate']:.1f} calls/s)",
        ),
        (
            f"proxy run: {total:,} calls done once, an assignment each, every answer, "
            "none duplicated",
            checks["ok"],
            checks_text(checks),
        ),
        (
            f"sweep: {sweep_total:,} calls done once, an assignment each, every answer, "
            "none duplicated",
            sweep_checks["ok"],
            checks_text(sweep_checks),
        ),
        (
            f"every unit exactly {RATINGS_PER_UNIT} simulated people's ratings",
            people_ok,
            f"{rated['exactly_k']} of {rated['units']} units",
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
        f"| {bare_stats['max_in_flight']} |\n"
        f"| sweep of {SWEEP_MODEL}, {sweep_total:,} calls, launch to finished (one model: at "
        f"most {LIMIT} in flight) | {sweep_total / sweep_wall:.1f} | {sweep_wall:.1f} s "
        f"| {sweep_stats['max_in_flight']} |"
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
        f"The report read {timing['ratings']:,} ratings (answer rows and pair judgments; "
        f"{timing['people']} people, {timing['proxies']} proxy groups: models and sweep variants, "
        f"{timing['answers']} answers, {timing['pairs']} pairs) into {timing['tables']} tables "
        f"and {timing['figure_count']} figures; each run in s: "
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
    (out / "answer_study.md").write_text("\n".join(lines) + "\n")
    if not opts.quick and not opts.no_results:
        results_write("\n".join(lines))
    ok = met_report and met_intervals and met_ratio and checks["ok"] and sweep_checks["ok"]
    return 0 if ok and people_ok else 1


def proxy_run_launched(run):
    """Launch a run already created (a sweep) and wait for it as `proxy_run` does."""
    from apps.llm.models import RunStatus
    from apps.surveys.services.proxies import proxy_run_launch
    from workers.leases import requeue_expired

    started = time.monotonic()
    run = proxy_run_launch(run=run)
    last_sweep = last_print = started
    while True:
        run.refresh_from_db(fields=["status", "finished_at", "launched_at"])
        now = time.monotonic()
        if run.status != RunStatus.RUNNING:
            return run, now - started, []
        if now - last_sweep >= 5:
            requeue_expired()
            last_sweep = now
        if now - last_print >= 15:
            done = run.calls.filter(status="done").count()
            print(f"  … {now - started:.0f} s: {done} calls done", file=sys.stderr, flush=True)
            last_print = now
        if now - started > 1800:
            raise SystemExit("the sweep did not finish in 30 minutes")
        time.sleep(0.2)


SECTION = "## Answer study"
SECTION_INTRO = (
    "`DATABASE_URL=postgres://postgres@127.0.0.1:5432/assay REDIS_URL=redis://127.0.0.1:6379/0 "
    ".venv/bin/python benchmarks/answer_study.py` (450 answers + 200 pairs x 5 simulated "
    "people, 3 proxies x 5 runs, a 6-temperature sweep of one; `--quick` is 36 answers + 12 "
    "pairs). Database assay_bench_answers and Redis db 12 of its own. Targets: the report's "
    "tables in 2 s, its bootstrap intervals in 30 s, a proxy run at 0.8 or more of a bare "
    "litellm loop at the same concurrency."
)


def results_write(text: str) -> None:
    """The run, newest first, under SECTION in RESULTS.md (made at the end if missing)."""
    path = ROOT / "benchmarks" / "RESULTS.md"
    current = path.read_text()
    if SECTION not in current:
        current = current.rstrip("\n") + f"\n\n{SECTION}\n\n{SECTION_INTRO}\n"
    head, tail = current.split(SECTION, 1)
    intro_end = tail.find("\n### ")
    next_section = tail.find("\n## ")
    if intro_end < 0 or (0 <= next_section < intro_end):
        intro_end = next_section if next_section >= 0 else len(tail.rstrip("\n"))
    tail = tail[:intro_end].rstrip("\n") + "\n\n" + text + "\n" + tail[intro_end:]
    path.write_text(head + SECTION + tail.rstrip("\n") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="36 answers + 12 pairs")
    parser.add_argument("--keep-db", action="store_true", help="leave the database for a look")
    parser.add_argument("--no-results", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    return inner(opts) if opts.inner else outer(opts)


def outer(opts) -> int:
    """A database and Redis db of our own (benchmarks/own_stack.py), the measurements in a
    child process whose Django settings see them from the start."""
    return own_stack.measured(__file__, db_name=DB_NAME, redis_db=REDIS_DB, keep_db=opts.keep_db)


if __name__ == "__main__":
    sys.exit(main())
