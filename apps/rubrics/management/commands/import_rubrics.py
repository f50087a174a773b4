from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import User
from apps.rubrics import services
from apps.rubrics.errors import RubricError
from apps.rubrics.interchange import CONVERSATIONS, POINT_MAPPINGS


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

    def handle(self, *args, file: Path, username: str, commit: bool, **options):
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        try:
            upload = services.rubric_import_upload(
                content=file.read_bytes(), filename=file.name, format=options["format"],
                options=options, user=user,
            )  # fmt: skip
            plan = services.rubric_import_plan(upload=upload)
        except (OSError, RubricError) as exc:
            raise CommandError(str(exc)) from exc
        for note in plan.notes:
            self.stdout.write(f"Note: {note}")
        for rubric in plan.rubrics:
            self.stdout.write(f"{rubric.question.external_id} ({rubric.question.topic}):")
            for c in rubric.criteria:
                change = f"  [{c.note}]" if c.note else ""
                self.stdout.write(f"  {c.polarity:8} {c.kind:12} {c.points}  {c.text}{change}")
        if plan.problems:
            raise CommandError("Refused, nothing imported:\n  " + "\n  ".join(plan.problems))
        if not commit:
            self.stdout.write("Nothing imported yet: run again with --commit to import.")
            return
        try:
            result = services.rubric_import_commit(upload=upload, user=user)
        except RubricError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Imported {len(result['rubrics_created'])} rubric(s) as drafts.")
