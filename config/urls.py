from django.contrib import admin
from django.urls import include, path, re_path

from apps.accounts import api_errors
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
    path("answer-studies/", include("apps.answer_studies.urls")),
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
    # Last: a URL under /api/ that nothing above matches answers the API's 404, whatever DEBUG is.
    re_path(r"^api/", api_errors.not_found, name=api_errors.NOT_FOUND_ROUTE),
]

# Django's answers to what is raised outside a view: the API's error shape under /api/.
handler400 = "apps.accounts.api_errors.bad_request"
handler403 = "apps.accounts.api_errors.permission_denied"
handler404 = "apps.accounts.api_errors.page_not_found"
handler500 = "apps.accounts.api_errors.server_error"
