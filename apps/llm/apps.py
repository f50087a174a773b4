from django.apps import AppConfig


class LlmConfig(AppConfig):
    """The one gateway to LLM providers. Depends on no other app of the project."""

    name = "apps.llm"
    label = "llm"
    verbose_name = "LLM gateway"

    def ready(self):
        from apps.accounts.home import home_panel_register
        from apps.accounts.roles import Role

        from .models import ModelConfig

        home_panel_register(
            key="llm.researcher",
            roles={Role.RESEARCHER},
            template="llm/home_researcher_panel.html",
            order=800,
            context=lambda request: {
                "active_models": ModelConfig.objects.filter(active=True).count()
            },
        )
