"""The engine's view of grading runs (apps/llm/engine.py): how to build a grader call and
how to record its verdicts.

Both modes ask for the explanation before the verdict, at the grading run's parameters
(temperature 0 by default), with a seed derived from the run's seed and the row. An answer
that does not parse, or that leaves out or repeats a criterion, is asked again by the
gateway (its bounded re-asks) and then stored as an explicit error with the grader's last
output: never as "not met". An answer with an errored judgment has no score.
"""

import json
from decimal import Decimal

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.db.models.functions import Length
from django.utils import timezone

from apps.llm import costs, engine, leases, runs
from apps.llm.errors import PromptError
from apps.llm.models import RunStatus
from apps.llm.selectors import prompt_render

from ..errors import GradingError
from ..models import CallState, ChecklistCall, GradingMode, GradingRun, Judgment
from .rows import (
    PURPOSE,
    answers_due,
    criteria_of,
    criteria_specs,
    grading_rows_make,
    scores_compute,
    scores_record,
)

MAX_RAW_CHARS = 20_000
STATES = leases.LeaseStates(
    waiting=CallState.PENDING, running=CallState.RUNNING, failed=CallState.ERROR
)
WAIT_FOR_ANSWERS_SECONDS = 5.0

CRITERION_SCHEMA = {
    "type": "object",
    "required": ["explanation", "met"],
    "properties": {"explanation": {"type": "string"}, "met": {"type": "boolean"}},
}
CHECKLIST_SCHEMA = {
    "type": "object",
    "required": ["verdicts"],
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "explanation", "met"],
                "properties": {
                    "id": {"type": "integer"},
                    "explanation": {"type": "string"},
                    "met": {"type": "boolean"},
                },
            },
        }
    },
}


def checklist_check(count: int):
    """The check that a checklist answer has one verdict for each of criteria 1..count."""

    def check(data: dict) -> str | None:
        ids = [verdict["id"] for verdict in data["verdicts"]]
        expected = set(range(1, count + 1))
        missing = sorted(expected - set(ids))
        extra = sorted(set(ids) - expected)
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if not (missing or extra or repeated):
            return None
        parts = []
        if missing:
            parts.append(f"no verdict for criteria {', '.join(map(str, missing))}")
        if extra:
            parts.append(f"verdicts for criteria that do not exist ({', '.join(map(str, extra))})")
        if repeated:
            parts.append(f"more than one verdict for criteria {', '.join(map(str, repeated))}")
        return f"the verdicts must cover criteria 1 to {count} once each: {'; '.join(parts)}"

    return check


class _GradingWork(runs.RunWork):
    noun = "grading run"
    error = GradingError
    states = STATES
    mode: str
    estimate_fields = ("pk", "grading_run_id")

    def rows(self, scope):
        return self.model.objects.filter(grading_run_id=scope)

    def estimate(self, rows):
        # The rows of one claim are one scope's: one grading run.
        run = GradingRun.objects.select_related("grader", "prompt").get(
            pk=rows[0]["grading_run_id"]
        )
        lengths = dict(
            self.model.objects.filter(pk__in=[r["pk"] for r in rows])
            .annotate(n=Length("response__text") + Length("response__question__text"))
            .values_list("pk", "n")
        )
        per_criterion = 300 if self.mode == GradingMode.CHECKLIST else 0
        prompt_chars = len(run.prompt.system_text) + len(run.prompt.user_text)
        prices = costs.price_per_mtok(run.grader)
        out = costs.typical_output_tokens(run.grader, run.prompt.purpose, ceiling=True)
        return [
            costs.call_cost(
                prices,
                tokens_in=costs.tokens_in(lengths[r["pk"]] + prompt_chars + per_criterion),
                tokens_out=out,
            )
            or Decimal(0)
            for r in rows
        ]

    def runs(self):
        return GradingRun.objects.filter(mode=self.mode)

    def prepare(self, scope):
        run = GradingRun.objects.filter(pk=scope, status=RunStatus.RUNNING).first()
        if run is not None:
            pending = self.rows(scope).filter(status=CallState.PENDING).count()
            if pending < 2 * self.batch_size:
                grading_rows_make(run=run)

    def settle(self, scope):
        working = self.still_working(scope)
        if working is not False:
            return working
        run = GradingRun.objects.select_related("sampling_run").get(pk=scope)
        if run.status != RunStatus.RUNNING:
            return None
        if answers_due(run).exists():
            return 0
        if run.sampling_run.status in (
            RunStatus.RUNNING,
            RunStatus.PAUSED,
            RunStatus.DRAFT,
            RunStatus.BUDGET_REACHED,
        ):
            return WAIT_FOR_ANSWERS_SECONDS  # more answers may come
        self.finish(scope)
        return None

    # An errored call asked again loses its last output (and a checklist's error judgments
    # go with it, `before_requeue`).
    requeue_reset = {"raw_output": ""}

    def refuse(self, failures, *, owner):
        super().refuse(failures, owner=owner)
        self._after_errors([pk for pk, _reason in failures])

    def _after_errors(self, ids):
        """Hook: what else an errored call means (checklist: its judgments are errors)."""

    def _held(self, results, owner, *fields):
        """The results' rows that `owner` still holds, locked: their pks, or with `fields`,
        (pk, *fields) tuples."""
        if not fields:
            return self.held_ids(results, owner=owner)
        held = engine.held(
            self.model.objects.filter(pk__in=[r.call.row_id for r in results]),
            states=self.states,
            owner=owner,
        ).select_for_update()
        return list(held.values_list("pk", *fields))

    def outcome(self, row, result, *, now):
        super().outcome(row, result, now=now)
        if result.completion is not None:
            c = result.completion
            row.raw_output = c.text[:MAX_RAW_CHARS]
            row.input_tokens, row.output_tokens = c.input_tokens, c.output_tokens
            row.cost_usd, row.latency_ms = c.cost_usd, c.latency_ms
            row.error, row.error_kind, row.status = "", "", CallState.DONE
        else:
            row.raw_output = (result.error.last_output or "")[:MAX_RAW_CHARS]
            row.input_tokens = row.output_tokens = row.latency_ms = 0


