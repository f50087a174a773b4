from django.apps import AppConfig


class SurveysConfig(AppConfig):
    name = "apps.surveys"
    verbose_name = "User-perception studies"

    def ready(self):
        from apps.accounts.home import home_panel_register
        from apps.accounts.roles import Role

        from . import selectors

        home_panel_register(
            key="surveys.researcher",
            roles={Role.RESEARCHER},
            template="surveys/home_researcher_panel.html",
            order=300,
            context=lambda request: {"studies": selectors.studies_overview()},
        )
