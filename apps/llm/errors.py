class LLMError(Exception):
    """A model call that did not produce an answer. `status` is a `CallStatus` value."""

    def __init__(self, message: str, *, status: str, attempts: int = 0):
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        # What the answers that failed validation cost, and the last of them, if any.
        self.cost_usd = None
        self.last_output = ""


class RetryableLLMError(LLMError):
    """Worth trying again later: rate limits, server errors, timeouts, connection errors.

    Raised once the gateway's own bounded retries are spent; a task may requeue the work.
    """


class PermanentLLMError(LLMError):
    """Trying again will not help: a bad request, bad credentials, or an answer that kept
    failing validation. The message says what was wrong."""


class ProviderError(Exception):
    """What a provider's exception said, with the API key scrubbed out: the `__cause__` of an
    LLMError, in place of the provider's exception itself, whose message, args, response and
    request may all hold the key (a provider may echo it back in its error)."""


class PromptError(Exception):
    """A prompt template cannot be rendered or saved; the message says why."""