CALL_FIELDS = [
    "status",
    "raw_output",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_ms",
    "error",
    "error_kind",
    "lease_owner",
    "lease_expires_at",
    "reserved_usd",
    "completed_at",
]


class CriterionWork(_GradingWork):
    """Per-criterion mode: each judgment is one call (as HealthBench grades)."""

    name = "grading.criterion"
    model = Judgment
    mode = GradingMode.PER_CRITERION

    def calls(self, ids):
        calls, refused = [], []
        judgments = Judgment.objects.filter(pk__in=ids).select_related(
            "response__question", "criterion", "grading_run__grader", "grading_run__prompt"
        )
        for judgment in judgments:
            run, criterion = judgment.grading_run, judgment.criterion
            try:
                messages = prompt_render(
                    template=run.prompt,
                    variables={
                        "question": judgment.response.question.text,
                        "response": judgment.response.text,
                        "criterion": criterion.text,
                        "polarity": criterion.polarity,
                        "kind": criterion.kind,
                    },
                )
            except PromptError as exc:
                refused.append((judgment.pk, str(exc)))
                continue
            seed = engine.call_seed(run.seed, judgment.response_id, judgment.criterion_id)
            calls.append(
                engine.Call(
                    row_id=judgment.pk,
                    model=run.grader,
                    messages=messages,
                    purpose=PURPOSE[self.mode],
                    params={**run.params, "seed": seed},
                    schema=CRITERION_SCHEMA,
                    prompt=run.prompt,
                )
            )
        return calls, refused

    def record(self, results, *, owner):
        with transaction.atomic():
            rows, scope, responses = [], None, set()
            for result, row in self.recorded(results, mine=self._held(results, owner)):
                if result.completion is not None:
                    row.met = result.completion.data["met"]
                    row.explanation = result.completion.data["explanation"]
                else:
                    row.met, row.explanation = None, ""
                rows.append(row)
            engine.rows_write(rows, [*CALL_FIELDS, "met", "explanation"])
            for grading_run_id, response_id in Judgment.objects.filter(
                pk__in=[r.pk for r in rows]
            ).values_list("grading_run_id", "response_id"):
                scope = grading_run_id
                responses.add(response_id)
            if scope is not None:
                scores_compute(grading_run_id=scope, response_ids=responses)


