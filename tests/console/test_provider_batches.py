"""The console's view of batch mode: every provider batch listed read-only, searchable by
the provider's id and filtered by status and model; a model config's batch API settings in
a fieldset of their own; the ledger's rows marked with the batch they were a line of."""

import pytest
from django.contrib import admin
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import CallStatus, LLMCall, ProviderBatch, Purpose
from tests.factories import ModelConfigFactory, provider_batches_make

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:llm_providerbatch_changelist")


@pytest.fixture
def batches():
    model = ModelConfigFactory(name="offline-terse", batch_api=True)
    other = ModelConfigFactory(name="offline-friendly", batch_api=True)
    done = provider_batches_make(
        work="runs.sample",
        scope=7,
        model=model,
        status=ProviderBatch.Status.COMPLETED,
        provider_batch_id="batch_done_one",
    )[0]
    running = provider_batches_make(
        work="grading.checklist",
        scope=8,
        model=other,
        status=ProviderBatch.Status.IN_PROGRESS,
        provider_batch_id="batch_at_work",
    )[0]
    return done, running


def test_the_console_lists_provider_batches_read_only(role_client, batches, rf, researcher):
    client = role_client(Role.RESEARCHER)
    page = client.get(CHANGELIST).text
    assert "batch_done_one" in page and "batch_at_work" in page
    assert "runs.sample" in page and "grading.checklist" in page
    request = rf.get("/admin/")
    request.user = researcher
    model_admin = admin.site._registry[ProviderBatch]
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_provider_batches_are_searched_and_filtered_by_status_and_model(role_client, batches):
    _done, running = batches
    client = role_client(Role.RESEARCHER)
    found = client.get(CHANGELIST, {"q": "batch_at"}).text
    assert "batch_at_work" in found and "batch_done_one" not in found
    completed = client.get(CHANGELIST, {"status__exact": "completed"}).text
    assert "batch_done_one" in completed and "batch_at_work" not in completed
    by_model = client.get(CHANGELIST, {"model__id__exact": running.model_id}).text
    assert "batch_at_work" in by_model and "batch_done_one" not in by_model
    assert 'href="?model__id__exact=' in client.get(CHANGELIST).text  # the filter is offered


def test_a_model_configs_batch_api_settings_have_a_fieldset(role_client):
    model = ModelConfigFactory(name="offline-terse")
    page = role_client(Role.RESEARCHER).get(
        reverse("admin:llm_modelconfig_change", args=[model.pk])
    )
    html = page.text
    assert page.status_code == 200
    assert "<h2" in html and "Batch API</h2>" in html
    for name in ("batch_api", "batch_discount", "batch_max_requests", "batch_max_bytes"):
        assert f'name="{name}"' in html, name


def test_the_ledger_says_which_calls_were_lines_of_a_batch(role_client, batches):
    done, _running = batches
    fields = {"purpose": Purpose.SAMPLE, "attempt": 1, "status": CallStatus.OK}
    LLMCall.objects.create(model=done.model, batch=done, caller="in-a-batch", **fields)
    LLMCall.objects.create(model=done.model, caller="live-call", **fields)
    client = role_client(Role.RESEARCHER)
    url = reverse("admin:llm_llmcall_changelist")
    listed = client.get(url).text
    assert f"OK, try 1, batch {done.pk}</td>" in listed and "OK, try 1</td>" in listed
    batched = client.get(url, {"batch__isempty": "0"}).text
    assert batched.count('class="field-when"') == 1
