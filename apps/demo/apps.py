from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo that `make run` loads. It reads every app; no app imports it."""

    name = "apps.demo"
    label = "demo"
    verbose_name = "Demo data"
