from django.apps import AppConfig


class GradingConfig(AppConfig):
    """Grading runs, judgments, scores, expert judgments and calibration. It depends on
    runs and rubrics, never the other way."""

    name = "apps.grading"
    label = "grading"
    verbose_name = "Grading and calibration"

    def ready(self):
        from apps.accounts.home import home_panel_register
        from apps.accounts.roles import Role

        from .selectors import calibration, runs
        from .services import work  # noqa: F401  (registers the engine's work)

        home_panel_register(
            key="grading.calibration",
            roles={Role.EXPERT, Role.RESEARCHER},
            template="grading/calibration_home_panel.html",
            order=150,
            context=lambda request: {"calibration": calibration.expert_queue(user=request.user)},
        )
        home_panel_register(
            key="grading.researcher",
            roles={Role.RESEARCHER},
            template="grading/home_researcher_panel.html",
            order=410,
            context=lambda request: {"grading_runs": runs.grading_runs_recent()},
        )
