"""The proxy-run pages: a draft from the form, its estimate, launch, progress polled by htmx,
errors by kind and their retry."""

import json

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm import engine
from apps.llm.models import RunStatus
from apps.surveys import services
from apps.surveys.models import ProxyCall, ProxyCallStatus, ProxyRun
from tests.factories import offline_model

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(make_study):
    return make_study(live=False, count=3)


def test_the_form_saves_a_draft_and_its_page_shows_the_estimate(
    role_client, study, offline_provider_url
):
    model = offline_model(offline_provider_url, name="offline-terse")
    client = role_client(Role.RESEARCHER)
    url = reverse("surveys:proxy_runs", args=[study.pk])

    response = client.post(url, {"models": [model.pk], "runs_per_model": 2})

    run = ProxyRun.objects.get(study=study)
    assert response.status_code == 302
    assert response["Location"] == reverse("surveys:proxy_run", args=[study.pk, run.pk])
    page = client.get(response["Location"]).content.decode()
    assert 'data-testid="calls">6<' in page  # 2 runs x 3 scenarios
    assert "each provider's default, as in the published study" in page
    assert "offline demo model" in page
    listing = client.get(url).content.decode()
    assert f"Proxy run {run.pk}" in listing and "Draft" in listing


def test_the_form_says_what_is_wrong(role_client, study):
    client = role_client(Role.RESEARCHER)
    url = reverse("surveys:proxy_runs", args=[study.pk])
    response = client.post(url, {"runs_per_model": 0})
    page = response.content.decode()
    assert response.status_code == 400
    assert "Choose at least one model." in page
    assert "Ensure this value is greater than or equal to 1." in page
    assert not ProxyRun.objects.exists()


def test_launched_progress_is_polled_and_failed_calls_are_retried_by_kind(
    role_client, study, answering_provider, provider_key
):
    provider_key("ASSAY_TEST_STAND_IN_KEY", "sk-test-stand-in")
    model = offline_model(
        answering_provider(json.dumps({"answers": [{"code": "H9"}]})),
        name="stand-in",
        api_key_env="ASSAY_TEST_STAND_IN_KEY",
    )
    run = services.proxy_run_create(study=study, models=[model], runs_per_model=1)
    client = role_client(Role.RESEARCHER)
    base = reverse("surveys:proxy_run", args=[study.pk, run.pk])
    client.post(base + "launch/")
    assert ProxyRun.objects.get(pk=run.pk).status == RunStatus.RUNNING

    engine.batch_run(work=services.PROXY_WORK.name, scope=run.pk)

    poll = client.get(base, HTTP_HX_REQUEST="true").content.decode()
    assert poll.strip().startswith('<section id="progress"')
    assert 'data-testid="failed">3<' in poll
    assert "Answer failed validation" in poll
    assert 'hx-swap-oob="true"' in poll and "Finished" in poll
    client.post(base + "retry/", {"error_kind": "invalid_output"})
    assert ProxyCall.objects.filter(run=run, status=ProxyCallStatus.PENDING).count() == 3
    assert ProxyRun.objects.get(pk=run.pk).status == RunStatus.RUNNING


def test_a_run_of_another_study_is_not_found(role_client, study, make_study):
    other = make_study(live=False, count=1, name="Other")
    run = services.proxy_run_create(study=other, models=[offline_model("http://127.0.0.1:9/v1")])
    url = reverse("surveys:proxy_run", args=[study.pk, run.pk])
    assert role_client(Role.RESEARCHER).get(url).status_code == 404


def test_the_sweep_form_saves_a_draft_sweep_whose_page_lists_its_variants(
    role_client, study, offline_provider_url
):
    model = offline_model(offline_provider_url, name="offline-terse")
    client = role_client(Role.RESEARCHER)
    page = client.get(reverse("surveys:proxy_runs", args=[study.pk])).content.decode()
    assert 'data-testid="sweep-form"' in page

    response = client.post(
        reverse("surveys:proxy_sweep_create", args=[study.pk]),
        {"model": model.pk, "temperatures": "0, 0.7,1.2", "runs_per_variant": 2},
    )

    run = ProxyRun.objects.get(study=study)
    assert response.status_code == 302
    assert response["Location"] == reverse("surveys:proxy_run", args=[study.pk, run.pk])
    assert run.sweep_temperatures == ["0", "0.7", "1.2"] and not run.sweep_personas
    page = client.get(response["Location"]).content.decode()
    assert page.count('data-testid="variant-row"') == 3
    assert '<td>temperature 0.7</td><td class="num">2</td><td class="num">0</td>' in page
    assert 'data-testid="calls">18<' in page  # 3 temperatures x 2 runs x 3 scenarios
    assert "temperature variants send temperature=0.0, 0.7, 1.2, one value per" in page
    listing = client.get(reverse("surveys:proxy_runs", args=[study.pk])).content.decode()
    assert 'data-testid="sweep-badge"' in listing


@pytest.mark.parametrize(
    "sent,error",
    [
        ({"temperatures": "0.5, 2.5"}, "Each temperature must be from 0 to 2: 2.5 is not."),
        ({"temperatures": "warm"}, "&#x27;warm&#x27; is not a number."),
        ({"temperatures": ""}, "A sweep needs at least one variant: a temperature, or personas."),
        ({"personas": "on"}, "No one has finished the study yet"),
    ],
)
def test_the_sweep_form_says_what_is_wrong(role_client, study, offline_provider_url, sent, error):
    model = offline_model(offline_provider_url, name="offline-terse")
    client = role_client(Role.RESEARCHER)

    response = client.post(
        reverse("surveys:proxy_sweep_create", args=[study.pk]),
        {"model": model.pk, "runs_per_variant": 1, **sent},
    )

    assert response.status_code == 400
    assert error in response.content.decode()
    assert not ProxyRun.objects.exists()
