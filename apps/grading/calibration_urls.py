"""Calibration's routes, included by urls.py under calibration/ (namespace grading)."""

urlpatterns = []
