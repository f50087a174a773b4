"""A run's parameters and a model config cannot send a call, or a provider key, anywhere but
to the model's provider: parameters are an allowlist of generation settings (refused at
every entry, and again by the gateway for rows written around the entries), and a key goes
to an API base only where its provider or the operator allows. A listener on 127.0.0.1
stands for the attacker's server: it must hear nothing."""

import json

import pytest
from django.core.exceptions import ValidationError

from apps.llm.errors import PermanentLLMError
from apps.llm.gateway import complete
from apps.llm.models import CallStatus, ModelConfig
from apps.llm.params import params_check
from apps.runs.models import Response, ResponseStatus, SamplingRun
from apps.runs.services import sampling_run_create, sampling_run_launch
from tests.factories import offline_model, question_make
from tests.runs.test_sampling import run_all

pytestmark = pytest.mark.django_db

QUESTION = [{"role": "user", "content": "Someone logged into my email. What now?"}]
SECRET = "sk-test-4f1b9c2e7d"
KEY_VARIABLE = "ASSAY_TEST_PROVIDER_KEY"


def redirecting(listener) -> dict:
    return {"base_url": listener.url, "extra_headers": {"X-Collect": "1"}}


def provider_model(listener, **fields) -> ModelConfig:
    """A real provider's model whose API base was changed to the listener (written past the
    console's check, as a row edited by hand or before the check would be)."""
    values = {
        "display_name": "GPT (edited)",
        "family": "GPT",
        "litellm_model": "openai/gpt-4.1-mini",
        "api_base": listener.url,
        "api_key_env": KEY_VARIABLE,
        "timeout_seconds": 5,
    } | fields
    return ModelConfig.objects.create(**values)


# --- the allowlist ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, named",
    [
        ({"base_url": "http://127.0.0.1:1/v1"}, "base_url"),
        ({"extra_headers": {"Authorization": "x"}}, "extra_headers"),
        ({"mock_response": "forged"}, "mock_response"),
        ({"api_base": "http://127.0.0.1:1"}, "api_base"),
        ({"custom_llm_provider": "openai"}, "custom_llm_provider"),
        ({"temperature": 2.5}, "temperature must be a number from 0 to 2"),
        ({"temperature": "0.7"}, "temperature must be a number"),
        ({"temperature": True}, "temperature must be a number"),
        ({"temperature": float("nan")}, "temperature must be a number"),
        ({"max_tokens": 0}, "max_tokens must be a whole number from 1"),
        ({"max_tokens": 10.5}, "max_tokens must be a whole number"),
        ({"top_p": -0.1}, "top_p must be a number from 0 to 1"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop must be a text or a list"),
        ({"stop": "\x00"}, "stop must be a text or a list"),
        ({"stop": ["\ud800x"]}, "stop must be a text or a list"),
        ({"reasoning_effort": "max"}, "reasoning_effort must be one of"),
        ({"offline_fault": "400"}, "offline_fault is not a parameter"),
        ({"seed": 3}, "seed cannot be set here"),
    ],
)
def test_anything_but_an_allowed_generation_parameter_in_its_range_is_refused_by_name(
    params, named
):
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        params_check(params)


def test_a_parameter_given_as_null_is_not_sent_and_an_unprintable_name_is_shown_escaped():
    assert params_check({"seed": None, "temperature": None}, per_call=True) == {}
    with pytest.raises(ValueError, match=r"^'\\x00\\ud800' is not a parameter"):
        params_check({"\x00\ud800": 1})
    with pytest.raises(
        ValueError, match="seed must be a whole number from 0 to 9,223,372,036,854,775,807"
    ):
        params_check({"seed": -1}, per_call=True)


def test_the_allowed_parameters_pass_unchanged():
    params = {
        "temperature": 0.7,
        "top_p": 1,
        "max_tokens": 2000,
        "stop": ["\n\n"],
        "presence_penalty": -1.5,
        "reasoning_effort": "low",
    }
    assert params_check(params) == params
    assert params_check({"offline_fault": "429"}, offline=True) == {"offline_fault": "429"}
    assert params_check({"seed": 3}, per_call=True) == {"seed": 3}


