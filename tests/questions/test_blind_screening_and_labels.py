"""Screening and labelling stay blind wherever they can be read: a researcher who has still
to screen a post sees no other screener's decision on it, and one who has still to verify a
question's labels sees none of them, in the console's lists, their filters and searches, the
rows' pages and the exports, and in the bank's page, its CSV and the API; once both are in,
everyone sees them."""

import csv
import io
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.models import Question, QuestionLabel, ScreeningDecision
from apps.questions.services import screening_decide
from apps.questions.services.strata import question_label, question_label_verify
from tests.api.builders import bearer, token_for
from tests.factories import exclusion_reasons_seeded, question_make, sampled_make, user_with_role

pytestmark = pytest.mark.django_db

NOTE = "Ana's own reasons: the post reads like a sales pitch"


@pytest.fixture
def ana(db):
    return user_with_role(Role.RESEARCHER, username="screener-ana")


@pytest.fixture
def ben(db):
    return user_with_role(Role.RESEARCHER, username="screener-ben")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def exported(client, changelist: str) -> list[dict]:
    every = {"action": "export_as_csv", "select_across": "1", "_selected_action": ["0"]}
    response = client.post(reverse(changelist), every)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


# --- screening ---------------------------------------------------------------------------


@pytest.fixture
def decided(ana):
    """A post Ana has excluded, with a note, that nobody else has screened yet."""
    reason = exclusion_reasons_seeded()[0]
    (sampled,) = sampled_make(1)
    return screening_decide(
        sampled=sampled, researcher=ana, include=False, reason=reason, note=NOTE
    )


DECISIONS = "admin:questions_screeningdecision_changelist"


def decisions_seen(user, decision) -> dict[str, bool]:
    """What `user` reads of `decision` through each of the console's routes."""
    client = signed_in(user)
    listed = client.get(reverse(DECISIONS)).content.decode()
    searched = client.get(reverse(DECISIONS), {"q": "sales pitch"}).content.decode()
    filtered = client.get(reverse(DECISIONS), {"include__exact": "0"}).content.decode()
    page = client.get(reverse("admin:questions_screeningdecision_change", args=[decision.pk]))
    assert page.status_code in (200, 302)  # 302: "does not exist", back to the index
    rows = exported(client, DECISIONS)
    return {
        "list": 'class="field-include"' in listed and "screener-ana" in listed,
        "search": 'class="field-include"' in searched,
        "filter": 'class="field-include"' in filtered,
        "page": page.status_code == 200 and NOTE in unescape(page.content.decode()),
        "export": any(r["note"] == NOTE and r["include"] == "false" for r in rows),
    }


def test_a_researcher_who_has_not_screened_a_post_sees_no_decision_on_it(ben, decided):
    assert not any(decisions_seen(ben, decided).values())


def test_a_screener_sees_their_own_decision_before_the_other_is_in(ana, decided):
    assert all(decisions_seen(ana, decided).values())


def test_every_researcher_sees_both_decisions_once_both_are_in(ana, ben, decided):
    screening_decide(sampled=decided.sampled, researcher=ben, include=True)
    third = user_with_role(Role.RESEARCHER, username="screener-cleo")
    for user in (ben, third):
        assert all(decisions_seen(user, decided).values()), user
        rows = exported(signed_in(user), DECISIONS)
        assert sorted(r["researcher_username"] for r in rows) == ["screener-ana", "screener-ben"]
    assert ScreeningDecision.objects.count() == 2


# --- strata labels -----------------------------------------------------------------------


@pytest.fixture
def labelled(ana):
    """A question Ana has labelled (sensemaking yes, guidance no, prior attempt yes), which
    waits for another researcher to verify it."""
    question = question_make(external_id="q-blind")
    return question_label(
        question=question,
        researcher=ana,
        mentions_prior_attempt=True,
        needs_sensemaking=True,
        needs_guidance=False,
    )


QUESTIONS = "admin:questions_question_changelist"
LABELS = "admin:questions_questionlabel_changelist"


def row_of(html: str, external_id: str) -> str:
    """The changelist's row of a question (from its link to the row's end)."""
    start = html.index(f">{external_id}</a>")
    return html[start : html.index("</tr>", start)]


