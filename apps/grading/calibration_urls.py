"""Calibration's routes, included by urls.py under calibration/ (namespace grading)."""

from django.urls import path

from .views import calibration as views

urlpatterns = [
    path("", views.calibration_sets, name="calibration_sets"),
    path("mine/", views.calibration_queue, name="calibration_queue"),
    path("<int:pk>/", views.calibration_set, name="calibration_set"),
    path("<int:pk>/calibrate/", views.calibration_open, name="calibration_open"),
    path("answers/<int:pk>/", views.calibration_grade, name="calibration_grade"),
    path(
        "answers/<int:pk>/adjudicate/", views.calibration_adjudicate, name="calibration_adjudicate"
    ),
    path("reports/<int:pk>/", views.calibration_report, name="calibration_report"),
    path("answers/undo/", views.calibration_undo, name="calibration_undo"),
]
