from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.console.uploads import megabytes
from apps.surveys.errors import SurveyError
from apps.surveys.services import scenario_import_json
from apps.surveys.services.scenarios import MAX_FILE_BYTES


class Command(BaseCommand):
    help = "Import PrivacyLens scenario records from a JSON file: all of them, or none."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options):
        try:
            if file.stat().st_size > MAX_FILE_BYTES:  # refused before it is read
                raise CommandError(
                    f"{file.name} was not imported (nothing was changed): the file is larger "
                    f"than {megabytes(MAX_FILE_BYTES)}."
                )
            summary = scenario_import_json(text=file.read_bytes(), filename=file.name)
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}") from exc
        except SurveyError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{summary.created} scenario(s) imported, {summary.unchanged} already there."
        )