def labels_seen(user, question) -> dict[str, bool]:
    """What `user` reads of `question`'s labels through each of the console's routes."""
    client = signed_in(user)
    listed = row_of(client.get(reverse(QUESTIONS)).content.decode(), question.external_id)
    filtered = client.get(reverse(QUESTIONS), {"needs_sensemaking": "1"}).content.decode()
    page = client.get(reverse("admin:questions_question_change", args=[question.pk]))
    assert page.status_code == 200
    (row,) = [r for r in exported(client, QUESTIONS) if r["external_id"] == question.external_id]
    label = QuestionLabel.objects.get(question=question, researcher__username="screener-ana")
    label_page = client.get(reverse("admin:questions_questionlabel_change", args=[label.pk]))
    assert label_page.status_code in (200, 302)
    label_rows = exported(client, LABELS)
    return {
        "list": 'alt="True"' in listed and 'alt="False"' in listed,
        "filter": f">{question.external_id}</a>" in filtered,
        "page": 'name="needs_sensemaking"' in page.content.decode(),
        "export": (row["mentions_prior_attempt"], row["needs_sensemaking"], row["needs_guidance"])
        == ("true", "true", "false"),
        "label list": "screener-ana" in client.get(reverse(LABELS)).content.decode(),
        "label page": label_page.status_code == 200,
        "label export": any(r["researcher_username"] == "screener-ana" for r in label_rows),
    }


def test_a_researcher_who_has_not_verified_a_question_sees_none_of_its_labels(ben, labelled):
    seen = labels_seen(ben, labelled)
    assert not any(seen.values()), seen


def test_the_labeller_sees_their_own_labels_while_they_wait(ana, labelled):
    seen = labels_seen(ana, labelled)
    assert all(seen.values()), seen


def test_every_researcher_sees_the_labels_once_they_are_verified(ana, ben, labelled):
    question_label_verify(
        question=labelled,
        researcher=ben,
        mentions_prior_attempt=True,
        needs_sensemaking=True,
        needs_guidance=False,
    )
    for user in (ben, user_with_role(Role.RESEARCHER, username="screener-cleo")):
        seen = labels_seen(user, labelled)
        assert all(seen.values()), (user, seen)


def test_a_question_page_without_the_labels_leaves_them_as_they_are(ben, labelled):
    client = signed_in(ben)
    url = reverse("admin:questions_question_change", args=[labelled.pk])
    data = {
        "external_id": labelled.external_id,
        "topic": labelled.topic_id,
        "text": "Reworded.",
        "original_text": "",
        "length_bucket": labelled.length_bucket,
        "labelled_by": labelled.labelled_by_id,
        "verified_by": "",
        "_save": "Save",
    }
    assert client.post(url, data).status_code == 302
    saved = Question.objects.get(pk=labelled.pk)
    assert saved.text == "Reworded."
    assert (saved.mentions_prior_attempt, saved.needs_sensemaking, saved.needs_guidance) == (
        True,
        True,
        False,
    )


def test_a_label_lookup_in_the_query_string_is_refused(ben, labelled):
    client = signed_in(ben)
    for lookup in ("needs_sensemaking__exact", "needs_guidance__in", "mentions_prior_attempt__gt"):
        response = client.get(reverse(QUESTIONS), {lookup: "1"})
        assert response.status_code == 400, lookup


# --- the bank's page, its CSV and the API read the labels the same way ------------------------


def bank_seen(user, question) -> dict[str, bool]:
    client = signed_in(user)
    page = client.get(reverse("questions:bank"), {"q": question.external_id}).content.decode()
    (row,) = page.split('data-testid="question-row"')[1:]
    cells = [cell.split("</td>")[0] for cell in row.split("<td>")[5:8]]
    filtered = client.get(reverse("questions:bank"), {"sensemaking": "yes"}).content.decode()
    response = client.get(reverse("questions:bank-csv"), {"q": question.external_id})
    (exported_row,) = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    api = Client(**bearer(token_for(user)))
    (item,) = api.get("/api/v1/questions/", {"external_id": question.external_id}).json()["results"]
    api_filtered = api.get("/api/v1/questions/", {"needs_sensemaking": "true"}).json()
    return {
        "page": cells == ["Yes", "Yes", "No"],
        "filter": f">{question.external_id}</a>" in filtered,
        "csv": (
            exported_row["mentions_prior_attempt"],
            exported_row["needs_sensemaking"],
            exported_row["needs_guidance"],
        )
        == ("true", "true", "false"),
        "api": (item["mentions_prior_attempt"], item["needs_sensemaking"], item["needs_guidance"])
        == (True, True, False),
        "api filter": question.external_id in {q["external_id"] for q in api_filtered["results"]},
    }


def test_the_bank_and_the_api_show_no_labels_still_to_verify_but_to_their_labeller(
    ana, ben, labelled
):
    seen = bank_seen(ben, labelled)
    assert not any(seen.values()), seen
    seen = bank_seen(ana, labelled)
    assert all(seen.values()), seen
    question_label_verify(
        question=labelled,
        researcher=ben,
        mentions_prior_attempt=True,
        needs_sensemaking=True,
        needs_guidance=False,
    )
    seen = bank_seen(ben, labelled)
    assert all(seen.values()), seen
