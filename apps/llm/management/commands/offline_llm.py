from django.core.management.base import BaseCommand, CommandError

from apps.llm.offline.knobs import Knobs, add_arguments
from apps.llm.offline.server import run


class Command(BaseCommand):
    help = (
        "Run the offline, OpenAI-compatible LLM provider on loopback until interrupted. "
        "Flags also read OFFLINE_LLM_<NAME> from the environment."
    )

    def add_arguments(self, parser):
        add_arguments(parser)

    def handle(self, *args, **options):
        try:
            knobs = Knobs.from_options(options)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc

        def announce(line: str) -> None:
            self.stdout.write(line)
            # Whoever started us may be waiting for this line on a pipe.
            self.stdout.flush()

        run(knobs, announce=announce)
