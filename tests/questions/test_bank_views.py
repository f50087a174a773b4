"""The bank's page and its CSV and assay-questions/1 exports, as researchers use them."""

import csv
import io
import json

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.models import LabelStatus, Question, Topic
from apps.questions.services import questions_import
from tests.conftest import ROLES
from tests.factories import question_make, user_with_role

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def csv_of(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


@pytest.fixture
def signed_in(client, researcher):
    client.force_login(researcher)
    return client


def test_the_bank_lists_questions_with_links_to_the_console(signed_in):
    question = question_make(topic="scams", text="Is this text from my bank a scam?")
    response = signed_in.get(reverse("questions:bank"))
    page = response.content.decode()
    assert response.status_code == 200 and "<h1>Question bank</h1>" in page
    assert reverse("admin:questions_question_change", args=[question.pk]) in page
    assert "Is this text from my bank a scam?" in page


def test_the_bank_filters_and_swaps_only_its_results_for_htmx(signed_in):
    question_make(topic="scams", external_id="scams-01")
    question_make(topic="accounts", external_id="accounts-01")
    scams = Topic.objects.get(name="scams")
    response = signed_in.get(reverse("questions:bank"), {"topic": scams.pk}, **HTMX)
    page = response.content.decode()
    assert "<h1>" not in page and 'id="bank-results"' in page
    assert "scams-01" in page and "accounts-01" not in page
    assert f"{reverse('questions:bank-csv')}?topic={scams.pk}" in page


def test_the_bank_filters_by_each_need_and_shows_both_labels(signed_in):
    for key, sensemaking, guidance in [
        ("both", True, True),
        ("sense", True, False),
        ("guide", False, True),
        ("neither", False, False),
    ]:
        question_make(
            external_id=f"need-{key}",
            needs_sensemaking=sensemaking,
            needs_guidance=guidance,
            label_status=LabelStatus.VERIFIED,
        )
    question_make(external_id="need-unlabelled")

    def shown(**params):
        page = signed_in.get(reverse("questions:bank"), params, **HTMX).content.decode()
        return sorted(
            k for k in ("both", "sense", "guide", "neither", "unlabelled") if f">need-{k}<" in page
        )

    assert shown(sensemaking="yes") == ["both", "sense"]
    assert shown(sensemaking="no") == ["guide", "neither"]
    assert shown(guidance="yes") == ["both", "guide"]
    assert shown(sensemaking="yes", guidance="yes") == ["both"]
    assert shown(sensemaking="no", guidance="no") == ["neither"]
    page = signed_in.get(reverse("questions:bank"), {"sensemaking": "yes", "guidance": "yes"})
    page = page.content.decode()
    assert '<th scope="col">Sensemaking</th><th scope="col">Guidance</th>' in page
    row = page[page.index(">need-both<") :].split("</tr>")[0]
    assert row.count("<td>Yes</td>") == 2
    assert f"{reverse('questions:bank-csv')}?sensemaking=yes&amp;guidance=yes" in page


def test_the_bank_pages_fifty_questions_at_a_time_keeping_the_filters(signed_in):
    for _ in range(51):
        question_make(topic="scams")
    scams = Topic.objects.get(name="scams")
    first = signed_in.get(reverse("questions:bank"), {"topic": scams.pk}).content.decode()
    assert first.count('data-testid="question-row"') == 50
    assert f"?topic={scams.pk}&amp;page=2" in first
    second = signed_in.get(reverse("questions:bank"), {"topic": scams.pk, "page": 2})
    assert second.content.decode().count('data-testid="question-row"') == 1


def test_the_bank_shows_the_metric_means_beside_the_published_ones(signed_in):
    question_make(rewrite_cosine=0.5, rewrite_trigram_overlap=0.02)
    question_make(rewrite_cosine=0.7)
    page = signed_in.get(reverse("questions:bank")).content.decode()
    assert '<td data-testid="mean-cosine">0.60</td>' in page
    assert '<td data-testid="mean-trigram">0.02</td>' in page
    assert "TfidfVectorizer, fitted on the bank's originals and rewrites" in page
    assert "the Jaccard index of the sets of lower-cased word 3-grams" in page
    assert "0.56" in page and "0.04" in page


def test_the_csv_neutralises_a_formula_and_honours_the_filters(signed_in, researcher):
    question_make(
        topic="scams",
        external_id="scams-01",
        text='=HYPERLINK("http://x")',
        needs_sensemaking=True,
        needs_guidance=True,
        label_status=LabelStatus.LABELLED,
        labelled_by=researcher,
    )
    question_make(topic="accounts", external_id="accounts-01")
    scams = Topic.objects.get(name="scams")
    response = signed_in.get(reverse("questions:bank-csv"), {"topic": scams.pk})
    assert response["Content-Type"].startswith("text/csv")
    rows = csv_of(response)
    assert [r["id"] for r in rows] == ["scams-01"]
    assert rows[0]["text"] == '\'=HYPERLINK("http://x")'
    assert rows[0]["label_status"] == "labelled"
    assert rows[0]["labelled_by"] == researcher.get_username()
    assert {
        "length_bucket",
        "needs_sensemaking",
        "needs_guidance",
        "verified_by",
        "rewrite_model",
        "rewrite_prompt_version",
        "rewrite_cosine",
    } <= set(rows[0])
    assert "need_type" not in rows[0]
    assert (rows[0]["needs_sensemaking"], rows[0]["needs_guidance"]) == ("true", "true")
    everything = csv_of(signed_in.get(reverse("questions:bank-csv")))
    assert sorted(r["id"] for r in everything) == ["accounts-01", "scams-01"]


def test_the_json_export_round_trips_through_the_import_into_an_empty_bank(signed_in, tmp_path):
    question_make(
        topic="scams",
        external_id="scams-01",
        text="Is this a scam?",
        needs_guidance=True,
        mentions_prior_attempt=True,
        label_status=LabelStatus.VERIFIED,
    )
    question_make(
        topic="harassment",
        external_id="harassment-01",
        text="Someone follows me.",
        needs_sensemaking=True,
        needs_guidance=True,
        label_status=LabelStatus.RESOLVED,
    )
    question_make(topic="accounts", external_id="accounts-01", text="Left out by the filter.")
    response = signed_in.get(reverse("questions:bank-json"), {"label_status": "verified"})
    doc = json.loads(response.content)
    assert [q["id"] for q in doc["questions"]] == ["scams-01"]
    response = signed_in.get(reverse("questions:bank-json"))
    assert response["Content-Disposition"].startswith("attachment;")

    def labels():
        return {
            q.external_id: (
                q.topic.name,
                q.text,
                q.mentions_prior_attempt,
                q.needs_sensemaking,
                q.needs_guidance,
            )
            for q in Question.objects.select_related("topic")
        }

    before = labels()
    Question.objects.all().delete()
    report = questions_import(content=response.content, filename="bank.json")
    assert len(report.created) == 3
    assert labels() == before
    assert Question.objects.get(external_id="accounts-01").label_status == "unlabelled"


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "anonymous"))
@pytest.mark.parametrize("name", ["bank", "bank-csv", "bank-json"])
def test_only_researchers_reach_the_bank_and_its_exports(client, role, name):
    question_make(external_id="secret-01")
    if role is not None:
        client.force_login(user_with_role(role))
    response = client.get(reverse(f"questions:{name}"))
    if role is None:
        assert response.status_code == 302 and response.url.startswith(reverse("login"))
    elif role == Role.RESEARCHER:
        assert response.status_code == 200
    else:
        assert response.status_code == 403
        assert b"secret-01" not in response.content
