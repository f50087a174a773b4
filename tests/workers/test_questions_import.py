"""The import task: a batch is imported once however often its message is delivered; a
batch whose worker died is taken up again; one being imported elsewhere is left alone."""

import shutil
from pathlib import Path

import psycopg
import pytest

from apps.questions.models import ImportBatch, ImportStatus, SourcePost, SourcePostTopic
from apps.questions.services import import_batch_create
from apps.questions.services.imports import LOCK_NAMESPACE
from tests.conftest import live_database_url
from workers.questions import import_posts_task

FIXTURE = Path(__file__).resolve().parents[2] / "apps/demo/data/candidate-posts-300.csv"


def uploaded(tmp_path) -> ImportBatch:
    copy = tmp_path / "upload.csv"
    shutil.copy(FIXTURE, copy)
    return import_batch_create(path=copy, filename="candidate-posts-300.csv", upload=True)


@pytest.mark.django_db
def test_the_task_run_twice_imports_once_and_deletes_the_upload(tmp_path):
    batch = uploaded(tmp_path)
    assert import_posts_task(batch.pk) == ImportStatus.DONE
    assert import_posts_task(batch.pk) == ImportStatus.DONE
    assert SourcePost.objects.count() == 300
    assert SourcePostTopic.objects.filter(post__batch=batch).count() > 300
    assert not Path(batch.upload_path).exists()


@pytest.mark.django_db
def test_a_batch_left_importing_by_a_dead_worker_is_imported_again(tmp_path):
    batch = uploaded(tmp_path)
    ImportBatch.objects.filter(pk=batch.pk).update(status=ImportStatus.IMPORTING)
    assert import_posts_task(batch.pk) == ImportStatus.DONE
    assert SourcePost.objects.count() == 300


@pytest.mark.django_db(transaction=True)
def test_a_batch_another_process_is_importing_is_skipped(tmp_path):
    batch = uploaded(tmp_path)
    url = live_database_url().replace("postgres://", "postgresql://", 1)
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [LOCK_NAMESPACE, batch.pk])
        assert import_posts_task(batch.pk) == "skipped"
        # Released here, not by closing: the server frees a closed session's locks when its
        # backend has exited, which can be a moment after the client has gone.
        other.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_NAMESPACE, batch.pk])
    assert SourcePost.objects.count() == 0
    assert import_posts_task(batch.pk) == ImportStatus.DONE


@pytest.mark.django_db(transaction=True)
def test_a_refused_upload_is_recorded_and_its_file_deleted(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("external_id,subreddit\nt3_a,privacy\n")
    batch = import_batch_create(path=path, filename="bad.csv", upload=True)
    assert import_posts_task(batch.pk) == ImportStatus.REFUSED
    batch.refresh_from_db()
    assert any('column "body" is missing' in p for p in batch.problems)
    assert not path.exists()


@pytest.mark.django_db
def test_an_import_that_stops_with_an_error_stores_nothing_and_says_so(tmp_path):
    from apps.questions.services.imports import import_batch_run

    batch = uploaded(tmp_path)
    seen = []

    def stop_midway(tally):  # an error that is not the file's (a time limit, say)
        seen.append(tally.rows)
        if tally.rows:
            raise TimeoutError("the task's time ran out")

    with pytest.raises(TimeoutError):
        import_batch_run(batch_id=batch.pk, progress=stop_midway)
    batch.refresh_from_db()
    assert batch.status == ImportStatus.REFUSED and seen[-1] > 0
    assert "stopped with an error (TimeoutError), not because of the file" in batch.problems[0]
    assert SourcePost.objects.count() == 0 and SourcePostTopic.objects.count() == 0
    assert not Path(batch.upload_path).exists()
