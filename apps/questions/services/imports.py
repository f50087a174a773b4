"""Importing candidate posts: a file is imported whole, or refused whole with every problem.

The posts stream from the file (apps/questions/pool.py checks each row) into PostgreSQL by
`COPY` in one transaction, so PostgreSQL writes the rows and their index while Python reads
the next ones, and memory stays constant. What one row cannot show is asked of the database
before commit: ids repeated in the file or stored already (the unique index on
`external_id` is deferred so that the COPY completes and every duplicate can be named, with
its lines). Any problem rolls the transaction back, so nothing is stored; the refused batch
is recorded with its problems. The topic rows that sampling reads are made in SQL from the
posts' arrays, and both tables are vacuumed after commit so that the sampler's index-only
scans find the pages all-visible.

A worker may die at any moment: its transaction rolls back with it, and the batch's session
advisory lock (held by the connection) goes too, so a redelivered task takes the batch up
again; a finished batch (imported or refused) is never run twice. A file whose digest
matches an imported batch is refused, and the partial unique index `import_file_once`
refuses the second of two racing imports of one file at commit.
"""

import hashlib
import logging
import uuid
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.llm import dispatch

from ..errors import QuestionError
from ..models import ImportBatch, ImportStatus, SourcePost, SourcePostTopic, Topic
from ..pool import (
    COPY_COLUMNS,
    PROBLEMS_KEPT,
    ImportRefused,
    Problems,
    Tally,
    file_format_for,
    post_rows,
)
from ..selectors.imports import progress_key

log = logging.getLogger(__name__)

LOCK_NAMESPACE = 11_01  # pg_advisory_lock(namespace, batch id); sampling uses 11_03
PROGRESS_SECONDS = 24 * 3600
COPY_CHUNK = 1 << 20
_POSTS = SourcePost._meta.db_table
_TOPICS = SourcePostTopic._meta.db_table
_DONE = (ImportStatus.DONE, ImportStatus.REFUSED)


def import_progress_record(*, batch_id: int, bytes_read: int, total: int, rows: int) -> None:
    """Progress, where a page can read it while the import's transaction is still open."""
    cache.set(
        progress_key(batch_id),
        {"bytes": bytes_read, "total": total, "rows": rows},
        PROGRESS_SECONDS,
    )


