from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    """Statistics, reports and plots over every other app. It reads them all; none imports it."""

    name = "apps.analysis"
    label = "analysis"
    verbose_name = "Analysis"
