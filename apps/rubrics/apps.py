from django.apps import AppConfig


class RubricsConfig(AppConfig):
    """Rubrics, their criteria, review, versions and scoring. Builds on questions and runs."""

    name = "apps.rubrics"
    label = "rubrics"
    verbose_name = "Rubrics"
