from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.surveys.errors import SurveyError
from apps.surveys.services import scenario_import_json


class Command(BaseCommand):
    help = "Import PrivacyLens scenario records from a JSON file: all of them, or none."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options):
        try:
            summary = scenario_import_json(text=file.read_bytes())
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}") from exc
        except SurveyError as exc:
            raise CommandError(f"Nothing was imported. {exc}") from exc
        self.stdout.write(
            f"{summary.created} scenario(s) imported, {summary.unchanged} already there."
        )
