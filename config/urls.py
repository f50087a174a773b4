from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from apps.accounts.roles import Role, role_required
from apps.ops.views import favicon, healthz

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
    path(
        "api/schema/",
        role_required(Role.RESEARCHER)(SpectacularAPIView.as_view()),
        name="api-schema",
    ),
]
