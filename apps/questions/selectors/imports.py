"""Reads of the candidate pool's imports: how far a running import is."""

from django.core.cache import cache

from ..models import ImportBatch, ImportStatus


def progress_key(batch_id: int) -> str:
    return f"questions:import-progress:{batch_id}"


def import_progress(*, batch: ImportBatch) -> dict:
    """{"bytes", "total", "rows", "percent", "finished"} of a batch. While it imports, its rows
    are not visible outside its transaction: the importer records its progress in the cache."""
    finished = batch.status in (ImportStatus.DONE, ImportStatus.REFUSED)
    seen = cache.get(progress_key(batch.pk)) or {}
    total = seen.get("total") or batch.size_bytes
    done = total if finished else min(seen.get("bytes", 0), total)
    return {
        "bytes": done,
        "total": total,
        "rows": batch.rows if batch.status == ImportStatus.DONE else seen.get("rows", 0),
        "percent": round(100 * done / total) if total else (100 if finished else 0),
        "finished": finished,
    }


def import_title(*, batch: ImportBatch) -> str:
    """The heading of a batch's page, as its status stands: a refused file is not
    "importing"."""
    if batch.status == ImportStatus.DONE:
        return f"Imported {batch.filename}"
    if batch.status == ImportStatus.REFUSED:
        return f"{batch.filename} was not imported"
    return f"Importing {batch.filename}"
