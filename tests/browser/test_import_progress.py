"""Importing candidate posts from the console in Chromium, through a real worker: the page
shows the upload's progress, then follows the import to its result; a refused file shows its
report on the same page, and nothing is stored."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from apps.accounts.roles import Role
from apps.questions.models import ImportBatch, ImportStatus, SourcePost
from tests.browser.sessions import signed_in
from tests.factories import user_with_role
from workers.questions import import_posts_task

pytestmark = pytest.mark.worker

FIXTURE = Path(__file__).resolve().parents[2] / "apps/demo/data/candidate-posts-300.csv"
IMPORT_TIMEOUT_MS = 120_000  # generous: the machine may be busy; this is no bound on speed


@pytest.fixture
def upload_dir(settings, tmp_path):
    settings.POST_UPLOAD_DIR = str(tmp_path / "uploads")
    return Path(settings.POST_UPLOAD_DIR)


def test_a_researcher_uploads_posts_and_watches_them_imported(
    new_context, live_server, route_to_worker, upload_dir, tmp_path, screenshot
):
    route_to_worker(import_posts_task)
    researcher = user_with_role(Role.RESEARCHER, username="rahul")
    page = signed_in(new_context, live_server, researcher).new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    page.goto("/admin/questions/importbatch/upload/")
    page.get_by_label("CSV or JSON Lines file of candidate posts").set_input_files(FIXTURE)
    page.get_by_role("button", name="Upload and import").click()
    # The upload's bar is shown while the file goes up; then the import's page follows it.
    expect(page.locator("#import-progress")).to_contain_text(
        "Imported 300 posts from candidate-posts-300.csv", timeout=IMPORT_TIMEOUT_MS
    )
    expect(page.get_by_role("table", name="Posts per topic")).to_contain_text("platform actions")
    expect(page.locator("#upload-progress")).to_have_count(0)
    batch = ImportBatch.objects.get()
    assert (batch.status, batch.imported_by) == (ImportStatus.DONE, researcher)
    assert SourcePost.objects.filter(batch=batch).count() == 300
    screenshot(page, "imported")

    # A file with a problem: the same page shows the report, and nothing is stored.
    bad = tmp_path / "posts-bad.csv"
    bad.write_text(
        "external_id,subreddit,title,body,created_utc,topics\n"
        "t3_new1,privacy,A title,A body?,2023-05-01T10:00:00+00:00,gardening\n"
    )
    page.goto("/admin/questions/importbatch/upload/")
    page.get_by_label("CSV or JSON Lines file of candidate posts").set_input_files(bad)
    page.get_by_role("button", name="Upload and import").click()
    report = page.locator("#import-progress")
    expect(report).to_contain_text("posts-bad.csv was not imported", timeout=IMPORT_TIMEOUT_MS)
    expect(report).to_contain_text('line 2, field "topics"')
    assert SourcePost.objects.count() == 300
    assert errors == []
