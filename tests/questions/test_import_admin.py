"""The console's pages for the candidate pool: uploading a file of posts and following its
import, the imports, the posts, topics, exclusion reasons and quota settings."""

from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.models import (
    ExclusionReason,
    ImportBatch,
    ImportStatus,
    QuotaSettings,
    SourcePost,
    Topic,
)
from tests.conftest import wait_until
from tests.factories import posts_make
from workers.questions import import_posts_task

FIXTURE = Path(__file__).resolve().parents[2] / "apps/demo/data/candidate-posts-300.csv"
UPLOAD = reverse("admin:questions_importbatch_upload")


@pytest.fixture
def upload_dir(settings, tmp_path):
    settings.POST_UPLOAD_DIR = str(tmp_path / "uploads")
    return Path(settings.POST_UPLOAD_DIR)


def upload(client, path: Path = FIXTURE):
    with path.open("rb") as f:
        return client.post(UPLOAD, {"file": f})


@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER])
def test_only_researchers_reach_the_upload_and_progress_pages(role_client, role, upload_dir):
    client = role_client(role)
    batch = posts_make(1)[0].batch
    for url in (UPLOAD, reverse("admin:questions_importbatch_progress", args=[batch.pk])):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))
    assert upload(client).status_code == 302
    assert ImportBatch.objects.count() == 1 and not upload_dir.exists()


@pytest.mark.django_db
def test_an_upload_creates_a_batch_that_the_task_imports(
    role_client, upload_dir, django_capture_on_commit_callbacks
):
    client = role_client(Role.RESEARCHER)
    assert "data-upload-progress" in client.get(UPLOAD).content.decode()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = upload(client)
    batch = ImportBatch.objects.get()
    progress = reverse("admin:questions_importbatch_progress", args=[batch.pk])
    assert response.status_code == 302 and response["Location"] == progress
    assert len(queued) == 1 and batch.status == ImportStatus.QUEUED
    assert Path(batch.upload_path).parent == upload_dir
    page = client.get(progress).content.decode()
    assert "waiting for a worker" in page and 'hx-trigger="every 1s"' in page
    assert f'href="{progress}"' in page

    import_posts_task(batch.pk)
    fragment = client.get(progress, headers={"HX-Request": "true"}).content.decode()
    assert "Imported 300 posts" in fragment and "<html" not in fragment
    assert "hx-trigger" not in fragment  # finished: polling stops
    assert SourcePost.objects.filter(batch=batch).count() == 300
    assert not Path(batch.upload_path).exists()


@pytest.mark.django_db
def test_a_refused_upload_shows_its_report(role_client, upload_dir, tmp_path):
    client = role_client(Role.RESEARCHER)
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "external_id,subreddit,title,body,created_utc,topics\n"
        "t3_a,privacy,t,b,2023-05-01T10:00:00+00:00,gardening\n"
    )
    upload(client, bad)
    batch = ImportBatch.objects.get()
    import_posts_task(batch.pk)
    page = client.get(reverse("admin:questions_importbatch_progress", args=[batch.pk]))
    text = page.content.decode()
    assert "bad.csv was not imported (nothing was changed)" in text
    assert "line 2, field &quot;topics&quot;: unknown topic &#x27;gardening&#x27;" in text
    listing = client.get(reverse("admin:questions_importbatch_changelist")).content.decode()
    assert "bad.csv" in listing and "Refused" in listing


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ('"body": "\\ud800x"', "line 1, field &quot;body&quot;: a lone surrogate (\\ud800)"),
        (
            '"body": "b", "external_id": "t3_b"',
            "line 1: the key &quot;external_id&quot; appears twice",
        ),
    ],
)
def test_an_upload_that_json_cannot_hold_is_refused_as_the_files_fault(
    role_client, upload_dir, tmp_path, field, expected
):
    client = role_client(Role.RESEARCHER)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"external_id": "t3_a", "subreddit": "privacy", "title": "t", '
        f'"created_utc": "2023-05-01T10:00:00+00:00", "topics": "accounts", {field}}}\n'
    )
    upload(client, bad)
    batch = ImportBatch.objects.get()
    import_posts_task(batch.pk)
    text = client.get(reverse("admin:questions_importbatch_progress", args=[batch.pk])).text
    assert "bad.jsonl was not imported (nothing was changed)" in text
    assert expected in text
    assert "not because of the file" not in text
    assert SourcePost.objects.count() == 0