class ChecklistWork(_GradingWork):
    """Checklist mode: one call per answer, every criterion in it, an explanation then a
    verdict for each (as the published rater and WildBench grade)."""

    name = "grading.checklist"
    model = ChecklistCall
    mode = GradingMode.CHECKLIST

    def calls(self, ids):
        calls, refused = [], []
        checklists = list(
            ChecklistCall.objects.filter(pk__in=ids).select_related(
                "response__question", "grading_run__grader", "grading_run__prompt"
            )
        )
        criteria = criteria_of(c.rubric_id for c in checklists)
        for checklist in checklists:
            run, listed = checklist.grading_run, criteria[checklist.rubric_id]
            items = [
                {"id": number, "text": c.text, "polarity": c.polarity, "kind": c.kind}
                for number, c in enumerate(listed, 1)
            ]
            try:
                messages = prompt_render(
                    template=run.prompt,
                    variables={
                        "question": checklist.response.question.text,
                        "response": checklist.response.text,
                        "criteria": json.dumps(items, ensure_ascii=False),
                    },
                )
            except PromptError as exc:
                refused.append((checklist.pk, str(exc)))
                continue
            calls.append(
                engine.Call(
                    row_id=checklist.pk,
                    model=run.grader,
                    messages=messages,
                    purpose=PURPOSE[self.mode],
                    params={
                        **run.params,
                        "seed": engine.call_seed(run.seed, checklist.response_id),
                    },
                    schema=CHECKLIST_SCHEMA,
                    check=checklist_check(len(listed)),
                    prompt=run.prompt,
                )
            )
        return calls, refused

    def record(self, results, *, owner):
        now = timezone.now()
        with transaction.atomic():
            held = {
                pk: ChecklistCall(
                    pk=pk, grading_run_id=run_id, response_id=response_id, rubric_id=rubric_id
                )
                for pk, run_id, response_id, rubric_id in self._held(
                    results, owner, "grading_run_id", "response_id", "rubric_id"
                )
            }
            listed = criteria_specs({c.rubric_id for c in held.values()})
            rows, judgments, scored = [], [], []
            for result in results:
                checklist = held.get(result.call.row_id)
                if checklist is None:
                    continue
                self.outcome(checklist, result, now=now)
                rows.append(checklist)
                verdicts = {}
                if result.completion is not None:
                    verdicts = {v["id"]: v for v in result.completion.data["verdicts"]}
                for number, (criterion_id, polarity, kind, points) in enumerate(
                    listed[checklist.rubric_id], 1
                ):
                    row = _judgment_row(checklist, criterion_id, verdicts.get(number))
                    judgments.append(row)
                    scored.append(
                        (
                            row["response_id"],
                            row["rubric_id"],
                            criterion_id,
                            row["status"],
                            row["met"],
                            polarity,
                            kind,
                            points,
                        )
                    )
            engine.rows_write(rows, CALL_FIELDS)
            engine.rows_insert(Judgment, judgments, constants={"completed_at": now})
            if rows:
                # All of an answer's judgments come from its one checklist call, written
                # just now: scored from them as they are, not read back.
                scores_record(
                    grading_run_id=rows[0].grading_run_id,
                    rows=scored,
                    expected={c.rubric_id: len(listed[c.rubric_id]) for c in rows},
                )

    def settle(self, scope):
        # Calls failed by the sweep (their worker died every time) have no judgments yet.
        orphans = ChecklistCall.objects.filter(grading_run_id=scope, status=CallState.ERROR)
        orphans = orphans.exclude(Exists(Judgment.objects.filter(checklist=OuterRef("pk"))))
        self._after_errors(list(orphans.values_list("pk", flat=True)))
        return super().settle(scope)

    def before_requeue(self, ids):
        Judgment.objects.filter(checklist_id__in=ids).delete()

    def _after_errors(self, ids):
        if not ids:
            return
        checklists = ChecklistCall.objects.filter(pk__in=ids)
        listed = criteria_specs({c.rubric_id for c in checklists})
        engine.rows_insert(
            Judgment,
            [
                _judgment_row(c, criterion_id, None)
                for c in checklists
                for criterion_id, *_spec in listed[c.rubric_id]
            ],
            constants={"completed_at": timezone.now()},
        )


def _judgment_row(checklist: ChecklistCall, criterion_id: int, verdict: dict | None) -> dict:
    """The judgment of one criterion from a checklist call's verdict for it, or, with none
    (the call failed), an explicit error: a row for `engine.rows_insert`."""
    return {
        "grading_run_id": checklist.grading_run_id,
        "response_id": checklist.response_id,
        "criterion_id": criterion_id,
        "rubric_id": checklist.rubric_id,
        "checklist_id": checklist.pk,
        "status": CallState.DONE if verdict else CallState.ERROR,
        "met": verdict["met"] if verdict else None,
        "explanation": verdict["explanation"] if verdict else "",
        "error": "" if verdict else "The checklist call failed: " + checklist.error,
        "error_kind": "" if verdict else checklist.error_kind,
    }


CRITERION_WORK = engine.register(CriterionWork())
CHECKLIST_WORK = engine.register(ChecklistWork())


def work_for_run(run: GradingRun) -> _GradingWork:
    return CHECKLIST_WORK if run.mode == GradingMode.CHECKLIST else CRITERION_WORK
