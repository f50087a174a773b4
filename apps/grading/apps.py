from django.apps import AppConfig


class GradingConfig(AppConfig):
    """Grading runs, judgments, scores, expert judgments and calibration. It depends on
    runs and rubrics, never the other way."""

    name = "apps.grading"
    label = "grading"
    verbose_name = "Grading and calibration"

    def ready(self):
        from .services import work  # noqa: F401  (registers the engine's work)
