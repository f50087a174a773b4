"""The API's URLs, /api/v1/ (docs/api.md): a router over every app's viewsets (each
app's `api.py` holds its serializers, filters and viewsets) and the reports' views.
Researchers only, with a token or a session; every error in one shape
(apps/accounts/api_errors.py)."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from apps.accounts.api_errors import JsonErrors
from apps.analysis import api as analysis
from apps.grading import api as grading
from apps.questions import api as questions
from apps.rubrics import api as rubrics
from apps.runs import api as runs
from apps.surveys import api as surveys

router = SimpleRouter(use_regex_path=False)
router.register("topics", questions.TopicViewSet, basename="topic")
router.register("questions", questions.QuestionViewSet, basename="question")
router.register("rubrics", rubrics.RubricViewSet, basename="rubric")
router.register("sampling-runs", runs.SamplingRunViewSet, basename="sampling-run")
router.register("responses", runs.ResponseViewSet, basename="response")
router.register("grading-runs", grading.GradingRunViewSet, basename="grading-run")
router.register("judgments", grading.JudgmentViewSet, basename="judgment")
router.register("scores", grading.ScoreViewSet, basename="score")
router.register("calibrations", grading.CalibrationViewSet, basename="calibration")
router.register("studies", surveys.StudyViewSet, basename="study")
router.register("scenarios", surveys.ScenarioViewSet, basename="scenario")
router.register("participants", surveys.ParticipantViewSet, basename="participant")
router.register("answers", surveys.AnswerViewSet, basename="answer")
router.register("proxy-runs", surveys.ProxyRunViewSet, basename="proxy-run")

SURVEY = "reports/studies/<int:study_id>/survey/"
ANSWER_STUDY = "reports/studies/<int:study_id>/answers/"
BENCHMARK = "reports/grading-runs/<int:run_id>/"
urlpatterns = [
    *router.urls,
    path(SURVEY, analysis.SurveyReportView.as_view(), name="report-survey"),
    path(
        SURVEY + "tables/<slug:name>/",
        analysis.SurveyTableView.as_view(),
        name="report-survey-table",
    ),
    path(
        SURVEY + "tables/<slug:name>.csv",
        analysis.SurveyTableCsvView.as_view(),
        name="report-survey-table-csv",
    ),
    path(ANSWER_STUDY, analysis.AnswerStudyReportView.as_view(), name="report-answer-study"),
    path(
        ANSWER_STUDY + "tables/<slug:name>/",
        analysis.AnswerStudyTableView.as_view(),
        name="report-answer-study-table",
    ),
    path(
        ANSWER_STUDY + "tables/<slug:name>.csv",
        analysis.AnswerStudyTableCsvView.as_view(),
        name="report-answer-study-table-csv",
    ),
    path(BENCHMARK, analysis.BenchmarkReportView.as_view(), name="report-grading-run"),
    path(
        BENCHMARK + "tables/<slug:name>/",
        analysis.BenchmarkTableView.as_view(),
        name="report-grading-run-table",
    ),
    path(
        BENCHMARK + "tables/<slug:name>.csv",
        analysis.BenchmarkTableCsvView.as_view(),
        name="report-grading-run-table-csv",
    ),
]


class DocsView(SpectacularSwaggerSplitView):
    """Swagger UI from our own static files (drf-spectacular-sidecar: no CDN), its start-up
    script served by the same view (`?script`), so that the page runs no inline script."""

    template_name = "accounts/api_docs.html"


class SchemaView(JsonErrors, SpectacularAPIView):
    """The OpenAPI 3 schema (YAML, or JSON with ?format=json), researchers only."""