@pytest.mark.django_db
def test_the_progress_page_reads_progress_recorded_during_the_import(role_client):
    from apps.questions.services.imports import import_progress_record

    client = role_client(Role.RESEARCHER)
    batch = ImportBatch.objects.create(
        filename="big.csv",
        sha256="0" * 64,
        file_format="csv",
        size_bytes=1000,
        status=ImportStatus.IMPORTING,
    )
    import_progress_record(batch_id=batch.pk, bytes_read=250, total=1000, rows=1234)
    url = reverse("admin:questions_importbatch_progress", args=[batch.pk])
    fragment = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "25% of the file read" in fragment and "1234 posts checked" in fragment
    assert 'value="25"' in fragment


@pytest.mark.django_db
def test_the_post_list_counts_no_rows_unless_searched(role_client):
    client = role_client(Role.RESEARCHER)
    post = posts_make(3)[0]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE questions_sourcepost")  # as every import ends
    url = reverse("admin:questions_sourcepost_changelist")
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert not [q for q in queries if "COUNT(" in q["sql"].upper() and "sourcepost" in q["sql"]]
    found = client.get(url, {"q": post.external_id}).content.decode()
    assert post.external_id in found
    assert client.get(url, {"q": post.external_id[:-1]}).context["cl"].result_count == 0
    detail = client.get(reverse("admin:questions_sourcepost_change", args=[post.pk]))
    assert detail.status_code == 200 and "accounts" in detail.content.decode()


@pytest.mark.django_db
def test_researchers_add_and_rename_topics_but_cannot_delete_one_in_use(role_client):
    client = role_client(Role.RESEARCHER)
    response = client.post(
        reverse("admin:questions_topic_add"), {"name": "Smart home devices", "order": 10}
    )
    assert response.status_code == 302
    added = Topic.objects.get(name="Smart home devices")
    assert added.slug == "smart-home-devices"
    client.post(
        reverse("admin:questions_topic_change", args=[added.pk]),
        {"name": "Smart homes", "order": 10},
    )
    added.refresh_from_db()
    assert added.name == "Smart homes" and added.slug == "smart-home-devices"
    used = posts_make(1, topics=("scams",))[0]
    scams = Topic.objects.get(pk=used.topic_ids[0])
    assert (
        client.post(
            reverse("admin:questions_topic_delete", args=[scams.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert Topic.objects.filter(pk=scams.pk).exists()
    client.post(reverse("admin:questions_topic_delete", args=[added.pk]), {"post": "yes"})
    assert not Topic.objects.filter(pk=added.pk).exists()


@pytest.mark.django_db
def test_exclusion_reasons_are_added_and_deactivated(role_client):
    client = role_client(Role.RESEARCHER)
    client.post(
        reverse("admin:questions_exclusionreason_add"),
        {"text": "Spam", "order": 20, "active": "on"},
    )
    reason = ExclusionReason.objects.get(text="Spam")
    client.post(
        reverse("admin:questions_exclusionreason_change", args=[reason.pk]),
        {"text": "Spam or advertising", "order": 1},
    )
    reason.refresh_from_db()
    assert reason.text == "Spam or advertising" and not reason.active and reason.order == 1


@pytest.mark.django_db
def test_quota_settings_are_edited_never_added_or_deleted(role_client):
    client = role_client(Role.RESEARCHER)
    row = QuotaSettings.objects.get()
    response = client.get(reverse("admin:questions_quotasettings_changelist"))
    assert response["Location"] == reverse("admin:questions_quotasettings_change", args=[row.pk])
    assert client.get(reverse("admin:questions_quotasettings_add")).status_code == 403
    client.post(
        reverse("admin:questions_quotasettings_change", args=[row.pk]),
        {"target_per_topic": 60, "minimum_per_stratum": 12},
    )
    row.refresh_from_db()
    assert (row.target_per_topic, row.minimum_per_stratum) == (60, 12)
    assert (
        client.post(
            reverse("admin:questions_quotasettings_delete", args=[row.pk]), {"post": "yes"}
        ).status_code
        == 403
    )


def test_an_upload_is_imported_by_a_real_worker(route_to_worker, role_client, upload_dir):
    route_to_worker(import_posts_task)
    client = role_client(Role.RESEARCHER)
    upload(client)
    batch = ImportBatch.objects.get()

    def finished():
        batch.refresh_from_db()
        return batch.status in (ImportStatus.DONE, ImportStatus.REFUSED)

    assert wait_until(finished, timeout=60)
    assert batch.status == ImportStatus.DONE, batch.problems
    assert SourcePost.objects.count() == 300
    assert not Path(batch.upload_path).exists()
