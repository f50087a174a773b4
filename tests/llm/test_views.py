from decimal import Decimal

from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import LLMCall, ModelConfig


def test_usage_page_totals_by_model_and_purpose(role_client):
    model = ModelConfig.objects.create(
        display_name="Offline Terse (demo)", family="Offline", litellm_model="openai/offline-terse"
    )
    for attempt, status in [(1, "rate_limited"), (2, "ok")]:
        LLMCall.objects.create(
            model=model, purpose="sample", attempt=attempt, status=status, input_tokens=10,
            output_tokens=20, cost_usd=Decimal("0.001"),
        )  # fmt: skip
    body = role_client(Role.RESEARCHER).get(reverse("llm:usage")).content.decode()
    assert "Offline Terse (demo)" in body
    assert "offline demo model" in body
    assert "<td>sample</td><td>2</td><td>1</td><td>1</td>" in body


def test_usage_page_is_empty_politely(role_client):
    body = role_client(Role.RESEARCHER).get(reverse("llm:usage") + "?period=day").content.decode()
    assert "No model calls yet" in body
