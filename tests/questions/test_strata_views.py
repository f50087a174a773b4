"""The label queue, the disputes and the quota dashboard, as researchers use them."""

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.questions.models import LabelStatus, QuotaSettings
from apps.questions.services import strata as services
from tests.conftest import ROLES
from tests.factories import question_make, user_with_role

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
PRIOR_TEXT = "I already reset my password and turned on two-factor, but it keeps happening."


def post_labels(client, question, step, prior="yes", sensemaking="no", guidance="yes", **headers):
    data = {"step": step, "prior_attempt": prior, "sensemaking": sensemaking, "guidance": guidance}
    return client.post(reverse("questions:label", args=[question.pk]), data, **headers)


def label(question, researcher, prior=True, sensemaking=False, guidance=True):
    return services.question_label(
        question=question,
        researcher=researcher,
        mentions_prior_attempt=prior,
        needs_sensemaking=sensemaking,
        needs_guidance=guidance,
    )


def test_the_queue_shows_a_question_to_label_with_its_original(client, researcher):
    question = question_make(text=PRIOR_TEXT, original_text="My name is Jo, " + PRIOR_TEXT)
    client.force_login(researcher)
    response = client.get(reverse("questions:labels"))
    page = response.content.decode()
    assert response.status_code == 200
    assert PRIOR_TEXT in page and "My name is Jo" in page
    assert 'name="step" value="label"' in page
    assert question.external_id in page


def test_labelling_without_javascript_redirects_to_the_queue(client, researcher):
    question = question_make()
    client.force_login(researcher)
    response = post_labels(client, question, "label", sensemaking="yes", guidance="yes")
    assert response.status_code == 302 and response.url == reverse("questions:labels")
    question.refresh_from_db()
    assert question.label_status == LabelStatus.LABELLED and question.labelled_by == researcher
    assert (question.needs_sensemaking, question.needs_guidance) == (True, True)


def test_the_label_form_asks_each_need_as_its_own_yes_or_no(client, researcher):
    question_make()
    client.force_login(researcher)
    page = client.get(reverse("questions:labels")).content.decode()
    assert "Does the question ask for sensemaking?" in page
    assert "Does the question ask for guidance?" in page
    for name in ("sensemaking", "guidance"):
        assert f'name="{name}" value="yes"' in page and f'name="{name}" value="no"' in page
    assert "need_type" not in page


def test_a_verification_with_neither_need_verifies_a_label_of_neither(client, researcher):
    question = question_make()
    label(question, researcher, sensemaking=False, guidance=False)
    client.force_login(user_with_role(Role.RESEARCHER))
    post_labels(client, question, "verify", sensemaking="no", guidance="no")
    question.refresh_from_db()
    assert question.label_status == LabelStatus.VERIFIED
    assert (question.needs_sensemaking, question.needs_guidance) == (False, False)


def test_labelling_with_htmx_swaps_in_the_next_question(client, researcher):
    first, second = question_make(), question_make()
    client.force_login(researcher)
    response = post_labels(client, first, "label", **HTMX)
    page = response.content.decode()
    assert response.status_code == 200
    assert "<h1>" not in page and 'id="label-work"' in page
    assert f"Labels of {first} saved." in page
    assert reverse("questions:label", args=[second.pk]) in page


def test_the_verifiers_form_does_not_show_the_first_labels(client, researcher):
    question = question_make(text=PRIOR_TEXT)
    label(question, researcher, sensemaking=True, guidance=False)
    verifier = user_with_role(Role.RESEARCHER)
    client.force_login(verifier)
    page = client.get(reverse("questions:labels")).content.decode()
    assert 'name="step" value="verify"' in page
    assert 'name="sensemaking" value="yes"' in page  # offered as a choice ...
    assert "checked" not in page  # ... but nothing is chosen for the verifier
    assert researcher.get_username() not in page and "Rahul" not in page


def test_a_verification_that_differs_is_listed_among_the_disputes(client, researcher):
    question = question_make(text=PRIOR_TEXT)
    label(question, researcher)
    verifier = user_with_role(Role.RESEARCHER, first_name="Vera", last_name="Verifier")
    client.force_login(verifier)
    post_labels(client, question, "verify", prior="no")
    question.refresh_from_db()
    assert question.label_status == LabelStatus.DISPUTED
    page = client.get(reverse("questions:disputes")).content.decode()
    assert question.external_id in page
    assert "Labelled by Rahul Researcher" in page and "Verified by Vera Verifier" in page


@pytest.mark.parametrize("need", ["sensemaking", "guidance"])
def test_a_verification_differing_on_one_need_is_a_dispute_shown_side_by_side(
    client, researcher, need
):
    question = question_make(text=PRIOR_TEXT)
    label(question, researcher, sensemaking=True, guidance=True)
    client.force_login(user_with_role(Role.RESEARCHER, first_name="Vera", last_name="Verifier"))
    post_labels(client, question, "verify", **{"sensemaking": "yes", "guidance": "yes", need: "no"})
    question.refresh_from_db()
    assert question.label_status == LabelStatus.DISPUTED
    page = client.get(reverse("questions:disputes")).content.decode()
    row = page[page.index(f'data-testid="given-{need}"') :].split("</tr>")[0]
    assert "(differs)" in row and "<td>Yes</td><td>No</td>" in row
    other = "guidance" if need == "sensemaking" else "sensemaking"
    same = page[page.index(f'data-testid="given-{other}"') :].split("</tr>")[0]
    assert "(differs)" not in same and "<td>Yes</td><td>Yes</td>" in same


