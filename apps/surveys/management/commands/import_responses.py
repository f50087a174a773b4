from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.console.uploads import megabytes
from apps.surveys.errors import SurveyError
from apps.surveys.models import Study
from apps.surveys.services import response_import_csv
from apps.surveys.services.scenarios import MAX_FILE_BYTES


class Command(BaseCommand):
    help = (
        "Import scenario responses from a CSV (columns scenario, response, model; optionally "
        "prompt_version and offline): all of them, or none."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--study", help="a study's slug: show them there where it has none")

    def handle(self, *args, file: Path, study: str | None, **options):
        shown_in = None
        if study:
            shown_in = Study.objects.filter(slug=study).first()
            if shown_in is None:
                raise CommandError(f"No study has the slug {study!r}.")
        try:
            if file.stat().st_size > MAX_FILE_BYTES:  # refused before it is read
                raise CommandError(
                    f"{file.name} was not imported (nothing was changed): the file is larger "
                    f"than {megabytes(MAX_FILE_BYTES)}."
                )
            count = response_import_csv(text=file.read_bytes(), study=shown_in, filename=file.name)
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}") from exc
        except SurveyError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{count} response(s) imported.")
