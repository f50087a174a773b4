import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.questions.errors import QuestionError
from apps.questions.services.imports import posts_import


class Command(BaseCommand):
    help = (
        "Import candidate posts from a CSV or JSON Lines file (all of them, or none: a file "
        "with any problem is refused whole, with each problem named)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--user", help="The username recorded as the importer.")

    def handle(self, *args, file: Path, user: str | None = None, **options):
        importer = None
        if user:
            try:
                importer = get_user_model().objects.get_by_natural_key(user)
            except get_user_model().DoesNotExist:
                raise CommandError(f"--user {user}: no such user") from None
        try:
            total = file.stat().st_size
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror})") from exc

        def progress(tally):
            share = tally.bytes_read / total if total else 1
            sys.stderr.write(f"\r{share:6.1%}  {tally.rows:,} posts read")
            sys.stderr.flush()

        try:
            batch = posts_import(path=file, user=importer, progress=progress)
        except QuestionError as exc:
            sys.stderr.write("\n")
            raise CommandError(str(exc)) from exc
        sys.stderr.write("\n")
        topics = ", ".join(f"{name} {count:,}" for name, count in batch.topic_counts.items())
        self.stdout.write(
            f"Imported {batch.rows:,} posts from {batch.filename} (import {batch.pk}); "
            f"per topic: {topics}"
        )
