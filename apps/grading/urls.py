from django.urls import include, path

app_name = "grading"

# Grading runs' routes are below; calibration's live in calibration_urls.py.
urlpatterns = [
    path("calibration/", include("apps.grading.calibration_urls")),
]
