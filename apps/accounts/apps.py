from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = "Accounts"

    def ready(self):
        from .home import home_panel_register
        from .roles import Role

        home_panel_register(
            key="accounts.researcher",
            roles={Role.RESEARCHER},
            template="accounts/_home_researcher.html",
            order=900,
        )
