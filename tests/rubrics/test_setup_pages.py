"""Importing rubrics on the researcher's page: a good file previewed then imported with its
counts, a bad one refused with every problem listed by file, line and field, nothing stored;
researchers only."""

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.models import Question
from apps.rubrics.models import Rubric, RubricImport

QUESTIONS = (
    Path(__file__).resolve().parents[2] / "apps" / "questions" / "fixtures" / "questions.json"
)
IMPORT = reverse("rubrics:import")
OPTIONS = {"points_mapping": "refuse", "conversation": "refuse", "default_topic": ""}


def two_questions() -> bytes:
    data = json.loads(QUESTIONS.read_text())
    data["questions"] = data["questions"][:2]
    return json.dumps(data).encode()


def hb_line(prompt_id: str, **criterion) -> str:
    return json.dumps(
        {
            "prompt_id": prompt_id,
            "prompt": [{"role": "user", "content": "Someone took over my email. What now?"}],
            "rubrics": [{"criterion": "Says to reset the password.", "points": 5, **criterion}],
            "example_tags": ["theme:compromise"],
        }
    )


def upload(client, name: str, content: bytes, fmt: str):
    file = SimpleUploadedFile(name, content)
    return client.post(IMPORT, {"file": file, "format": fmt, **OPTIONS})


@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER])
def test_only_researchers_reach_the_import_pages(role_client, role, researcher):
    saved = RubricImport.objects.create(
        filename="r.json", format="assay", content=two_questions().decode(), uploaded_by=researcher
    )
    client = role_client(role)
    for url in (IMPORT, reverse("rubrics:import_preview", args=[saved.pk])):
        assert Client().get(url)["Location"].startswith(reverse("login"))  # signed out
        expected = 200 if role == Role.RESEARCHER else 403
        assert client.get(url).status_code == expected, url
    if role != Role.RESEARCHER:
        upload(client, "more.json", two_questions(), "assay")
        client.post(reverse("rubrics:import_preview", args=[saved.pk]))
        assert RubricImport.objects.count() == 1 and not Rubric.objects.exists()


@pytest.mark.django_db
def test_a_good_file_is_previewed_then_imported_with_its_counts(role_client):
    client = role_client(Role.RESEARCHER)
    response = upload(client, "two.json", two_questions(), "assay")
    saved = RubricImport.objects.get()
    preview = reverse("rubrics:import_preview", args=[saved.pk])
    assert response.status_code == 302 and response["Location"] == preview
    assert not Rubric.objects.exists()  # nothing is written before the preview is confirmed
    page = client.post(preview, follow=True).text
    assert "Imported 2 rubric(s) as drafts (2 new question(s)); 0 already matched" in page
    assert Rubric.objects.count() == 2
    assert "two.json" in client.get(IMPORT).text  # among the recent uploads


@pytest.mark.django_db
def test_a_bad_file_is_refused_listing_each_problem_by_file_line_and_field(role_client):
    client = role_client(Role.RESEARCHER)
    content = "\n".join(
        [hb_line("hb-1"), hb_line("hb-2", tags=3), hb_line("hb-3", points="five")]
    ).encode()
    response = upload(client, "bad<i>.jsonl", content, "healthbench")
    page = response.text
    assert response.status_code == 422
    assert "bad&lt;i&gt;.jsonl was not imported (nothing was changed):" in page
    assert "bad<i>" not in page
    assert (
        "<li>bad&lt;i&gt;.jsonl line 2 (&#x27;hb-2&#x27;), rubrics[0], field &quot;tags&quot;: "
        "must be a list of tags, found 3</li>" in page
    )
    assert (
        "<li>bad&lt;i&gt;.jsonl line 3 (&#x27;hb-3&#x27;), rubrics[0], field &quot;points&quot;"
        in (page)
    )
    assert not RubricImport.objects.exists() and not Rubric.objects.exists()
    assert Question.objects.count() == 0