def file_digest(path: Path) -> tuple[str, int]:
    """(sha256 hex, size in bytes) of a file, read in chunks."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as f:
        while chunk := f.read(COPY_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def upload_save(*, upload, directory: Path | None = None) -> tuple[Path, str, int]:
    """Store an uploaded file where the worker can read it: (path, sha256, size)."""
    directory = Path(directory or settings.POST_UPLOAD_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{uuid.uuid4().hex}{Path(upload.name).suffix.lower()[:10]}"
    digest, size = hashlib.sha256(), 0
    with path.open("wb") as out:
        for chunk in upload.chunks(COPY_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    return path, digest.hexdigest(), size


def import_batch_create(
    *,
    path: Path,
    filename: str,
    user=None,
    upload: bool = False,
    sha256: str = "",
    size: int | None = None,
) -> ImportBatch:
    """A batch waiting to import the file at `path`. An `upload` (a copy that is deleted
    once the batch is finished) is imported by a worker, started once the transaction
    commits; the import_posts command imports its file itself."""
    if not sha256 or size is None:
        sha256, size = file_digest(path)
    batch = ImportBatch.objects.create(
        filename=Path(filename).name[:255],
        sha256=sha256,
        size_bytes=size,
        file_format=file_format_for(path, filename),
        imported_by=user,
        upload_path=str(path) if upload else "",
    )
    if upload:
        dispatch.start("questions.import_posts", batch.pk)
    return batch


def who(batch: ImportBatch) -> str:
    user = batch.imported_by
    if user is None:
        return "the import_posts command"
    return user.get_full_name() or user.get_username()


def earlier_import_message(earlier: ImportBatch) -> str:
    when = timezone.localtime(earlier.finished_at or earlier.created_at)
    return (
        f"this file was imported already, on {when:%Y-%m-%d at %H:%M} by {who(earlier)} "
        f"(import {earlier.pk}, {earlier.filename}, {earlier.rows:,} posts)"
    )


def import_batch_run(
    *, batch_id: int, path: Path | None = None, progress: Callable[[Tally], None] | None = None
) -> ImportBatch | None:
    """Import the batch's file (its upload unless `path`), or refuse it; None when another
    process is importing it now. The finished batch carries `refusal` (an ImportRefused)
    when it was refused in this call."""
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_NAMESPACE, batch_id])
        if not cursor.fetchone()[0]:
            return None
    try:
        batch = ImportBatch.objects.select_related("imported_by").get(pk=batch_id)
        batch.refusal = None
        if batch.status not in _DONE:
            path = Path(path or batch.upload_path)
            ImportBatch.objects.filter(pk=batch.pk).update(status=ImportStatus.IMPORTING)
            batch.status = ImportStatus.IMPORTING
            try:
                _import_or_refuse(batch, path, progress)
            except Exception as exc:
                # Not the file's fault (the database went away, a time limit): its
                # transaction rolled back, so say so, rather than leave the page polling a
                # batch nobody imports, and let the task fail loudly.
                _failed(batch, exc)
                raise
        _upload_remove(batch)
        return batch
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_NAMESPACE, batch_id])


def _import_or_refuse(batch: ImportBatch, path: Path, progress) -> None:
    earlier = _earlier(batch)
    try:
        if earlier is not None:
            raise ImportRefused(batch.filename, [earlier_import_message(earlier)])
        if not path.is_file():
            raise ImportRefused(batch.filename, ["the file is gone; upload it again"])
        if path.stat().st_size == 0:
            raise ImportRefused(batch.filename, ["the file is empty"])
        try:
            with transaction.atomic():
                _import(batch, path, progress)
        except IntegrityError:
            # Another import of the same file committed first (`import_file_once`).
            earlier = _earlier(batch)
            if earlier is None:
                raise
            raise ImportRefused(batch.filename, [earlier_import_message(earlier)]) from None
    except ImportRefused as exc:
        _upload_remove(batch)
        batch.status = ImportStatus.REFUSED
        batch.rows, batch.topic_counts = 0, {}
        batch.problems = exc.problems[:PROBLEMS_KEPT]
        if exc.total > len(batch.problems):
            batch.problems.append(f"and {exc.total - len(batch.problems):,} more problem(s)")
        batch.finished_at = timezone.now()
        batch.save(update_fields=["status", "rows", "topic_counts", "problems", "finished_at"])
        batch.refusal = exc
        return
    _vacuum()


def _failed(batch: ImportBatch, exc: Exception) -> None:
    log.exception("Import %s of %s stopped", batch.pk, batch.filename)
    problem = (
        f"the import stopped with an error ({type(exc).__name__}), not because of the file; "
        "nothing was stored: import it again"
    )
    _upload_remove(batch)
    ImportBatch.objects.filter(pk=batch.pk, status=ImportStatus.IMPORTING).update(
        status=ImportStatus.REFUSED,
        problems=[problem],
        rows=0,
        topic_counts={},
        finished_at=timezone.now(),
    )


def _upload_remove(batch: ImportBatch) -> None:
    """The uploaded file goes before the batch says it is finished, so that whoever sees
    the finished status also finds the file gone (its rows are read by then)."""
    if batch.upload_path:
        Path(batch.upload_path).unlink(missing_ok=True)


def _earlier(batch: ImportBatch) -> ImportBatch | None:
    return (
        ImportBatch.objects.select_related("imported_by")
        .filter(sha256=batch.sha256, status=ImportStatus.DONE)
        .exclude(pk=batch.pk)
        .first()
    )


def _import(batch: ImportBatch, path: Path, progress) -> None:
    topics = dict(Topic.objects.values_list("name", "pk"))
    names = {pk: name for name, pk in topics.items()}
    problems, tally = Problems(), Tally()
    total = path.stat().st_size

    def report(tally: Tally) -> None:
        import_progress_record(
            batch_id=batch.pk, bytes_read=tally.bytes_read, total=total, rows=tally.rows
        )
        if progress is not None:
            progress(tally)

    report(tally)
    rows = post_rows(
        path,
        file_format=batch.file_format,
        topics=topics,
        batch_id=batch.pk,
        problems=problems,
        tally=tally,
        progress=report,
    )
    with connection.cursor() as cursor:
        # Every post of this batch gets a later id than this one: the batch's rows are then
        # an id range of the primary key, found without scanning the earlier batches.
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [_POSTS])
        floor = cursor.fetchone()[0]
        _copy(cursor.cursor, rows)
        report(tally)
        _duplicates(cursor, batch, floor, problems)
        if problems:
            raise ImportRefused(batch.filename, problems.texts(), problems.total)
        cursor.execute(
            f"INSERT INTO {_TOPICS} (topic_id, post_id) SELECT unnest(topic_ids), id "  # noqa: S608
            f"FROM {_POSTS} WHERE id > %s AND batch_id = %s",
            [floor, batch.pk],
        )
    _upload_remove(batch)
    batch.status = ImportStatus.DONE
    batch.rows = tally.rows
    batch.topic_counts = {names[pk]: count for pk, count in sorted(tally.topic_counts.items())}
    batch.problems = []
    batch.finished_at = timezone.now()
    batch.save(update_fields=["status", "rows", "topic_counts", "problems", "finished_at"])


def _copy(cursor, rows) -> None:
    columns = ", ".join(COPY_COLUMNS)
    with cursor.copy(f"COPY {_POSTS} ({columns}) FROM STDIN") as copy:
        chunk, size = [], 0
        for row in rows:
            chunk.append(row)
            size += len(row)
            if size >= COPY_CHUNK:
                copy.write("".join(chunk))
                chunk, size = [], 0
        if chunk:
            copy.write("".join(chunk))


def _duplicates(cursor, batch: ImportBatch, floor: int, problems: Problems) -> None:
    """Name every id of the batch that is repeated in the file or stored already.

    Checking the deferred constraint now costs only the rows whose insert saw a possible
    conflict; the queries that name the lines run only when there is one."""
    try:
        with transaction.atomic():
            cursor.execute("SET CONSTRAINTS source_post_external_id IMMEDIATE")
        # Deferred again: the setting lasts to the end of the transaction, which is longer
        # than this import where the caller holds one open (a test's).
        cursor.execute("SET CONSTRAINTS source_post_external_id DEFERRED")
        return
    except IntegrityError:
        pass
    cursor.execute(
        f"SELECT external_id, array_agg(line ORDER BY line), count(*) OVER () FROM {_POSTS} "  # noqa: S608
        f"WHERE id > %s AND batch_id = %s GROUP BY external_id HAVING count(*) > 1 "
        f"ORDER BY min(line) LIMIT %s",
        [floor, batch.pk, PROBLEMS_KEPT],
    )
    found = cursor.fetchall()
    for external_id, lines, _count in found:
        for line in lines[1:]:
            problems.add(
                line,
                f'line {line}, field "external_id": {external_id!r} is also on line {lines[0]}',
            )
    if found and found[0][2] > len(found):
        problems.total += found[0][2] - len(found)
    cursor.execute(
        f"SELECT n.line, n.external_id, o.batch_id, count(*) OVER () FROM {_POSTS} n "  # noqa: S608
        f"JOIN {_POSTS} o ON o.external_id = n.external_id AND o.batch_id <> n.batch_id "
        f"WHERE n.id > %s AND n.batch_id = %s ORDER BY n.line LIMIT %s",
        [floor, batch.pk, PROBLEMS_KEPT],
    )
    stored = cursor.fetchall()
    earlier = ImportBatch.objects.select_related("imported_by").in_bulk({row[2] for row in stored})
    for line, external_id, batch_id, _count in stored:
        other = earlier.get(batch_id)
        source = (
            f"by import {batch_id}"
            if other is None
            else f"from {other.filename} (import {other.pk}, "
            f"{timezone.localtime(other.finished_at or other.created_at):%Y-%m-%d} "
            f"by {who(other)})"
        )
        problems.add(
            line, f'line {line}, field "external_id": {external_id!r} is stored already, {source}'
        )
    if stored and stored[0][3] > len(stored):
        problems.total += stored[0][3] - len(stored)


def _vacuum() -> None:
    """Set the new topic rows all-visible (sampling reads them by index-only scans, which
    fall back to the heap for pages the visibility map does not mark) and refresh the
    planner's statistics of both tables. The wide posts are analysed, not vacuumed: nothing
    scans them index-only, and vacuuming them rewrites every page just written (measured: a
    tenth of the import's time). VACUUM cannot run in a transaction: inside one (a test's),
    the import leaves this to autovacuum."""
    if connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM (ANALYZE) {_TOPICS}")
        cursor.execute(f"ANALYZE {_POSTS}")


def posts_import(
    *,
    path: Path,
    filename: str | None = None,
    user=None,
    progress: Callable[[Tally], None] | None = None,
) -> ImportBatch:
    """Import a file of candidate posts now (the command's way): the imported batch, or
    ImportRefused naming every problem (the refused batch is recorded)."""
    path = Path(path)
    if not path.is_file():
        raise QuestionError(f"{path}: no such file")
    batch = import_batch_create(path=path, filename=filename or path.name, user=user)
    batch = import_batch_run(batch_id=batch.pk, path=path, progress=progress)
    if batch.refusal is not None:
        raise batch.refusal
    return batch


def posts_upload(*, upload, user) -> ImportBatch:
    """Keep an uploaded file of candidate posts and queue its import by a worker."""
    saved, sha256, size = upload_save(upload=upload)
    return import_batch_create(
        path=saved, filename=upload.name, user=user, upload=True, sha256=sha256, size=size
    )