def test_a_model_configs_own_parameters_are_checked_in_the_console(listener):
    model = ModelConfig(
        display_name="m",
        family="f",
        litellm_model="openai/gpt-4.1-mini",
        params=redirecting(listener),
    )
    with pytest.raises(ValidationError) as refused:
        model.full_clean()
    assert "base_url is not a parameter" in str(refused.value.message_dict["params"])


def test_parameters_written_around_the_entries_are_refused_by_the_gateway_before_any_call(
    offline_provider_url, listener
):
    model = offline_model(offline_provider_url)
    run = sampling_run_create(
        name="Pilot", questions=[question_make()], models=[model], samples_per_item=2
    )
    SamplingRun.objects.filter(pk=run.pk).update(params=redirecting(listener))
    forged = offline_model(
        offline_provider_url, name="offline-friendly", params={"mock_response": "a forged answer"}
    )
    run2 = sampling_run_create(
        name="Pilot 2", questions=[question_make()], models=[forged], samples_per_item=1
    )
    for each in (run, run2):
        sampling_run_launch(run=SamplingRun.objects.get(pk=each.pk))
        run_all(each)
    failed = Response.objects.filter(run__in=[run, run2])
    assert set(failed.values_list("status", flat=True)) == {ResponseStatus.FAILED}
    errors = " ".join(failed.values_list("error", flat=True))
    assert "base_url is not a parameter" in errors and "mock_response is not a parameter" in errors
    assert not failed.filter(text__contains="forged").exists()
    assert listener.connections == 0


# --- where a key may go -------------------------------------------------------------------


def test_a_key_is_not_sent_to_an_api_base_its_provider_or_the_operator_does_not_allow(
    listener, monkeypatch
):
    monkeypatch.setenv(KEY_VARIABLE, SECRET)
    model = provider_model(listener)
    with pytest.raises(PermanentLLMError) as refused:
        complete(model=model, messages=QUESTION, purpose="sample", caller="test")
    assert refused.value.status == CallStatus.AUTH_ERROR
    assert f"{KEY_VARIABLE} may not be sent to {listener.host}" in str(refused.value)
    assert SECRET not in str(refused.value)
    with pytest.raises(ValidationError) as console:
        model.full_clean()
    assert "LLM_KEY_HOSTS" in str(console.value.message_dict["api_base"])
    assert listener.connections == 0


def test_a_key_of_a_known_provider_goes_only_to_its_own_host(listener, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model = provider_model(listener, api_key_env="OPENAI_API_KEY")
    with pytest.raises(PermanentLLMError, match=r"may go to api\.openai\.com"):
        complete(model=model, messages=QUESTION, purpose="sample", caller="test")
    other = ModelConfig(
        display_name="c",
        family="Claude",
        api_key_env="OPENAI_API_KEY",
        litellm_model="anthropic/claude-sonnet-4-5",
    )
    with pytest.raises(ValidationError, match="key of the provider openai"):
        other.full_clean()
    assert listener.connections == 0


def test_a_sampling_run_on_a_redirected_model_fails_without_a_call(listener, monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, SECRET)
    run = sampling_run_create(
        name="Pilot",
        questions=[question_make()],
        models=[provider_model(listener)],
        samples_per_item=2,
    )
    sampling_run_launch(run=run)
    run_all(run)
    assert set(run.responses.values_list("status", flat=True)) == {ResponseStatus.FAILED}
    assert listener.connections == 0


def test_the_operator_can_allow_a_host_for_a_key(listener, monkeypatch, settings):
    # The same call as above reaches the listener once the operator allows its host: the
    # listener hears what it is sent, so its silence above is the refusal's doing.
    monkeypatch.setenv(KEY_VARIABLE, SECRET)
    settings.LLM_KEY_HOSTS = {KEY_VARIABLE: frozenset({listener.host})}
    model = provider_model(listener)
    model.full_clean()
    result = complete(model=model, messages=QUESTION, purpose="sample", caller="test")
    assert result.text == "the listener's answer"
    (request,) = listener.requests
    assert request["headers"]["authorization"] == f"Bearer {SECRET}"


def test_a_model_config_that_names_no_key_sends_none_to_its_api_base(listener, monkeypatch):
    # litellm would otherwise send its provider's default variable to the API base.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model = provider_model(listener, api_key_env="")
    complete(model=model, messages=QUESTION, purpose="sample", caller="test")
    (request,) = listener.requests
    assert SECRET not in json.dumps(request)
    assert request["headers"]["authorization"] == "Bearer no-key"
