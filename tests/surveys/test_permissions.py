"""Every surveys page, every role: researchers' pages for researchers only; participants'
pages public on purpose (listed in the inventory) but reachable only with a participant's
own browser binding."""

import pytest
from django.test import Client
from django.urls import get_resolver, reverse

from apps.accounts.roles import Role
from apps.surveys import services
from apps.surveys.models import Assignment
from tests.accounts.test_permission_inventory import PUBLIC
from tests.conftest import ROLES
from tests.factories import ModelConfigFactory
from tests.surveys.flow import consent

RESEARCHER_GET = [
    "study_list",
    "study_create",
    "study_detail",
    "study_edit",
    "study_preview",
    "study_review",
    "approvals_csv",
    "proxy_runs",
    "proxy_run",
    "setup_import",
    "setup_items",
    "setup_item",
]
RESEARCHER_POST = [
    "study_status",
    "study_generate",
    "study_sync",
    "participant_review",
    "study_approve",
    "proxy_run_launch",
    "proxy_run_pause",
    "proxy_run_resume",
    "proxy_run_cancel",
    "proxy_run_budget",
    "proxy_run_retry",
    "proxy_sweep_create",
]
PARTICIPANT = ["entry", "consent", "instructions", "scenario", "answer", "demographics", "done"]


def url_for(name, study, participant=None, assignment=None):
    kwargs = {}
    if name not in ("study_list", "study_create", "setup_import"):
        kwargs["study_id"] = study.pk
    if name == "setup_item":
        kwargs["item_id"] = study.items.first().pk
    if name == "participant_review":
        kwargs["participant_id"] = participant.pk
    if name.startswith("proxy_run_") or name == "proxy_run":
        kwargs["run_id"] = study.proxy_runs.get().pk
    return reverse(f"surveys:{name}", kwargs=kwargs)


@pytest.fixture
def setup(make_study):
    study = make_study(count=5)
    consent(Client(), study)
    participant = study.participants.get()
    services.proxy_run_create(study=study, models=[ModelConfigFactory()], runs_per_model=1)
    return study, participant


@pytest.mark.parametrize("name", RESEARCHER_GET + RESEARCHER_POST)
def test_researcher_pages_are_for_researchers_only(role_client, setup, name):
    study, participant = setup
    url = url_for(name, study, participant)
    for role in ROLES:  # every role, one study: the setup is the slow part
        client = role_client(role)
        response = client.post(url) if name in RESEARCHER_POST else client.get(url)
        if role == Role.RESEARCHER:
            # An empty request for responses or a sweep is refused with its form's errors.
            allowed = (
                (200, 302, 400) if name in ("study_generate", "proxy_sweep_create") else (200, 302)
            )
            assert response.status_code in allowed, role
            if response.status_code == 302:
                assert "/accounts/login/" not in response["Location"]
        else:
            assert response.status_code == 403, role


@pytest.mark.parametrize("name", RESEARCHER_GET + RESEARCHER_POST)
def test_anonymous_visitors_go_to_login_from_researcher_pages(client, setup, name):
    study, participant = setup
    response = client.get(url_for(name, study, participant))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_every_surveys_page_is_a_researchers_or_a_participants_and_guarded_as_such():
    views = {p.name: p.callback for p in get_resolver("apps.surveys.urls").url_patterns}
    assert set(views) == set(RESEARCHER_GET + RESEARCHER_POST + PARTICIPANT)
    for name in PARTICIPANT:
        assert getattr(views[name], "public_on_purpose", False), name
        assert f"surveys:{name}" in PUBLIC, name
    for name in RESEARCHER_GET + RESEARCHER_POST:
        assert getattr(views[name], "required_roles", None) == {Role.RESEARCHER}, name
        assert f"surveys:{name}" not in PUBLIC, name


@pytest.mark.parametrize("name", ["instructions", "scenario", "answer", "demographics", "done"])
def test_participant_pages_need_a_participants_browser(client, setup, name):
    study, _participant = setup
    kwargs = {"slug": study.slug}
    if name in ("scenario", "answer"):
        kwargs["assignment_id"] = Assignment.objects.first().pk
    if name == "answer":
        kwargs["code"] = "H2"
    url = reverse(f"surveys:{name}", kwargs=kwargs)
    response = client.post(url) if name == "answer" else client.get(url)
    assert response.status_code == 403
    assert "reopen the study from Prolific" in response.content.decode()


def test_unknown_study_is_404(client, db):
    assert client.get("/s/nope/?PROLIFIC_PID=" + "a" * 24).status_code == 404
