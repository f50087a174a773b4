from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.accounts.models import User
from apps.console.uploads import megabytes
from apps.rubrics import services
from apps.rubrics.errors import RubricError
from apps.rubrics.interchange import CONVERSATIONS, MAX_IMPORT_BYTES, POINT_MAPPINGS


class Command(BaseCommand):
    help = (
        "Show how the rubrics of a file convert into Assay's; with --commit, import them as "
        "drafts (all or none). Formats: assay (assay-questions/1 JSON), healthbench (JSONL)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=["assay", "healthbench"], required=True)
        parser.add_argument("--points-mapping", choices=list(POINT_MAPPINGS), default="refuse")
        parser.add_argument("--conversation", choices=list(CONVERSATIONS), default="refuse")
        parser.add_argument("--default-topic", default="")
        parser.add_argument("--as", dest="username", required=True, help="a researcher's username")
        parser.add_argument("--commit", action="store_true")
        parser.add_argument(
            "--rescale",
            action="store_true",
            help="confirm an import that changes criteria's points (the dry run lists them)",
        )

    def handle(self, *args, file: Path, username: str, commit: bool, rescale: bool, **options):
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        try:
            if file.stat().st_size > MAX_IMPORT_BYTES:  # refused before it is read
                raise CommandError(
                    f"{file.name} was not imported (nothing was changed): the file is larger "
                    f"than {megabytes(MAX_IMPORT_BYTES)}"
                )
            content = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror})") from exc
        try:
            # The dry run stores nothing: a file is kept only when it is imported.
            plan = services.rubric_import_check(
                content=content, filename=file.name, format=options["format"], options=options
            )
        except RubricError as exc:
            raise CommandError(str(exc)) from exc
        for note in plan.notes:
            self.stdout.write(f"Note: {note}")
        for rubric in plan.rubrics:
            self.stdout.write(f"{rubric.question.external_id} ({rubric.question.topic}):")
            for c in rubric.criteria:
                change = f"  [{c.note}]" if c.note else ""
                self.stdout.write(f"  {c.polarity:8} {c.kind:12} {c.points}  {c.text}{change}")
        if plan.problems:
            raise CommandError(
                f"{file.name} was not imported (nothing was changed):\n  "
                + "\n  ".join(plan.problems)
            )
        if plan.rescaled:
            self.stdout.write(f"Warning: {plan.rescale_warning}")
            self.stdout.write("  " + "\n  ".join(plan.rescaled))
        if not commit:
            self.stdout.write("Nothing imported yet: run again with --commit to import.")
            return
        if plan.rescaled and not rescale:
            raise CommandError(
                f"{file.name} was not imported: it changes {len(plan.rescaled)} criterion point "
                "value(s) (listed above); run again with --rescale to confirm."
            )
        try:
            with transaction.atomic():  # a commit that fails keeps no stored upload either
                upload = services.rubric_import_upload(
                    content=content,
                    filename=file.name,
                    format=options["format"],
                    options=options,
                    user=user,
                )
                result = services.rubric_import_commit(
                    upload=upload, user=user, rescale_confirmed=rescale
                )
        except RubricError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Imported {len(result['rubrics_created'])} rubric(s) as drafts.")
