from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Sampling runs and the responses they collect (grading comes later)."""

    name = "apps.runs"
    label = "runs"
    verbose_name = "Model runs"
