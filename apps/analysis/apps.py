from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    """Statistics, reports and plots over every other app. It reads them all; none imports it."""

    name = "apps.analysis"
    label = "analysis"
    verbose_name = "Analysis"

    def ready(self):
        from apps.grading.selectors.archive import archive_sheet_register

        from .method import method_sheet_lines

        archive_sheet_register(
            name="method.csv",
            description="How each number of the run's benchmark report is made, against the "
            "paper: the report's method panel.",
            lines=method_sheet_lines,
        )
