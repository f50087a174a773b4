from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Sampling runs and the responses they collect (grading comes later)."""

    name = "apps.runs"
    label = "runs"
    verbose_name = "Model runs"

    def ready(self):
        from apps.accounts.home import home_panel_register
        from apps.accounts.roles import Role

        from . import selectors
        from .services import sampling  # noqa: F401  (registers the engine's work)

        home_panel_register(
            key="runs.researcher",
            roles={Role.RESEARCHER},
            template="runs/home_researcher_panel.html",
            order=400,
            context=lambda request: {"runs": selectors.runs_overview()},
        )
