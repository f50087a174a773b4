"""Everything for a grading run as one ZIP: the sampling run's responses, the judgments and
the scores, each byte for byte its own CSV export, and a manifest of what made them; written
as it is read, for researchers only."""

import csv
import datetime as dt
import io
import json
import struct
import zipfile

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.accounts.roles import Role
from apps.grading.models import GradingMode, Judgment
from apps.grading.selectors.runs import SCORING_RULE
from apps.grading.services import grading_run_create
from apps.runs.models import Response
from apps.runs.services import sampling_run_create
from tests.factories import offline_model, question_make
from tests.grading.builders import answered_run, graded_run, judgment_made_error

pytestmark = pytest.mark.django_db

MEMBERS = ["responses.csv", "judgments.csv", "scores.csv", "method.csv", "manifest.json"]


@pytest.fixture
def graded(people, offline_provider_url):
    answered = answered_run(people, offline_provider_url, models=("offline-terse", "paid-one"))
    grader = offline_model(offline_provider_url, name="offline-grader")
    run = graded_run(answered, grader, params={"temperature": 0})
    # What a spreadsheet would run, in the three files.
    Judgment.objects.filter(pk=run.judgments.order_by("pk").first().pk).update(
        explanation='=HYPERLINK("http://x.test")'
    )
    Response.objects.filter(pk=answered.responses.order_by("pk").first().pk).update(
        text="+SUM(1,2)"
    )
    judgment_made_error(run.judgments.order_by("pk").last())  # one answer without a score
    return run


def body(response) -> bytes:
    assert response.status_code == 200 and response.streaming
    return b"".join(response.streaming_content)


def archive_of(client, run) -> tuple[bytes, zipfile.ZipFile]:
    response = client.get(reverse("grading:export_everything", args=[run.pk]))
    assert response["Content-Type"] == "application/zip"
    assert f'filename="grading-{run.pk}-everything.zip"' in response["Content-Disposition"]
    data = body(response)
    return data, zipfile.ZipFile(io.BytesIO(data))


def test_each_file_is_its_own_export_byte_for_byte(client, researcher, graded):
    client.force_login(researcher)
    _data, archive = archive_of(client, graded)
    assert archive.namelist() == MEMBERS
    assert archive.testzip() is None  # every CRC right
    singles = {
        "responses.csv": reverse("runs:export_responses", args=[graded.sampling_run_id]),
        "judgments.csv": reverse("grading:export_judgments", args=[graded.pk]),
        "scores.csv": reverse("grading:export_scores", args=[graded.pk]),
    }
    for name, url in singles.items():
        assert archive.read(name) == body(client.get(url)), name
    assert b"'=HYPERLINK" in archive.read("judgments.csv")
    assert b"'+SUM(1,2)" in archive.read("responses.csv")


def test_the_manifest_says_what_made_the_files_and_how_many_rows_each_holds(
    client, researcher, graded
):
    client.force_login(researcher)
    before = timezone.now()
    _data, archive = archive_of(client, graded)
    manifest = json.loads(archive.read("manifest.json"))
    sampling = graded.sampling_run
    assert manifest["grading_run"]["id"] == graded.pk
    assert manifest["grading_run"]["mode"] == graded.mode
    assert manifest["grading_run"]["params"] == {"temperature": 0}
    assert manifest["grader"]["litellm_model"] == graded.grader.litellm_model
    assert manifest["grader"]["offline_demo_model"] is True
    assert manifest["grader_prompt"] == {
        "id": graded.prompt.pk,
        "purpose": graded.prompt.purpose,
        "version": graded.prompt.version,
    }
    assert manifest["sampling_run"]["id"] == sampling.pk
    assert manifest["sampling_run"]["prompt"]["version"] == sampling.prompt.version
    assert {m["litellm_model"]: m["offline_demo_model"] for m in manifest["models"]} == {
        "openai/offline-terse": True,
        "openai/paid-one": False,
    }
    graded_rubrics = {
        (j.rubric.question.external_id, j.rubric_id, j.rubric.version)
        for j in Judgment.objects.filter(grading_run=graded).select_related("rubric__question")
    }
    assert {(r["question"], r["rubric_id"], r["version"]) for r in manifest["rubric_versions"]} == (
        graded_rubrics
    )
    answers = sampling.responses.count()
    scored = graded.scores.count()
    assert manifest["counts"] == {
        "responses": answers,
        "judgments": graded.judgments.count(),
        "scores": answers,
        "scored": scored,
        "missing": answers - scored,
    }
    assert manifest["counts"]["missing"] >= 1  # the answer whose judgment is an error
    for name in MEMBERS[:3]:  # each count is the file's rows (its header apart)
        rows = list(csv.reader(io.StringIO(archive.read(name).decode(), newline="")))
        assert len(rows) - 1 == manifest["counts"][name.removesuffix(".csv")]
    made_at = dt.datetime.fromisoformat(manifest["made_at"])
    assert before <= made_at <= timezone.now()
    assert manifest["made_by"] == researcher.username
    assert manifest["scoring_rule"] == SCORING_RULE
    assert set(manifest["files"]) == set(MEMBERS)


def test_the_archive_is_written_without_going_back(client, researcher, graded):
    """Each member's sizes follow its data (a data descriptor), in ZIP64 form: the writer
    never seeks, whatever a member's size."""
    client.force_login(researcher)
    data, archive = archive_of(client, graded)
    for info in archive.infolist():
        assert info.flag_bits & 0x08, info.filename  # sizes in a data descriptor
        local = data[info.header_offset : info.header_offset + 30]
        signature, _version, flags = struct.unpack("<IHH", local[:8])
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        extra = data[info.header_offset + 30 + name_length :][:extra_length]
        assert signature == 0x04034B50 and flags & 0x08
        assert struct.unpack("<H", extra[:2])[0] == 0x0001, info.filename  # the ZIP64 field


def test_the_run_page_links_the_archive_and_says_what_it_holds(client, researcher, graded):
    client.force_login(researcher)
    page = client.get(reverse("grading:run_detail", args=[graded.pk])).content.decode()
    assert reverse("grading:export_everything", args=[graded.pk]) in page
    assert "Everything for this run (ZIP)" in page and "manifest" in page


def test_only_researchers_download_the_archive(client, role_client, graded):
    url = reverse("grading:export_everything", args=[graded.pk])
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/login" in anonymous.url
    for role in (Role.EXPERT, Role.REVIEWER):
        refused = role_client(role).get(url)
        assert refused.status_code == 403 and not refused.streaming, role
    allowed = role_client(Role.RESEARCHER).get(url)
    assert allowed.status_code == 200 and allowed["Content-Type"] == "application/zip"


def test_a_run_with_nothing_graded_yet_gives_empty_files_and_zero_counts(client, researcher):
    model = offline_model("http://127.0.0.1:9", name="offline-grader")
    sampling = sampling_run_create(
        name="S", questions=[question_make()], models=[model], samples_per_item=1
    )
    run = grading_run_create(sampling_run=sampling, grader=model, mode=GradingMode.CHECKLIST)
    client.force_login(researcher)
    _data, archive = archive_of(client, run)
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["counts"] == {
        "responses": sampling.responses.count(),
        "judgments": 0,
        "scores": sampling.responses.count(),
        "scored": 0,
        "missing": sampling.responses.count(),
    }
    assert manifest["rubric_versions"] == [] and manifest["grading_run"]["status"] == "draft"
    assert archive.read("judgments.csv").decode().splitlines()[0].startswith("grading run,")
