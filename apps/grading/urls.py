from django.urls import include, path

from apps.llm.progress import run_paths

from .views import answers, runs

app_name = "grading"

# Grading runs' routes are below; calibration's live in calibration_urls.py.
urlpatterns = [
    path("calibration/", include("apps.grading.calibration_urls")),
    path("", runs.run_list, name="list"),
    path("new/", runs.run_new, name="run_new"),
    path("<int:pk>/", runs.run_detail, name="run_detail"),
    path("<int:pk>/judgments/", runs.judgments, name="judgments"),
    path("<int:pk>/answers/", answers.answers, name="answers"),
    path("<int:pk>/export/judgments.csv", runs.export_judgments, name="export_judgments"),
    path("<int:pk>/export/scores.csv", runs.export_scores, name="export_scores"),
    path("<int:pk>/export/everything.zip", runs.export_everything, name="export_everything"),
    *run_paths("<int:pk>/", runs.run_move, name="run_{move}"),
]
