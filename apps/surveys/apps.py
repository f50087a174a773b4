from django.apps import AppConfig


class SurveysConfig(AppConfig):
    name = "apps.surveys"
    verbose_name = "User-perception studies"
