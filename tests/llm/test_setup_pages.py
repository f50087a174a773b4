"""The models page: researchers list, add and edit model configs with the checks the console
applies (the model's own), and only researchers reach it."""

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import ModelConfig

LIST = reverse("llm:setup_models")
NEW = reverse("llm:setup_model_new")


def model_data(**fields) -> dict:
    return {
        "display_name": "GPT-4.1",
        "family": "GPT",
        "version": "4.1",
        "released_on": "2025-04-14",
        "litellm_model": "openai/gpt-4.1",
        "kind": "chat",
        "active": "on",
        "api_base": "",
        "api_key_env": "OPENAI_API_KEY",
        "timeout_seconds": 120,
        "params": '{"temperature": 0.7}',
        "max_concurrent": 8,
        "min_concurrent": 2,
        "requests_per_minute": 500,
        "tokens_per_minute": "",
        "input_price_per_mtok": "2.00",
        "output_price_per_mtok": "8.00",
        "batch_api": "on",
        "batch_discount": "0.5",
        "batch_max_requests": 50000,
        "batch_max_bytes": 209715200,
        **fields,
    }


@pytest.mark.django_db
@pytest.mark.parametrize("role", [None, Role.EXPERT, Role.REVIEWER, Role.RESEARCHER])
def test_only_researchers_reach_the_models_pages(role_client, role):
    model = ModelConfig.objects.create(
        display_name="Existing", family="GPT", litellm_model="openai/gpt-4o"
    )
    client = role_client(role)
    for url in (LIST, NEW, reverse("llm:setup_model", args=[model.pk])):
        assert Client().get(url)["Location"].startswith(reverse("login"))  # signed out
        expected = 200 if role == Role.RESEARCHER else 403
        assert client.get(url).status_code == expected, url
    if role != Role.RESEARCHER:
        client.post(NEW, model_data())
        client.post(reverse("llm:setup_model", args=[model.pk]), model_data(family="Changed"))
        assert list(ModelConfig.objects.values_list("display_name", "family")) == [
            ("Existing", "GPT")
        ]


@pytest.mark.django_db
def test_a_researcher_adds_and_edits_a_model(role_client):
    client = role_client(Role.RESEARCHER)
    response = client.post(NEW, model_data(display_name="GPT <b>4.1</b>"))
    assert response.status_code == 302 and response["Location"] == LIST
    model = ModelConfig.objects.get()
    assert (model.litellm_model, model.params, model.batch_api) == (
        "openai/gpt-4.1",
        {"temperature": 0.7},
        True,
    )
    assert model.input_price_per_mtok == Decimal("2.00")
    listing = client.get(LIST).text
    assert "GPT &lt;b&gt;4.1&lt;/b&gt;" in listing and "<b>4.1</b>" not in listing
    assert "Yes, at 50% of the price" in listing

    url = reverse("llm:setup_model", args=[model.pk])
    edit = client.get(url).text
    assert 'value="2025-04-14"' in edit and "{&quot;temperature&quot;: 0.7}" in edit
    client.post(url, model_data(display_name="GPT-4.1", active="", requests_per_minute=100))
    model.refresh_from_db()
    assert (model.display_name, model.active, model.requests_per_minute) == ("GPT-4.1", False, 100)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"litellm_model": "gpt-4.1"}, "Name the provider too, e.g. openai/gpt-4.1."),
        ({"api_key_env": "sk-live-123"}, "The name of an environment variable"),
        ({"api_key_env": "ANTHROPIC_API_KEY"}, "ANTHROPIC_API_KEY is the key of the provider"),
        ({"params": '{"temprature": 1}'}, "temprature"),
        ({"params": "[1, 2"}, "Enter a valid JSON."),
        (
            {"adapts_concurrency": "on", "min_concurrent": 9},
            "The floor cannot be above the ceiling (max concurrent).",
        ),
        ({"batch_discount": "1.5"}, "Ensure this value is less than or equal to 1."),
    ],
)
def test_a_model_that_breaks_a_rule_is_refused_on_its_field(role_client, fields, message):
    client = role_client(Role.RESEARCHER)
    response = client.post(NEW, model_data(**fields))
    assert response.status_code == 422
    assert message in response.text.replace("&#x27;", "'")
    assert not ModelConfig.objects.exists()


@pytest.mark.django_db
def test_the_home_page_and_usage_page_link_to_the_models_page(role_client):
    client = role_client(Role.RESEARCHER)
    assert f'href="{LIST}"' in client.get(reverse("home")).text
    assert f'href="{LIST}"' in client.get(reverse("llm:usage")).text
    assert f'href="{LIST}"' not in role_client(Role.EXPERT).get(reverse("home")).text
