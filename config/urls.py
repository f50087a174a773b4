from django.contrib import admin
from django.urls import include, path

from apps.accounts.roles import Role, role_required
from apps.ops.views import favicon, healthz
from config import api

urlpatterns = [
    path("", include("apps.accounts.urls")),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("llm/", include("apps.llm.urls")),
    path("questions/", include("apps.questions.urls")),
    path("rubrics/", include("apps.rubrics.urls")),
    path("runs/", include("apps.runs.urls")),
    path("grading/", include("apps.grading.urls")),
    path("", include("apps.surveys.urls")),
    path("analysis/", include("apps.analysis.urls")),
    # The API (config/api.py): researchers only, with a token or the browser's session. The
    # schema is a DRF view (IsResearcher, SPECTACULAR_SETTINGS' SERVE_PERMISSIONS) so that
    # tokens reach it; the docs page is for the browser, so a visitor signs in first.
    path("api/v1/", include((api.urlpatterns, "api"))),
    path("api/schema/", api.SchemaView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        role_required(Role.RESEARCHER)(api.DocsView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
]

# Django's 404 for a URL that matches nothing: the API's error shape under /api/.
handler404 = "apps.accounts.api_errors.page_not_found"
