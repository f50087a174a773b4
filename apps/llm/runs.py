"""The run: the one lifecycle every body of bulk work goes through.

A run is a row (`models.Run`: status, pinned prompt, seed, budget, who, when) whose rows of
work the engine calls (apps/llm/engine.py): a sampling run's answers, a grading run's
verdicts, a proxy run's surveys, a rewrite job's posts. Its status moves only by the
actions below, each allowed from the statuses `MOVES` gives, in a transaction that locks
the run; the engine takes calls only while it is running. Launching, resuming and retrying
start the run's work themselves, once their transaction commits (`engine.scope_start`), so
no caller can leave a launched run idle.

A domain describes its kind of run as a `RunWork` (its rows, its calls, how to record them,
what it calls itself and the error it raises); the services here take that work and a run
and do the rest, the same for every kind. A job of one row (criteria suggestions, an
on-demand reference answer) is a `RowWork`: a run of one row that is its own scope.
"""

from decimal import Decimal

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from . import engine, leases
from .models import CallStatus, Run, RunStatus

# Every action on a run: the statuses it may start from, and the status it ends in.
MOVES: dict[str, tuple[frozenset[str], str]] = {
    "launch": (frozenset({RunStatus.DRAFT}), RunStatus.RUNNING),
    "pause": (frozenset({RunStatus.RUNNING}), RunStatus.PAUSED),
    "resume": (frozenset({RunStatus.PAUSED, RunStatus.BUDGET_REACHED}), RunStatus.RUNNING),
    "cancel": (
        frozenset({RunStatus.DRAFT, RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.BUDGET_REACHED}),
        RunStatus.CANCELLED,
    ),
    "budget_reached": (frozenset({RunStatus.RUNNING}), RunStatus.BUDGET_REACHED),
    "finish": (frozenset({RunStatus.RUNNING}), RunStatus.FINISHED),
    # Failed rows retried after the run finished: it runs again.
    "rerun": (frozenset({RunStatus.FINISHED}), RunStatus.RUNNING),
}
MAX_ERROR_CHARS = 2000
# A run in these states has its pending provider batches cancelled (apps/llm/batches.py).
BATCHES_STOP = (RunStatus.PAUSED, RunStatus.CANCELLED)


