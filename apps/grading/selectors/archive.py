"""Everything of a grading run in one download: a ZIP streamed as it is written, holding the
sampling run's responses, the judgments in long format and the scores, each exactly as its
own CSV export, and a manifest of what made them (runs, models, prompt and rubric versions)
and how many rows each file holds. Memory stays flat whatever the run's size: the CSVs are
PostgreSQL's COPY streamed into the archive (apps/console/zip_stream.py)."""

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal

from apps.console.csv_export import BLOCK_BYTES, copy_csv_chunks, csv_rows
from apps.console.zip_stream import zip_stream
from apps.llm.models import ModelConfig
from apps.runs.selectors import RESPONSE_EXPORT_COLUMNS, responses_export

from ..models import GradingRun, Judgment
from .runs import JUDGMENT_EXPORT, SCORING_RULE, judgments_export, scores_export

FILES = {
    "responses.csv": "The sampling run's answers, one row each (as the run's responses CSV).",
    "judgments.csv": "Every judgment in long format: one row per answer and criterion "
    "(as the judgments CSV).",
    "scores.csv": "One row per answer of the sampling run: its score and breakdown, or status "
    "missing and why (as the scores CSV).",
    "manifest.json": "This file: what made the others, and how many rows each holds.",
}
SCORE_STATUS = 8  # the column of scores_export that says scored or missing


@dataclass(frozen=True)
class ArchiveSheet:
    """A file another app adds to the archive: `lines(run)` yields its CSV's lines."""

    name: str
    description: str
    lines: Callable[[GradingRun], Iterable[str]]


# Filled by the apps that read grading runs (analysis registers the report's method panel
# in its AppConfig.ready), so that grading knows none of them.
_SHEETS: dict[str, ArchiveSheet] = {}


def archive_sheet_register(*, name: str, description: str, lines) -> ArchiveSheet:
    """Add `name` to every grading run's archive. Registering a name again replaces it."""
    sheet = ArchiveSheet(name, description, lines)
    _SHEETS[name] = sheet
    return sheet


def run_archive(*, run: GradingRun, made_at: dt.datetime, made_by: str, viewer) -> Iterator[bytes]:
    """The archive's bytes, read lazily: each CSV's statement runs when the archive reaches
    it, and the manifest, last, counts the rows that were written. The judgments and scores
    are those `viewer` may read (as in their own exports)."""
    responses = copy_csv_chunks(
        responses_export(responses=run.sampling_run.responses.all()),
        columns=RESPONSE_EXPORT_COLUMNS,
    )
    judgments = copy_csv_chunks(judgments_export(run=run, viewer=viewer), columns=JUDGMENT_EXPORT)
    scores = _ScoreRows(run, viewer)

    def manifest() -> Iterator[bytes]:
        counts = {"responses": responses.rows, "judgments": judgments.rows, **scores.counts}
        document = run_manifest(run=run, made_at=made_at, made_by=made_by, counts=counts)
        yield json.dumps(document, indent=2, ensure_ascii=False).encode() + b"\n"

    sheets = [(sheet.name, _blocks(sheet.lines(run))) for sheet in _SHEETS.values()]
    members = [
        ("responses.csv", responses),
        ("judgments.csv", judgments),
        ("scores.csv", _blocks(scores.lines())),
        *sheets,
        ("manifest.json", manifest()),
    ]
    return zip_stream(members, made_at=made_at)


class _ScoreRows:
    """scores_export's CSV, counting its rows by status as they are written."""

    def __init__(self, run: GradingRun, viewer):
        self.run, self.viewer = run, viewer
        self.counts = {"scores": 0, "scored": 0, "missing": 0}

    def lines(self) -> Iterator[str]:
        header, rows = scores_export(run=self.run, viewer=self.viewer)
        yield from csv_rows(header, self._counted(rows))

    def _counted(self, rows: Iterable[list]) -> Iterator[list]:
        for row in rows:
            self.counts["scores"] += 1
            self.counts[row[SCORE_STATUS]] += 1
            yield row


def _blocks(lines: Iterable[str]) -> Iterator[bytes]:
    block: list[bytes] = []
    size = 0
    for line in lines:
        data = line.encode()
        block.append(data)
        size += len(data)
        if size >= BLOCK_BYTES:
            yield b"".join(block)
            block, size = [], 0
    if block:
        yield b"".join(block)


def _model(model: ModelConfig) -> dict:
    return {
        "id": model.pk,
        "display_name": model.display_name,
        "family": model.family,
        "version": model.version,
        "litellm_model": model.litellm_model,
        "offline_demo_model": model.is_offline,
    }


def _when(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value else None


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def run_manifest(*, run: GradingRun, made_at: dt.datetime, made_by: str, counts: dict) -> dict:
    """What the archive holds and what made it: the grading run and its sampling run, the
    grader and its prompt version, the mode and parameters, the rubric versions graded, the
    models sampled, the rows of each file, and when and by whom it was made."""
    sampling = run.sampling_run
    rubrics = (
        Judgment.objects.filter(grading_run=run)
        .values_list("rubric_id", "rubric__version", "rubric__question__external_id")
        .distinct()
        .order_by("rubric__question__external_id", "rubric__version")
    )
    return {
        "made_at": made_at.isoformat(),
        "made_by": made_by,
        "files": {**FILES, **{sheet.name: sheet.description for sheet in _SHEETS.values()}},
        "counts": counts,
        "grading_run": {
            "id": run.pk,
            "name": run.name,
            "status": run.status,
            "mode": run.mode,
            "params": run.params,
            "seed": run.seed,
            "budget_usd": _money(run.budget_usd),
            "created_at": _when(run.created_at),
            "launched_at": _when(run.launched_at),
            "finished_at": _when(run.finished_at),
        },
        "grader": _model(run.grader),
        "grader_prompt": {
            "id": run.prompt.pk,
            "purpose": run.prompt.purpose,
            "version": run.prompt.version,
        },
        "sampling_run": {
            "id": sampling.pk,
            "name": sampling.name,
            "status": sampling.status,
            "samples_per_item": sampling.samples_per_item,
            "params": sampling.params,
            "seed": sampling.seed,
            "prompt": {
                "id": sampling.prompt.pk,
                "purpose": sampling.prompt.purpose,
                "version": sampling.prompt.version,
            },
            "launched_at": _when(sampling.launched_at),
            "finished_at": _when(sampling.finished_at),
        },
        "models": [_model(m) for m in sampling.model_configs.order_by("display_name", "pk")],
        "rubric_versions": [
            {"question": question, "rubric_id": rubric_id, "version": version}
            for rubric_id, version, question in rubrics
        ],
        "scoring_rule": SCORING_RULE,
    }
