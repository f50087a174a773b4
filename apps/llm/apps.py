from django.apps import AppConfig


class LlmConfig(AppConfig):
    """The one gateway to LLM providers. Depends on no other app of the project."""

    name = "apps.llm"
    label = "llm"
    verbose_name = "LLM gateway"
