"""The parameters a model call may carry, and the hosts a provider key may be sent to.

Everything else that litellm would accept as a keyword (`base_url`, `extra_headers`,
`mock_response`, `api_key`, `callbacks`, ...) changes where a call goes, what it sends or
whether it is made at all, so a run or a model config may not set it: parameters are an
allowlist of generation settings, each with its type and range. The gateway checks every
call against the same list, so a row written before this check (or by hand) is refused
too. No Django here beyond settings: models, services, forms and the gateway all call it.
"""

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from apps.console.form_fields import BIGINT_MAX


class ParamsError(ValueError):
    """Parameters that may not be sent; the message names the parameter and says why."""


@dataclass(frozen=True)
class Param:
    kind: str  # "number", "integer", "choice", "stop"
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def problem(self, name: str, value: object) -> str | None:
        """Why `value` cannot be `name`, or None."""
        if self.kind == "choice":
            if value in self.choices:
                return None
            return f"{name} must be one of {', '.join(self.choices)}."
        if self.kind == "stop":
            texts = [value] if isinstance(value, str) else value
            if (
                isinstance(texts, list)
                and 1 <= len(texts) <= 4
                and all(isinstance(t, str) and 0 < len(t) <= 100 and _storable(t) for t in texts)
            ):
                return None
            return (
                f"{name} must be a text or a list of at most 4 texts of 1 to 100 characters "
                "(no NUL, no half of a UTF-16 pair)."
            )
        # bool is an int to Python, never a number to a researcher.
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if self.kind == "integer":
            numeric = numeric and float(value).is_integer()
        if numeric and math.isfinite(value) and self.low <= value <= self.high:
            return None
        what = "a whole number" if self.kind == "integer" else "a number"
        return f"{name} must be {what} from {_number(self.low)} to {_number(self.high)}."


def _storable(text: str) -> bool:
    # PostgreSQL's JSON cannot hold a NUL, nor UTF-8 a lone surrogate.
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


# The generation settings a researcher may choose (OpenAI's ranges; litellm maps them to
# other providers or drops what a provider lacks).
GENERATION_PARAMS: dict[str, Param] = {
    "temperature": Param("number", 0, 2),
    "top_p": Param("number", 0, 1),
    "top_k": Param("integer", 1, 1000),
    "max_tokens": Param("integer", 1, 1_000_000),
    "max_completion_tokens": Param("integer", 1, 1_000_000),
    "presence_penalty": Param("number", -2, 2),
    "frequency_penalty": Param("number", -2, 2),
    "stop": Param("stop"),
    "reasoning_effort": Param("choice", choices=("minimal", "low", "medium", "high")),
}
# Set by Assay on each call, never by a researcher: the per-call seed (apps/llm/engine.py).
SET_PER_CALL: dict[str, Param] = {"seed": Param("integer", 0, BIGINT_MAX)}
# Only for the offline provider's models: a fault it answers with, for one call (its
# X-Offline-Faults header), so that tests can drive refusals through any entry.
OFFLINE_ONLY: dict[str, Param] = {
    "offline_fault": Param("choice", choices=("400", "429", "500", "hang", "malformed")),
}


def params_check(params: object, *, offline: bool = False, per_call: bool = False) -> dict:
    """`params` if every entry is an allowed generation parameter of the right type and
    range, else ParamsError naming the first that is not. `offline`: the model is the
    offline provider's; `per_call`: the gateway's check, which also admits the seed."""
    if params in (None, ""):
        return {}
    if not isinstance(params, Mapping):
        raise ParamsError('Parameters must be a JSON object, such as {"temperature": 0.7}.')
    allowed = dict(GENERATION_PARAMS)
    if offline:
        allowed |= OFFLINE_ONLY
    if per_call:
        allowed |= SET_PER_CALL
    checked = {}
    for name, value in params.items():
        param = allowed.get(name)
        if param is None:
            if name in SET_PER_CALL:
                raise ParamsError(f"{name} cannot be set here: each call gets its own.")
            shown = name if str(name).isprintable() else ascii(name)  # NUL, half a pair
            raise ParamsError(
                f"{shown!s:.100} is not a parameter a call may carry. Allowed: "
                f"{', '.join(GENERATION_PARAMS)}."
            )
        if value is None:
            continue  # not sent, as litellm takes None (a row with no seed, say)
        problem = param.problem(name, value)
        if problem:
            raise ParamsError(problem)
        checked[name] = value
    return checked


# --- Where a provider key may go -----------------------------------------------------------

# The hosts of the providers whose keys litellm reads from these variables by default: a
# model config may point such a key at its provider's own host and nowhere else, unless
# the operator allows another host for it (LLM_KEY_HOSTS).
PROVIDER_KEYS: dict[str, tuple[str, frozenset[str]]] = {
    "OPENAI_API_KEY": ("openai", frozenset({"api.openai.com"})),
    "ANTHROPIC_API_KEY": ("anthropic", frozenset({"api.anthropic.com"})),
    "GEMINI_API_KEY": ("gemini", frozenset({"generativelanguage.googleapis.com"})),
    "MISTRAL_API_KEY": ("mistral", frozenset({"api.mistral.ai"})),
    "GROQ_API_KEY": ("groq", frozenset({"api.groq.com"})),
    "DEEPSEEK_API_KEY": ("deepseek", frozenset({"api.deepseek.com"})),
    "TOGETHERAI_API_KEY": ("together_ai", frozenset({"api.together.xyz"})),
    "OPENROUTER_API_KEY": ("openrouter", frozenset({"openrouter.ai"})),
    "XAI_API_KEY": ("xai", frozenset({"api.x.ai"})),
    "FIREWORKS_AI_API_KEY": ("fireworks_ai", frozenset({"api.fireworks.ai"})),
}


def host_of(url: str) -> str:
    """`url`'s host, lower case, with its port if it names one: how LLM_KEY_HOSTS lists it."""
    parts = urlsplit(url if "//" in url else f"//{url}")
    host = (parts.hostname or "").lower()
    with contextlib.suppress(ValueError):  # a port out of range: no port, then
        if parts.port is not None:
            host = f"{host}:{parts.port}"
    return host


def key_hosts(variable: str) -> frozenset[str]:
    """The hosts the key in `variable` may be sent to at a model config's API base."""
    operator = settings.LLM_KEY_HOSTS.get(variable, frozenset())
    return PROVIDER_KEYS.get(variable, ("", frozenset()))[1] | operator


def key_destination_problem(*, litellm_model: str, api_base: str, api_key_env: str) -> str | None:
    """Why the key in `api_key_env` may not go where this model config would send it, or
    None. With an API base, its host must be one the key's provider or the operator allows
    for that variable; without one, litellm sends the call to the model's provider, which
    must be the key's own provider when the variable is a provider's."""
    if not api_key_env:
        return None
    if api_base:
        host = host_of(api_base)
        allowed = key_hosts(api_key_env)
        if host in allowed or host.split(":")[0] in allowed:
            return None
        return (
            f"The key in {api_key_env} may not be sent to {host or api_base}: "
            + (f"it may go to {', '.join(sorted(allowed))}" if allowed else "no host is allowed")
            + f". An operator allows a host for it with LLM_KEY_HOSTS={api_key_env}=<host>."
        )
    owner = PROVIDER_KEYS.get(api_key_env)
    provider = litellm_model.split("/", 1)[0]
    if owner and owner[0] != provider and api_key_env not in settings.LLM_KEY_HOSTS:
        return (
            f"{api_key_env} is the key of the provider {owner[0]}, but this model's provider "
            f"is {provider}: name the key variable of {provider}."
        )
    return None