class RunWork(engine.Work):
    """The engine's view of a kind of run: a Work whose scope is a `Run` row, taking calls
    only while it is running, within its budget if it has one, and whose rows carry
    `error`, `error_kind`, `cost_usd`, `reserved_usd` and `completed_at`."""

    noun: str = "run"  # what the pages and errors call one
    error: type[Exception] = RuntimeError  # the domain's error, which its pages show
    max_error_chars: int = MAX_ERROR_CHARS

    def runs(self) -> QuerySet:
        """The runs of this kind."""
        raise NotImplementedError

    def scope_lock(self, scope):
        run = self.runs().select_for_update().filter(pk=scope).only("status", "budget_usd").first()
        if run is None or run.status != RunStatus.RUNNING:
            return False
        if run.budget_usd is None:
            return True
        return engine.Budget(
            limit=run.budget_usd, committed=engine.committed(self.rows(scope), states=self.states)
        )

    def batch_choice(self, scope):
        run = self.runs().filter(pk=scope).values("batch_mode", "batch_retry").first()
        return run["batch_retry"] if run and run["batch_mode"] else None

    def batches_stop(self, scope):
        # A run out of budget keeps its batches: their rows were reserved within it.
        return self.runs().filter(pk=scope, status__in=BATCHES_STOP).exists()

    def budget_reached(self, scope):
        sources, target = MOVES["budget_reached"]
        self.runs().filter(pk=scope, status__in=sources).update(status=target)

    def active_scopes(self):
        return self.runs().filter(status=RunStatus.RUNNING).values_list("pk", flat=True)

    def refuse(self, failures, *, owner):
        now = timezone.now()
        for pk, reason in failures:
            leases.lease_end(
                self.model.objects.filter(pk=pk),
                states=self.states,
                owner=owner,
                status=self.states.failed,
                error=reason[: self.max_error_chars],
                error_kind=CallStatus.BAD_REQUEST,
                reserved_usd=None,
                completed_at=now,
            )

    def recorded(self, results: list[engine.Result], *, mine):
        """For `record`, inside its transaction: each result whose row is among `mine` (the
        rows this worker still holds, `held_ids`), with a fresh row of the model to record it
        in (`outcome`), for `engine.rows_write`; fields not set keep their defaults (no text,
        no tokens). A result not held is skipped: its row was presumed dead and taken over,
        and the successor records it."""
        now = timezone.now()
        for result in results:
            if result.call.row_id in mine:
                row = self.model(pk=result.call.row_id)
                self.outcome(row, result, now=now)
                yield result, row

    def outcome(self, row, result: engine.Result, *, now) -> None:
        """What every recorded row says: its lease released, its reservation gone, completed
        `now`; when the call failed, failed with the error, its kind and what it cost."""
        row.lease_owner, row.lease_expires_at, row.reserved_usd = "", None, None
        row.completed_at = now
        if result.completion is None:
            error = result.error
            row.status, row.error = self.states.failed, str(error)[: self.max_error_chars]
            row.error_kind, row.cost_usd = error.status, error.cost_usd

    def gave_up(self):
        return {
            **super().gave_up(),
            "error_kind": "",
            "reserved_usd": None,
            "completed_at": timezone.now(),
        }

    # What else a failed row loses when it is asked again ({"raw_output": ""}).
    requeue_reset: dict = {}

    def failed_requeue(self, scope: int, *, error_kind: str = "") -> int:
        """The scope's failed rows (all, or those that failed with `error_kind`) back to
        waiting with a fresh budget of attempts; how many. ValueError for an unknown kind."""
        failed = engine.failed_rows(self.rows(scope), states=self.states, error_kind=error_kind)
        ids = list(failed.values_list("pk", flat=True))
        self.before_requeue(ids)
        rows = self.model.objects.filter(pk__in=ids)
        return engine.rows_requeue(rows, states=self.states, **self.requeue_reset)

    def before_requeue(self, ids: list[int]) -> None:
        """Hook, in the retry's transaction: what else goes when these failed rows are asked
        again."""

    def still_working(self, scope: int) -> float | bool | None:
        """For `settle`: 0 (look again now) while rows wait to be claimed, None while rows are
        held (their holders settle the run when they finish), False when every row is over
        and the run can be settled."""
        rows = self.rows(scope)
        if rows.filter(engine.claimable(self.states, timezone.now())).exists():
            return 0
        if rows.filter(status=self.states.running).exists():
            return None
        return False

    def finished(self, scope: int) -> None:
        """Hook, in `finish`'s transaction: what else a finished run means."""

    def finish(self, scope: int) -> bool:
        """Running -> finished, once no row waits or runs; whether it moved."""
        sources, target = MOVES["finish"]
        unfinished = Q(status__in=[self.states.waiting, self.states.running])
        with transaction.atomic():
            run = self.runs().select_for_update().filter(pk=scope, status__in=sources).first()
            if run is None or self.rows(scope).filter(unfinished).exists():
                return False
            self.finished(scope)
            run.status, run.finished_at = target, timezone.now()
            run.save(update_fields=["status", "finished_at"])
        return True

    def settle(self, scope):
        working = self.still_working(scope)
        if working is not False:
            return working
        self.finish(scope)
        return None


class RowWork(engine.Work):
    """A job of one row, which is its own scope: an expert waits for it, so it is called as
    soon as it is asked for, on its own (`chains` 1). Its `jobs()` are every row of the
    kind; the sweep puts back those whose lease ran out (a dead worker's, or one no worker
    took in time: a waiting row's `lease_expires_at` is that deadline) and starts them
    again, and fails one out of attempts with `gave_up()`."""

    chains = 1

    def jobs(self) -> QuerySet:
        raise NotImplementedError

    def rows(self, scope):
        return self.jobs().filter(pk=scope)

    def expired(self):
        return leases.leases_expire(self.jobs(), states=self.states, gave_up=self.gave_up())

    def active_scopes(self):
        # Its sweep is `expired`, over every job: it has no runs to list (a kind that is
        # also a RunWork, to share its calls, would otherwise list those runs).
        return ()