def test_the_labeller_posting_a_verification_is_told_why_it_is_refused(client, researcher):
    question = question_make()
    label(question, researcher)
    client.force_login(researcher)
    response = post_labels(client, question, "verify", **HTMX)
    assert response.status_code == 200
    assert "another researcher verifies it" in response.content.decode()
    full = post_labels(client, question, "verify")
    assert full.status_code == 422 and "<h1>" in full.content.decode()
    question.refresh_from_db()
    assert question.label_status == LabelStatus.LABELLED


def test_a_stale_label_form_is_refused_not_taken_for_a_verification(client, researcher):
    question = question_make()
    label(question, user_with_role(Role.RESEARCHER))
    client.force_login(researcher)
    response = post_labels(client, question, "label", **HTMX)
    assert "already labelled" in response.content.decode()
    question.refresh_from_db()
    assert question.label_status == LabelStatus.LABELLED


def _disputed(researcher):
    question = question_make()
    label(question, researcher)
    services.question_label_verify(
        question=question,
        researcher=user_with_role(Role.RESEARCHER),
        mentions_prior_attempt=True,
        needs_sensemaking=True,
        needs_guidance=True,
    )
    return question


@pytest.mark.parametrize("htmx", [False, True])
def test_resolving_a_dispute_with_and_without_htmx(client, researcher, htmx):
    question = _disputed(researcher)
    client.force_login(researcher)
    page = client.get(reverse("questions:disputes")).content.decode()
    for name in ("sensemaking", "guidance"):
        assert f'name="{name}" value="yes" required' in page
    data = {
        "question": question.pk,
        "step": "resolve",
        "prior_attempt": "no",
        "sensemaking": "yes",
        "guidance": "yes",
    }
    response = client.post(reverse("questions:disputes"), data, **(HTMX if htmx else {}))
    if htmx:
        assert response.status_code == 200 and "are resolved" in response.content.decode()
    else:
        assert response.status_code == 302
    question.refresh_from_db()
    assert question.label_status == LabelStatus.RESOLVED
    assert (
        question.mentions_prior_attempt,
        question.needs_sensemaking,
        question.needs_guidance,
    ) == (False, True, True)


def test_a_resolution_without_labels_is_refused_on_the_fragment(client, researcher):
    question = _disputed(researcher)
    client.force_login(researcher)
    response = client.post(
        reverse("questions:disputes"),
        {"question": question.pk, "step": "resolve", "prior_attempt": "no", "sensemaking": "no"},
        **HTMX,
    )
    page = response.content.decode()
    assert "Say whether the question asks for guidance." in page
    assert "Say whether the question asks for sensemaking." not in page
    question.refresh_from_db()
    assert question.label_status == LabelStatus.DISPUTED


def test_the_quota_dashboard_says_the_shortfall_in_words(client, researcher):
    question_make(topic="scams", text="x" * 400)
    client.force_login(researcher)
    page = client.get(reverse("questions:quotas")).content.decode()
    assert "1 of 50 questions: <strong>49 still needed</strong>" in page
    assert "medium (333 to 665 characters) needs 9 more" in page


def test_the_quota_dashboard_counts_each_need_with_its_shortfall(client, researcher):
    for sensemaking, guidance in ((True, True), (True, False), (False, False)):
        question_make(
            topic="scams",
            needs_sensemaking=sensemaking,
            needs_guidance=guidance,
            label_status=LabelStatus.VERIFIED,
        )
    client.force_login(researcher)
    page = client.get(reverse("questions:quotas")).content.decode()
    scams = page[page.index('data-testid="quota-scams"') :].split("</section>")[0]

    def row(key):
        return scams[scams.index(f'data-testid="stratum-{key}"') :].split("</tr>")[0]

    assert '<th scope="row">Asks for sensemaking</th><td>2</td><td>2</td><td>0</td>' in row(
        "sensemaking"
    )
    assert "<strong>8 more needed</strong>" in row("sensemaking")
    assert '<th scope="row">Asks for guidance</th><td>1</td><td>1</td><td>0</td>' in row("guidance")
    assert "<strong>9 more needed</strong>" in row("guidance")
    assert "asks for sensemaking needs 8 more" in scams
    assert "asks for guidance needs 9 more" in scams


def test_researchers_change_the_targets_on_the_dashboard(client, researcher):
    client.force_login(researcher)
    response = client.post(
        reverse("questions:quotas"), {"target_per_topic": 30, "minimum_per_stratum": 4}
    )
    assert response.status_code == 302
    settings = QuotaSettings.objects.get(pk=1)
    assert (settings.target_per_topic, settings.minimum_per_stratum) == (30, 4)
    page = client.get(reverse("questions:quotas")).content.decode()
    assert "0 of 30 questions" in page
    refused = client.post(
        reverse("questions:quotas"), {"target_per_topic": 3, "minimum_per_stratum": 4}
    )
    assert refused.status_code == 422 and "cannot be met" in refused.content.decode()


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "anonymous"))
@pytest.mark.parametrize(
    "name,method",
    [
        ("labels", "get"),
        ("label", "post"),
        ("disputes", "get"),
        ("disputes", "post"),
        ("quotas", "get"),
        ("quotas", "post"),
    ],
)
def test_only_researchers_reach_the_label_pages(client, role, name, method):
    question = question_make()
    if role is not None:
        client.force_login(user_with_role(role))
    url = reverse(f"questions:{name}", args=[question.pk] if name == "label" else [])
    response = getattr(client, method)(url, {"question": question.pk} if method == "post" else {})
    if role is None:
        assert response.status_code == 302 and response.url.startswith(reverse("login"))
    elif role == Role.RESEARCHER:
        assert response.status_code in (200, 302, 422)
    else:
        assert response.status_code == 403
    question.refresh_from_db()
    assert question.label_status == LabelStatus.UNLABELLED
