import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import LLMCall, ModelConfig


def test_usage_page_totals_by_model_and_purpose(role_client):
    model = ModelConfig.objects.create(
        display_name="Offline Terse (demo)", family="Offline", litellm_model="openai/offline-terse"
    )
    for attempt, status in [(1, "rate_limited"), (2, "ok")]:
        LLMCall.objects.create(
            model=model,
            purpose="sample",
            attempt=attempt,
            status=status,
            input_tokens=10,
            output_tokens=20,
            cost_usd=Decimal("0.001"),
        )
    body = role_client(Role.RESEARCHER).get(reverse("llm:usage")).content.decode()
    assert "Offline Terse (demo)" in body
    assert "offline demo model" in body
    assert "<td>sample</td><td>2</td><td>1</td><td>1</td>" in body


def test_usage_page_is_empty_politely(role_client):
    body = role_client(Role.RESEARCHER).get(reverse("llm:usage") + "?period=day").content.decode()
    assert "No model calls yet" in body


@pytest.mark.parametrize(
    "period,shown",
    [
        ("week", "Last 7 days: 24 Nov 2026, 10:30 \u2013 1 Dec 2026, 10:30"),
        ("day", "Last 24 hours: 30 Nov 2026, 10:30 \u2013 1 Dec 2026, 10:30"),
        ("month", "Last 30 days: 1 Nov 2026, 10:30 \u2013 1 Dec 2026, 10:30"),
        ("all", "All time: every call up to 1 Dec 2026, 10:30"),
    ],
)
def test_usage_page_says_which_period_it_shows(role_client, monkeypatch, period, shown):
    now = dt.datetime(2026, 12, 1, 10, 30, tzinfo=dt.UTC)
    monkeypatch.setattr("apps.llm.views.timezone.now", lambda: now)
    body = role_client(Role.RESEARCHER).get(reverse("llm:usage"), {"period": period}).content
    assert shown in body.decode()


def test_ledger_exports_as_csv_from_the_console(role_client):
    model = ModelConfig.objects.create(
        display_name="m", family="f", litellm_model="openai/offline-terse"
    )
    call = LLMCall.objects.create(
        model=model, purpose="sample", attempt=1, status="ok", caller="=cmd()"
    )
    response = role_client(Role.RESEARCHER).post(
        reverse("admin:llm_llmcall_changelist"),
        {"action": "export_as_csv", "_selected_action": [str(call.pk)]},
    )
    body = b"".join(response.streaming_content).decode()
    assert "'=cmd()" in body and "caller" in body.splitlines()[0]


def test_editing_a_used_prompt_in_the_console_saves_a_new_version(role_client):
    from apps.llm.models import PromptTemplate
    from apps.llm.selectors import prompt_current
    from tests.factories import call_recorded

    template = prompt_current(purpose="rewrite")
    call_recorded(template=template)
    response = role_client(Role.RESEARCHER).post(
        reverse("admin:llm_prompttemplate_change", args=[template.pk]),
        {"system_text": "new system", "user_text": "Rewrite: $post", "notes": "shorter"},
    )
    assert response.status_code == 302
    template.refresh_from_db()
    assert template.user_text != "Rewrite: $post"
    newest = PromptTemplate.objects.filter(purpose="rewrite").order_by("-version").first()
    assert (newest.version, newest.user_text) == (template.version + 1, "Rewrite: $post")


def test_model_config_refuses_keys_in_params(db):
    from django.core.exceptions import ValidationError

    model = ModelConfig(
        display_name="x", family="f", litellm_model="openai/gpt-4.1", params={"api_key": "sk-1"}
    )
    try:
        model.full_clean()
    except ValidationError as exc:
        assert "params" in exc.message_dict
    else:
        raise AssertionError("a key in params was accepted")


def test_a_models_release_date_is_set_in_the_console(role_client):
    model = ModelConfig.objects.create(
        display_name="Offline Terse 2", family="Offline", litellm_model="openai/offline-terse"
    )
    client = role_client(Role.RESEARCHER)
    url = reverse("admin:llm_modelconfig_change", args=[model.pk])
    form = client.get(url).content.decode()
    assert 'name="released_on"' in form
    response = client.post(
        url,
        {
            "display_name": model.display_name,
            "family": "Offline",
            "version": "2",
            "released_on": "2025-04-14",
            "litellm_model": model.litellm_model,
            "kind": "chat",
            "active": "on",
            "api_base": "",
            "api_key_env": "",
            "timeout_seconds": 120,
            "params": "{}",
            "max_concurrent": 8,
            "min_concurrent": 2,
            "requests_per_minute": "",
            "tokens_per_minute": "",
            "input_price_per_mtok": "",
            "output_price_per_mtok": "",
            "batch_discount": "0.5",
            "batch_max_requests": 50_000,
            "batch_max_bytes": 200 * 1024 * 1024,
        },
    )
    assert response.status_code == 302, response.content[:2000]
    model.refresh_from_db()
    assert model.released_on == dt.date(2025, 4, 14)
    listed = client.get(reverse("admin:llm_modelconfig_changelist")).content.decode()
    assert '<td class="field-released_on nowrap">14 Apr 2025</td>' in listed


@pytest.mark.parametrize(
    "fields, field, message",
    [
        (
            {"params": '{"base_url": "http://127.0.0.1:9/v1"}'},
            "params",
            "base_url is not a parameter a call may carry",
        ),
        ({"params": '{"temperature": 7}'}, "params", "temperature must be a number from 0 to 2"),
        (
            {"api_base": "http://127.0.0.1:9/v1", "api_key_env": "OPENAI_API_KEY"},
            "api_base",
            "The key in OPENAI_API_KEY may not be sent to 127.0.0.1:9",
        ),
    ],
)
def test_the_console_refuses_a_model_config_that_could_send_a_call_or_key_elsewhere(
    role_client, fields, field, message
):
    model = ModelConfig.objects.create(
        display_name="GPT", family="GPT", litellm_model="openai/gpt-4.1-mini"
    )
    client = role_client(Role.RESEARCHER)
    url = reverse("admin:llm_modelconfig_change", args=[model.pk])
    data = {
        "display_name": "GPT",
        "family": "GPT",
        "version": "",
        "released_on": "",
        "litellm_model": model.litellm_model,
        "kind": "chat",
        "active": "on",
        "api_base": "",
        "api_key_env": "",
        "timeout_seconds": 120,
        "params": "{}",
        "max_concurrent": 8,
        "min_concurrent": 2,
        "requests_per_minute": "",
        "tokens_per_minute": "",
        "input_price_per_mtok": "",
        "output_price_per_mtok": "",
        "batch_discount": "0.5",
        "batch_max_requests": 50_000,
        "batch_max_bytes": 200 * 1024 * 1024,
        **fields,
    }
    response = client.post(url, data)
    assert response.status_code == 200
    assert message in response.context["adminform"].form.errors[field][0]
    model.refresh_from_db()
    assert (model.params, model.api_base) == ({}, "")


def test_an_adaptive_models_floor_may_not_be_above_its_ceiling(db):
    model = ModelConfig(
        display_name="GPT",
        family="GPT",
        litellm_model="openai/gpt-4.1-mini",
        adapts_concurrency=True,
        min_concurrent=12,
        max_concurrent=8,
    )
    with pytest.raises(ValidationError) as refused:
        model.full_clean()
    assert (
        "The floor cannot be above the ceiling" in refused.value.message_dict["min_concurrent"][0]
    )
    model.max_concurrent = 12
    model.full_clean()  # a floor at the ceiling: a fixed limit, found at once
