"""The question bank's setup pages: importing candidate posts (the upload, its import's page
and the history of imports), importing questions, and the bank's topics, for researchers only."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.models import ImportBatch, ImportStatus, Question, SourcePost, Topic
from tests.factories import posts_make
from workers.questions import import_posts_task

FIXTURE = Path(__file__).resolve().parents[2] / "apps/demo/data/candidate-posts-300.csv"
UPLOAD = reverse("questions:setup-posts")
QUESTIONS = reverse("questions:setup-questions")
QUESTIONS_FILE = Path(__file__).resolve().parents[2] / "apps/questions/fixtures/questions.json"
TOPICS = reverse("questions:setup-topics")
HX = {"HX-Request": "true"}
BAD_POSTS = (
    b"external_id,subreddit,title,body,created_utc,topics\n"
    b"t3_a,privacy,t,b,not a date,accounts\n"
    b"t3_b,privacy,t,b,2023-05-01T10:00:00+00:00,gardening\n"
)


@pytest.fixture
def upload_dir(settings, tmp_path):
    settings.POST_UPLOAD_DIR = str(tmp_path / "uploads")
    return Path(settings.POST_UPLOAD_DIR)


def urls() -> list[str]:
    batch = posts_make(1)[0].batch
    topic = Topic.objects.first()
    return [
        UPLOAD,
        reverse("questions:setup-post-import", args=[batch.pk]),
        QUESTIONS,
        TOPICS,
        reverse("questions:setup-topic", args=[topic.pk]),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER])
def test_only_researchers_reach_the_setup_pages(role_client, role, upload_dir):
    client = role_client(role)
    topics_before = list(Topic.objects.values_list("name", flat=True))
    for url in urls():
        assert Client().get(url)["Location"].startswith(reverse("login"))  # signed out
        expected = 200 if role == Role.RESEARCHER else 403
        assert client.get(url).status_code == expected, url
    if role != Role.RESEARCHER:
        client.post(UPLOAD, {"file": SimpleUploadedFile("p.csv", BAD_POSTS)})
        client.post(TOPICS, {"name": "Smart homes", "order": 10})
        with QUESTIONS_FILE.open("rb") as f:
            client.post(QUESTIONS, {"file": f})
        assert not Question.objects.exists()
        assert ImportBatch.objects.count() == 1 and not upload_dir.exists()
        assert list(Topic.objects.values_list("name", flat=True)) == topics_before


@pytest.mark.django_db
def test_a_good_file_is_imported_and_its_page_and_the_history_say_so(
    role_client, upload_dir, django_capture_on_commit_callbacks
):
    client = role_client(Role.RESEARCHER)
    with django_capture_on_commit_callbacks(execute=False) as queued, FIXTURE.open("rb") as f:
        response = client.post(UPLOAD, {"file": f})
    batch = ImportBatch.objects.get()
    here = reverse("questions:setup-post-import", args=[batch.pk])
    assert response.status_code == 302 and response["Location"] == here
    assert len(queued) == 1 and batch.status == ImportStatus.QUEUED
    waiting = client.get(here).text
    assert '<h1 id="import-title">Importing candidate-posts-300.csv</h1>' in waiting
    assert "waiting for a worker" in waiting and 'hx-trigger="every 1s"' in waiting

    import_posts_task(batch.pk)
    fragment = client.get(here, headers=HX).text
    assert "<html" not in fragment and "hx-trigger" not in fragment  # polling stops
    assert '<h1 id="import-title" hx-swap-oob="true">Imported candidate-posts-300.csv</h1>' in (
        fragment
    )
    assert "<title>Imported candidate-posts-300.csv · Assay</title>" in fragment
    assert "Imported 300 posts from candidate-posts-300.csv; none skipped, no errors" in fragment
    page = client.get(here).text
    assert "<title>Imported candidate-posts-300.csv · Assay</title>" in page
    assert "<caption>Posts per topic</caption>" in page
    assert SourcePost.objects.filter(batch=batch).count() == 300
    history = client.get(UPLOAD).text
    assert f'href="{here}">candidate-posts-300.csv</a>' in history and "Imported" in history


@pytest.mark.django_db
def test_a_bad_file_is_refused_naming_file_line_and_field_and_nothing_is_stored(
    role_client, upload_dir
):
    client = role_client(Role.RESEARCHER)
    client.post(UPLOAD, {"file": SimpleUploadedFile("broken<b>-posts.csv", BAD_POSTS)})
    batch = ImportBatch.objects.get()
    import_posts_task(batch.pk)
    here = reverse("questions:setup-post-import", args=[batch.pk])
    page = client.get(here).text
    assert '<h1 id="import-title">broken&lt;b&gt;-posts.csv was not imported</h1>' in page
    assert "Importing" not in page and "broken<b>" not in page
    assert "broken&lt;b&gt;-posts.csv was not imported (nothing was changed):" in page
    # Every problem is an item of the list, by line and field.
    assert "<li>line 2, field &quot;created_utc&quot;" in page
    assert "<li>line 3, field &quot;topics&quot;: unknown topic &#x27;gardening&#x27;" in page
    fragment = client.get(here, headers=HX).text
    assert 'hx-swap-oob="true">broken&lt;b&gt;-posts.csv was not imported</h1>' in fragment
    assert SourcePost.objects.count() == 0
    assert ImportBatch.objects.get().status == ImportStatus.REFUSED
    assert "Refused" in client.get(UPLOAD).text


@pytest.mark.django_db
def test_the_consoles_import_page_is_no_longer_titled_importing_once_refused(
    role_client, upload_dir
):
    client = role_client(Role.RESEARCHER)
    client.post(UPLOAD, {"file": SimpleUploadedFile("broken-posts.csv", BAD_POSTS)})
    batch = ImportBatch.objects.get()
    import_posts_task(batch.pk)
    url = reverse("admin:questions_importbatch_progress", args=[batch.pk])
    page = client.get(url).text
    assert "Importing broken-posts.csv" not in page
    assert '<h1 id="import-title">broken-posts.csv was not imported</h1>' in page
    assert "<title>broken-posts.csv was not imported | Assay console</title>" in page


@pytest.mark.django_db
def test_an_upload_form_without_a_file_is_refused_on_its_field(role_client, upload_dir):
    response = role_client(Role.RESEARCHER).post(UPLOAD, {})
    assert response.status_code == 422 and "This field is required." in response.text
    assert not ImportBatch.objects.exists()


@pytest.mark.django_db
def test_researchers_add_and_rename_topics_on_their_page(role_client):
    client = role_client(Role.RESEARCHER)
    response = client.post(TOPICS, {"name": "  <i>Smart</i>   homes ", "order": 10})
    assert response.status_code == 302
    added = Topic.objects.get(name="<i>Smart</i> homes")
    assert added.slug == "ismarti-homes"
    listing = client.get(TOPICS).text
    assert "&lt;i&gt;Smart&lt;/i&gt; homes" in listing and "<i>Smart</i>" not in listing

    edit = reverse("questions:setup-topic", args=[added.pk])
    assert "cannot be deleted" not in client.get(edit).text
    client.post(edit, {"name": "Smart homes", "order": 11})
    added.refresh_from_db()
    assert (added.name, added.slug, added.order) == ("Smart homes", "ismarti-homes", 11)

    used = Topic.objects.get(pk=posts_make(1, topics=("scams",))[0].topic_ids[0])
    assert "cannot be deleted" in client.get(reverse("questions:setup-topic", args=[used.pk])).text


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("scams; fraud", "A topic&#x27;s name cannot hold a semicolon (;)."),
        ("!!!", "Give the topic a name with letters or digits."),
        ("scams", "Topic with this Name already exists."),
    ],
)
def test_a_topic_that_breaks_a_rule_is_refused_on_its_field(role_client, name, message):
    client = role_client(Role.RESEARCHER)
    before = list(Topic.objects.values_list("pk", "name", "slug"))
    response = client.post(TOPICS, {"name": name, "order": 1})
    assert response.status_code == 422 and message in response.text
    scams = Topic.objects.get(name="scams")
    rename = client.post(reverse("questions:setup-topic", args=[scams.pk]), {"name": name})
    assert rename.status_code == 422
    assert list(Topic.objects.values_list("pk", "name", "slug")) == before


@pytest.mark.django_db
def test_the_home_page_sends_researchers_to_the_import_page_not_the_console(role_client):
    page = role_client(Role.RESEARCHER).get(reverse("home")).text
    assert f'href="{UPLOAD}">Import posts</a>' in page
    assert f'href="{TOPICS}">Topics</a>' in page
    assert reverse("admin:questions_importbatch_changelist") not in page


@pytest.mark.django_db
def test_researchers_import_questions_on_their_page_and_a_bad_file_is_listed_problem_by_problem(
    role_client,
):
    client = role_client(Role.RESEARCHER)
    doc = json.loads(QUESTIONS_FILE.read_text())
    doc["questions"][0]["topic"] = "Gardening"
    doc["questions"][3]["text"] = ""
    bad = SimpleUploadedFile("<i>bank.json", json.dumps(doc).encode())
    refused = client.post(QUESTIONS, {"file": bad})
    page = refused.text
    assert refused.status_code == 422 and not Question.objects.exists()
    assert "&lt;i&gt;bank.json was not imported (nothing was changed)" in page
    assert "<title>&lt;i&gt;bank.json was not imported" in page
    problems = re.findall(r"<li>(questions\[\d+\][^<]*)</li>", page)
    assert (
        len(problems) == 2
        and "[0] (&#x27;accounts-01&#x27;), field &quot;topic&quot;" in problems[0]
    )
    assert "[3] (&#x27;moderation-02&#x27;), field &quot;text&quot;" in problems[1]

    with QUESTIONS_FILE.open("rb") as f:
        response = client.post(QUESTIONS, {"file": f}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("questions:bank")
    assert Question.objects.count() == 18 and "18 question(s) imported" in response.text
