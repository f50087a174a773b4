"""Create (and launch) a grading run from the command line, with the pages' services."""

import json
import time
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from apps.llm.models import ModelConfig, PromptTemplate
from apps.runs.models import SamplingRun

from ... import services
from ...errors import GradingError
from ...models import GradingMode
from ...selectors import runs as selectors
from ...services.runs import PURPOSE


class Command(BaseCommand):
    help = "Grade a sampling run's answers with an auto-rater: create a grading run and launch it."

    def add_arguments(self, parser):
        parser.add_argument(
            "--sampling-run", type=int, required=True, help="The sampling run's id."
        )
        parser.add_argument("--grader", required=True, help="The grader model's display name.")
        parser.add_argument("--mode", choices=GradingMode.values, default=GradingMode.CHECKLIST)
        parser.add_argument("--prompt-version", type=int, help="Default: the mode's newest.")
        parser.add_argument("--temperature", help="Default 0, as the published rater.")
        parser.add_argument("--params", default="", help="Other parameters, as a JSON object.")
        parser.add_argument("--budget", help="USD; default: none.")
        parser.add_argument("--name", default="")
        parser.add_argument("--draft", action="store_true", help="Create it but do not launch.")
        parser.add_argument("--wait", action="store_true", help="Show progress until it stops.")

    def handle(self, *args, **options):
        arguments = self._arguments(options)
        try:
            run = services.grading_run_create(**arguments)
            for note in selectors.run_fidelity_notes(run):
                self.stdout.write(self.style.WARNING(note))
            self.stdout.write(f"Grading run {run.pk} created: {run.name}")
            if options["draft"]:
                estimate = selectors.grading_estimate(run=run)
                self.stdout.write(f"Draft: {estimate.calls} calls for {estimate.answers} answers.")
                return
            run = services.grading_run_launch(run=run)
        except GradingError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Launched. Follow it with: manage.py run_status grading:{run.pk}")
        if options["wait"]:
            progress_wait(self.stdout, run)

    def _arguments(self, options) -> dict:
        try:
            sampling_run = SamplingRun.objects.get(pk=options["sampling_run"])
        except SamplingRun.DoesNotExist as exc:
            raise CommandError(f"No sampling run {options['sampling_run']}.") from exc
        grader = ModelConfig.objects.filter(display_name=options["grader"]).first()
        if grader is None:
            names = ", ".join(
                ModelConfig.objects.filter(active=True).values_list("display_name", flat=True)
            )
            raise CommandError(
                f"No model called {options['grader']!r}. Available: {names or 'none'}."
            )
        mode = options["mode"]
        prompt = None
        if options["prompt_version"] is not None:
            prompt = PromptTemplate.objects.filter(
                purpose=PURPOSE[mode], version=options["prompt_version"]
            ).first()
            if prompt is None:
                raise CommandError(
                    f"No {PURPOSE[mode]} prompt version {options['prompt_version']}."
                )
        params = _json_object(options["params"])
        if options["temperature"] is not None:
            params["temperature"] = _number(options["temperature"], "--temperature")
        budget = options["budget"]
        return {
            "sampling_run": sampling_run,
            "grader": grader,
            "mode": mode,
            "prompt": prompt,
            "params": params,
            "name": options["name"],
            "budget_usd": None if budget is None else Decimal(str(_number(budget, "--budget"))),
        }


def _json_object(text: str) -> dict:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"--params is not valid JSON: {exc.msg}.") from exc
    if not isinstance(value, dict):
        raise CommandError('--params must be a JSON object, such as {"max_tokens": 2000}.')
    return value


def _number(text: str, option: str):
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise CommandError(f"{option} must be a number, not {text!r}.") from exc
    return int(value) if value == value.to_integral_value() else float(value)


BAR_WIDTH = 30


def progress_wait(stdout, run, *, interval: float = 1.0) -> None:
    """Redraw a progress bar every `interval` seconds from the database's counts until the
    run is no longer running."""
    while True:
        run.refresh_from_db(fields=["status"])
        progress = selectors.grading_progress(run=run)
        made = progress.calls["done"] + progress.calls["error"]
        total = progress.calls_total + progress.answers_waiting
        filled = round(BAR_WIDTH * made / total) if total else 0
        stdout.write(
            f"\r[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {made}/{total} calls, "
            f"{progress.calls['error']} errors, ${progress.cost_usd:.4f}, "
            f"{run.get_status_display().lower()}",
            ending="",
        )
        stdout.flush()
        if not progress.running:
            stdout.write("")
            return
        time.sleep(interval)
