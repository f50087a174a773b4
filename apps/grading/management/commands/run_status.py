"""Print a sampling or grading run's status and counts, from the database."""

from django.core.management.base import BaseCommand, CommandError

from apps.runs.models import SamplingRun

from ...models import GradingRun
from ...selectors import runs as selectors


class Command(BaseCommand):
    help = "Status and counts of a run: sampling:ID, grading:ID, or a bare ID (a sampling run)."

    def add_arguments(self, parser):
        parser.add_argument("run", help="sampling:ID, grading:ID, or ID (a sampling run)")

    def handle(self, *args, **options):
        kind, _, pk = options["run"].rpartition(":")
        kind = kind or "sampling"
        if kind not in ("sampling", "grading") or not pk.isdigit():
            raise CommandError(
                f"Name a run as sampling:ID, grading:ID or ID, not {options['run']!r}."
            )
        if kind == "sampling":
            run = SamplingRun.objects.filter(pk=int(pk)).first()
            if run is None:
                raise CommandError(f"No sampling run {pk}.")
            self._sampling(run)
        else:
            run = GradingRun.objects.select_related("grader", "prompt").filter(pk=int(pk)).first()
            if run is None:
                raise CommandError(f"No grading run {pk}.")
            self._grading(run)

    def _sampling(self, run):
        counts = selectors.sampling_counts(run=run)
        out = self.stdout.write
        out(f"Sampling run {run.pk}: {run.name}")
        out(f"Status: {run.get_status_display()}")
        out(
            "Answers: "
            + ", ".join(f"{k} {v}" for k, v in counts["states"].items())
            + f" (total {counts['total']})"
        )
        for _kind, label, n in counts["errors"]:
            out(f"  failed, {label}: {n}")
        budget = f" of ${run.budget_usd}" if run.budget_usd is not None else ""
        out(f"Cost: ${counts['cost']:.4f}{budget}")

    def _grading(self, run):
        progress = selectors.grading_progress(run=run)
        totals = selectors.scores_totals(selectors.scores_by_model(run=run))
        out = self.stdout.write
        out(f"Grading run {run.pk}: {run.name}")
        out(f"Status: {run.get_status_display()}; grader {run.grader}, {run.prompt}, {run.mode}")
        out(
            "Calls: "
            + ", ".join(f"{k} {v}" for k, v in progress.calls.items())
            + f" (total {progress.calls_total}); reused {progress.reused}"
        )
        j = progress.judgments
        out(
            f"Judgments: met {j['met']}, not met {j['not_met']}, error {j['error']}, "
            f"pending {j['pending']} (total {progress.judgments_total})"
        )
        for error in progress.errors:
            out(f"  error, {error['label']}: {error['count']}")
        out(
            f"Scores: {totals['scored']} scored, {totals['missing']} missing "
            f"({totals['errored']} with an error judgment, {totals['pending']} still being "
            f"graded, {totals['unanswered']} not answered)"
        )
        budget = f" of ${run.budget_usd}" if run.budget_usd is not None else ""
        out(f"Cost: ${progress.cost_usd:.4f}{budget}")
