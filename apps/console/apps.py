from django.contrib.admin.apps import AdminConfig


class ConsoleAdminConfig(AdminConfig):
    """Django's admin, as the researcher's console: `admin.site` is a ResearcherAdminSite."""

    default_site = "apps.console.sites.ResearcherAdminSite"
