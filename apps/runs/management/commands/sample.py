"""`manage.py sample`: create (and launch) a sampling run from the command line, through
the same services as the run pages; with --wait, a progress bar until the run stops."""

import json
import time
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q
from django.urls import reverse

from apps.accounts.models import User
from apps.llm.models import ModelConfig, PromptTemplate, Purpose, RunStatus
from apps.questions.models import LengthBucket, Topic
from apps.runs import selectors, services
from apps.runs.errors import RunError
from apps.runs.selection import questions_select

BAR_WIDTH = 30
REDRAW_SECONDS = 1.0
YES_NO = {"yes": True, "no": False}


class Command(BaseCommand):
    help = (
        "Create a sampling run (questions x models x answers per question) and launch it. "
        "Questions: every one with an approved rubric, narrowed by --topic, --length-bucket, "
        "--prior-attempt, --sensemaking, --guidance. With --draft, only create it and print "
        "the estimate; with --wait, show its progress until it stops."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument(
            "--all-approved",
            action="store_true",
            help="every question with an approved rubric (the default)",
        )
        parser.add_argument(
            "--any-question",
            action="store_true",
            help="do not require an approved rubric (the answers cannot be graded without one)",
        )
        parser.add_argument("--topic", action="append", default=[], help="slug or name; repeatable")
        parser.add_argument(
            "--length-bucket", action="append", default=[], choices=LengthBucket.values
        )
        parser.add_argument("--prior-attempt", choices=["yes", "no"])
        parser.add_argument(
            "--sensemaking",
            choices=["yes", "no"],
            help="questions labelled as asking for sensemaking (yes) or as not (no)",
        )
        parser.add_argument(
            "--guidance",
            choices=["yes", "no"],
            help="questions labelled as asking for guidance (yes) or as not (no)",
        )
        parser.add_argument("--models", required=True, help="display names, comma-separated")
        parser.add_argument("--samples", type=int, default=5, help="answers per question")
        parser.add_argument("--prompt-version", type=int, help="default: the newest")
        parser.add_argument("--params", default="", help="JSON, e.g. '{\"temperature\":0.7}'")
        parser.add_argument("--budget", help="USD, e.g. 12.50")
        parser.add_argument("--seed", type=int)
        parser.add_argument("--as", dest="username", help="the researcher the run is made by")
        parser.add_argument("--draft", action="store_true", help="create it, do not launch")
        parser.add_argument("--wait", action="store_true", help="show progress until it stops")

    def handle(self, *args, **options):
        if options["any_question"] and options["all_approved"]:
            raise CommandError("Use --all-approved or --any-question, not both.")
        if options["draft"] and options["wait"]:
            raise CommandError("A draft does not run: use --draft or --wait, not both.")
        selection = {
            "conditions": [] if options["any_question"] else [selectors.APPROVED_RUBRIC],
            "topics": [t.pk for t in _topics(options["topic"])],
            "length_buckets": options["length_bucket"],
            "prior_attempt": YES_NO.get(options["prior_attempt"]),
            "needs_sensemaking": YES_NO.get(options["sensemaking"]),
            "needs_guidance": YES_NO.get(options["guidance"]),
        }
        try:
            run = services.sampling_run_create(
                name=options["name"],
                questions=questions_select(**selection),
                models=_models(options["models"]),
                samples_per_item=options["samples"],
                prompt=_prompt(options["prompt_version"]),
                params=_params(options["params"]),
                budget_usd=_budget(options["budget"]),
                seed=options["seed"],
                selection=selection,
                user=_user(options["username"]),
            )
        except RunError as exc:
            raise CommandError(str(exc)) from exc
        self._describe(run)
        if options["draft"]:
            self.stdout.write("Saved as a draft: launch it on its page.")
            return
        try:
            run = services.sampling_run_launch(run=run)
        except RunError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write("Launched: the workers are asking the models.")
        if options["wait"]:
            self._watch(run)

    def _describe(self, run):
        models = list(run.model_configs.order_by("display_name"))
        questions = run.questions.count()
        self.stdout.write(
            f"Run {run.pk} “{run.name}”: {questions} question(s) x {len(models)} model(s) x "
            f"{run.samples_per_item} answer(s), seed {run.seed}."
        )
        self.stdout.write(f"Page: {reverse('runs:detail', args=[run.pk])}")
        estimate = services.sampling_estimate(
            questions=run.questions.only("pk"),
            models=models,
            samples_per_item=run.samples_per_item,
            prompt=run.prompt,
        )
        self.stdout.write(f"{estimate.calls} calls, estimated ${estimate.cost_usd:.4f}:")
        for row in estimate.models:
            cost = "price unknown" if row.cost_usd is None else f"${row.cost_usd:.4f}"
            offline = " (offline demo model)" if row.model.is_offline else ""
            self.stdout.write(
                f"  {row.model.display_name}{offline}: {row.calls} calls, {row.tokens_in} tokens "
                f"in, {row.tokens_out} out, {cost}"
            )

    def _watch(self, run):
        """Redraw one line from the database's counts every second until the run stops."""
        try:
            while True:
                run.refresh_from_db(fields=["status", "budget_usd"])
                progress = selectors.run_progress(run=run)
                self.stdout.write("\r" + progress_line(progress), ending="")
                self.stdout.flush()
                if run.status != RunStatus.RUNNING:
                    break
                time.sleep(REDRAW_SECONDS)
        except KeyboardInterrupt:
            self.stdout.write("\nStopped watching; the run goes on.")
            return
        c = progress.counts
        self.stdout.write("")
        left = c.pending + c.running
        self.stdout.write(
            f"{run.get_status_display()}: {c.done} done, {c.failed} failed, {left} not done, "
            f"${c.cost_usd:.4f} spent."
        )
        if run.status == RunStatus.BUDGET_REACHED:
            self.stdout.write("Raise the budget on the run's page to resume.")


def progress_line(progress: selectors.RunProgress) -> str:
    c = progress.counts
    filled = round(BAR_WIDTH * c.finished / c.total) if c.total else 0
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    return (
        f"[{bar}] {c.percent:5.1f}%  done {c.done}  failed {c.failed}  pending "
        f"{c.pending + c.running}  {progress.calls_per_second:.1f} calls/s  ${c.cost_usd:.4f}"
    )


def _topics(names: list[str]) -> list[Topic]:
    topics = []
    for name in names:
        topic = Topic.objects.filter(Q(slug=name) | Q(name__iexact=name)).first()
        if topic is None:
            known = ", ".join(Topic.objects.values_list("slug", flat=True))
            raise CommandError(f"No topic {name!r}. Topics: {known}.")
        topics.append(topic)
    return topics


def _models(names: str) -> list[ModelConfig]:
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    found = ModelConfig.objects.in_bulk(wanted, field_name="display_name")
    unknown = [n for n in wanted if n not in found]
    if unknown or not wanted:
        available = ModelConfig.objects.filter(active=True).values_list("display_name", flat=True)
        raise CommandError(
            f"No model named {', '.join(map(repr, unknown)) or '(none given)'}. "
            f"Active models: {', '.join(available) or 'none (add them in the console)'}."
        )
    return [found[n] for n in wanted]


def _prompt(version: int | None) -> PromptTemplate | None:
    if version is None:
        return None
    prompts = PromptTemplate.objects.filter(purpose=Purpose.SAMPLE)
    prompt = prompts.filter(version=version).first()
    if prompt is None:
        known = ", ".join(str(v) for v in prompts.values_list("version", flat=True))
        raise CommandError(f"No sample prompt version {version}. Versions: {known}.")
    return prompt


def _params(text: str) -> dict:
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"--params is not valid JSON ({exc.msg}).") from exc


def _budget(text: str | None) -> Decimal | None:
    if text is None:
        return None
    try:
        amount = Decimal(text.lstrip("$"))
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite():
        raise CommandError(f"--budget {text!r} is not an amount in USD, such as 12.50.")
    return amount


def _user(username: str | None) -> User | None:
    if username is None:
        return None
    user = User.objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"No user named {username!r}.")
    return user
