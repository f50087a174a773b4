from django.urls import path

from . import views

app_name = "analysis"
urlpatterns = [
    path("", views.report_index, name="index"),
    path("studies/<int:study_id>/survey/", views.survey_report_page, name="survey_report"),
    path(
        "studies/<int:study_id>/survey/tables/<slug:name>.csv",
        views.survey_table_csv,
        name="survey_table_csv",
    ),
    path(
        "studies/<int:study_id>/survey/figures/<slug:name>.svg",
        views.survey_figure_svg,
        name="survey_figure_svg",
    ),
    path(
        "studies/<int:study_id>/survey/bootstrap/",
        views.survey_bootstrap,
        name="survey_bootstrap",
    ),
    path(
        "studies/<int:study_id>/survey/disagreements/",
        views.survey_disagreements,
        name="survey_disagreements",
    ),
]
