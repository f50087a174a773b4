import argparse
import sys

from .knobs import Knobs, add_arguments
from .server import run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m offline_llm",
        description="Assay's offline, OpenAI-compatible LLM provider (demo answers).",
    )
    add_arguments(parser)
    options = parser.parse_args(argv)
    try:
        knobs = Knobs.from_options(vars(options))
    except ValueError as exc:
        parser.error(str(exc))
    run(knobs, announce=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
