from django.apps import AppConfig


class QuestionsConfig(AppConfig):
    """The candidate pool, its screening and the question bank. Depends on accounts and the
    LLM gateway only; rubrics and runs build on it."""

    name = "apps.questions"
    label = "questions"
    verbose_name = "Question bank"

    def ready(self):
        from apps.accounts.home import home_panel_register
        from apps.accounts.roles import Role

        from . import selectors
        from .services import rewriting  # noqa: F401  (registers the engine's work)

        home_panel_register(
            key="questions.researcher",
            roles={Role.RESEARCHER},
            template="questions/home_researcher_panel.html",
            order=300,
            context=lambda request: {"pipeline": selectors.pipeline_overview()},
        )