def _locked(work: RunWork, run_id: int) -> Run:
    run = work.runs().select_for_update().filter(pk=run_id).first()
    if run is None:
        raise work.error(f"There is no such {work.noun}.")
    return run


def _move(work: RunWork, run: Run, action: str) -> Run:
    """Move a locked run by `action`, or raise the work's error saying why it cannot."""
    sources, target = MOVES[action]
    if run.status not in sources:
        status = run.get_status_display().lower()
        if action == "launch":
            raise work.error(f"The {work.noun} is {status}, not a draft.")
        raise work.error(
            f"The {work.noun} is {status}: it cannot be {RunStatus(target).label.lower()} now."
        )
    now = timezone.now()
    run.status = target
    fields = ["status"]
    if target == RunStatus.RUNNING and run.launched_at is None:
        run.launched_at = now
        fields.append("launched_at")
    if target in (RunStatus.CANCELLED, RunStatus.FINISHED) or action == "rerun":
        run.finished_at = None if action == "rerun" else now
        fields.append("finished_at")
    run.save(update_fields=fields)
    return run


def run_launch(work: RunWork, *, run: Run) -> Run:
    """Draft -> running; its work starts when the caller's transaction commits."""
    with transaction.atomic():
        run = _move(work, _locked(work, run.pk), "launch")
        engine.scope_start(work, run.pk)
    return run


def run_pause(work: RunWork, *, run: Run) -> Run:
    """No new calls; the calls in flight finish and are kept."""
    with transaction.atomic():
        return _move(work, _locked(work, run.pk), "pause")


def run_resume(work: RunWork, *, run: Run) -> Run:
    """Go on from where it stopped: only rows not done are called. After the budget was
    reached, the budget must first be raised above what the next call needs."""
    with transaction.atomic():
        run = _locked(work, run.pk)
        run_budget_check(work, run=run)
        run = _move(work, run, "resume")
        engine.scope_start(work, run.pk)
    return run


def run_cancel(work: RunWork, *, run: Run) -> Run:
    """For good: nothing more is called. What was done stays."""
    with transaction.atomic():
        return _move(work, _locked(work, run.pk), "cancel")


def run_budget_set(work: RunWork, *, run: Run, budget_usd: Decimal | None) -> Run:
    if budget_usd is not None and budget_usd <= 0:
        raise work.error("A budget must be more than $0, or left empty for none.")
    with transaction.atomic():
        run = _locked(work, run.pk)
        run.budget_usd = budget_usd
        run.save(update_fields=["budget_usd"])
    return run


def run_budget_check(work: RunWork, *, run: Run) -> None:
    """Before a run stopped by its budget resumes: refuse while what is left would not
    cover its next call (it would stop again at once)."""
    if run.status != RunStatus.BUDGET_REACHED or run.budget_usd is None:
        return
    spent = engine.budget_short(work, run.pk, limit=run.budget_usd)
    if spent is not None:
        raise work.error(
            f"The {work.noun} has spent ${spent:.2f} of its ${run.budget_usd:.2f} budget, too "
            "little is left for its next call: raise the budget before resuming."
        )


def run_failed_retry(work: RunWork, *, run: Run, error_kind: str = "") -> int:
    """Failed rows (all, or those that failed with `error_kind`) back to waiting with a
    fresh budget of attempts; a finished run runs again, and a running one has them called.
    How many."""
    with transaction.atomic():
        run = _locked(work, run.pk)
        if run.status == RunStatus.CANCELLED:
            raise work.error(f"The {work.noun} was cancelled: nothing in it is called again.")
        try:
            count = work.failed_requeue(run.pk, error_kind=error_kind)
        except ValueError as exc:
            raise work.error(str(exc)) from exc
        if count and run.status == RunStatus.FINISHED:
            run = _move(work, run, "rerun")
        if count and run.status == RunStatus.RUNNING:
            engine.scope_start(work, run.pk)
    return count
