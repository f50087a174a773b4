from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.console.uploads import megabytes
from apps.questions.errors import QuestionError
from apps.questions.interchange import MAX_FILE_BYTES
from apps.questions.services import questions_import


class Command(BaseCommand):
    help = "Import the questions of an assay-questions/1 JSON file (all of them, or none)."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options):
        try:
            if file.stat().st_size > MAX_FILE_BYTES:  # refused before it is read
                raise CommandError(
                    f"{file.name} was not imported (nothing was changed): the file is larger "
                    f"than {megabytes(MAX_FILE_BYTES)}"
                )
            content = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror})") from exc
        try:
            report = questions_import(content=content, filename=file.name)
        except QuestionError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(report.summary())
