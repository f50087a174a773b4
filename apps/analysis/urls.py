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
    # The answer-study report of a study of a benchmark's answers.
    path(
        "studies/<int:study_id>/answers/",
        views.answer_study_report_page,
        name="answer_study_report",
    ),
    path(
        "studies/<int:study_id>/answers/tables/<slug:name>.csv",
        views.answer_study_table_csv,
        name="answer_study_table_csv",
    ),
    path(
        "studies/<int:study_id>/answers/figures/<slug:name>.svg",
        views.answer_study_figure_svg,
        name="answer_study_figure_svg",
    ),
    path(
        "studies/<int:study_id>/answers/bootstrap/",
        views.answer_study_bootstrap,
        name="answer_study_bootstrap",
    ),
    # The benchmark report of a grading run.
    path("grading/<int:run_id>/", views.benchmark_report_page, name="benchmark_report"),
    path(
        "grading/<int:run_id>/tables/<slug:name>.csv",
        views.benchmark_table_csv,
        name="benchmark_table_csv",
    ),
    path(
        "grading/<int:run_id>/figures/<slug:name>.svg",
        views.benchmark_figure_svg,
        name="benchmark_figure_svg",
    ),
    path(
        "grading/<int:run_id>/below-65/answers/",
        views.benchmark_low_responses,
        name="benchmark_low_responses",
    ),
    path(
        "grading/<int:run_id>/below-65/questions/",
        views.benchmark_low_questions,
        name="benchmark_low_questions",
    ),
    path(
        "grading/<int:run_id>/compare/",
        views.benchmark_compare_choose,
        name="benchmark_compare_choose",
    ),
    path(
        "grading/<int:run_id>/compare/<int:other_id>/",
        views.benchmark_compare,
        name="benchmark_compare",
    ),
    path(
        "grading/<int:run_id>/compare/<int:other_id>/tables/<slug:name>.csv",
        views.benchmark_compare_csv,
        name="benchmark_compare_csv",
    ),
]
