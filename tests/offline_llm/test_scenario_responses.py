"""What participants rate: the offline provider's responses to the prompts the product sends
for a study's scenarios, built from real PrivacyLens trajectories (tool calls and their JSON
observations)."""

import re

import httpx
import pytest

from apps.llm.models import PromptTemplate, Purpose
from apps.surveys.selectors import scenario_response_messages

MODELS = ("offline-terse", "offline-thorough", "offline-friendly")
# What a reader must never meet in a response: an escaped newline or quote, a JSON key, a
# bracket, a JSON string followed by a comma, or an identifier such as "user_14523".
JSON_SYNTAX = re.compile(r'\\[nrt"]|"\s*:|[{}\[\]]|"\s*,|\b[a-z]+_\d+\b')


def response_to(base_url: str, messages: list[dict], model: str, seed: int) -> str:
    reply = httpx.post(
        f"{base_url}/chat/completions",
        json={"model": model, "messages": messages, "seed": seed},
        headers={
            "Authorization": "Bearer sk-test-not-a-real-key",
            "X-Assay-Purpose": Purpose.SCENARIO_RESPONSE,
        },
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()["choices"][0]["message"]["content"]


@pytest.mark.django_db
def test_scenario_responses_are_clean_text_without_json(offline_provider_url, scenarios):
    prompt = PromptTemplate.objects.get(purpose=Purpose.SCENARIO_RESPONSE, version=1)
    found = []
    for scenario in scenarios:
        assert "Observation" in scenario.trajectory  # the context is a tool trajectory
        messages = scenario_response_messages(scenario=scenario, prompt=prompt)
        for model in MODELS:
            for seed in range(2):
                text = response_to(offline_provider_url, messages, model, seed)
                found += [(scenario.name, model, hit) for hit in JSON_SYNTAX.findall(text)]
                assert text.strip() and not text.startswith(("{", "["))
    assert found == []


@pytest.mark.django_db
def test_a_scenario_message_uses_what_the_observations_say_with_real_newlines(
    offline_provider_url, scenarios
):
    prompt = PromptTemplate.objects.get(purpose=Purpose.SCENARIO_RESPONSE, version=1)
    scenario = next(s for s in scenarios if s.name == "main3")  # Messenger history
    messages = scenario_response_messages(scenario=scenario, prompt=prompt)
    texts = [response_to(offline_provider_url, messages, "offline-friendly", s) for s in range(8)]
    # A Messenger reply to Emily, laid out on lines of its own, quoting what the messages
    # said (their words, not their ids or timestamps).
    assert all(text.startswith("Hi Emily,\n\n") for text in texts)
    observed = ("Innovatech", "interview", "prepar", "father", "hospital", "insights")
    assert any(word in text for text in texts for word in observed)
    assert not any(re.search(r"msg_\d+|\d{4}-\d\d-\d\dT", text) for text in texts)


@pytest.mark.django_db
def test_asked_as_privacylens_asks_the_answer_is_the_final_actions_input(
    offline_provider_url, scenarios
):
    """Prompt v2 (the privacy-enhanced agent prompt) names the final action: the answer is its
    input, a JSON object whose message is clean text."""
    import json

    prompt = PromptTemplate.objects.get(purpose=Purpose.SCENARIO_RESPONSE, version=2)
    keys = {
        "MessengerSendMessage": {"recipient_id", "message"},
        "GmailSendEmail": {"to", "subject", "body"},
        "SlackSendMessage": {"recipient", "message"},
        "FacebookManagerCreatePost": {"content"},
    }
    for scenario in scenarios:
        messages = scenario_response_messages(scenario=scenario, prompt=prompt)
        text = response_to(offline_provider_url, messages, "offline-thorough", 0)
        action_input = json.loads(text)
        assert set(action_input) == keys[scenario.final_action], scenario.name
        message = action_input.get("message") or action_input.get("body") or action_input["content"]
        assert message.strip() and JSON_SYNTAX.findall(message) == [], scenario.name
