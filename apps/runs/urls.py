from django.urls import path

from . import views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("new/", views.run_new, name="new"),
    path("<int:run_id>/", views.run_detail, name="detail"),
    path("<int:run_id>/launch/", views.run_launch, name="launch"),
    path("<int:run_id>/pause/", views.run_pause, name="pause"),
    path("<int:run_id>/resume/", views.run_resume, name="resume"),
    path("<int:run_id>/cancel/", views.run_cancel, name="cancel"),
    path("<int:run_id>/budget/", views.run_budget, name="budget"),
    path("<int:run_id>/retry/", views.run_retry, name="retry"),
    path("<int:run_id>/responses/", views.run_responses, name="responses"),
    path("<int:run_id>/export/responses.csv", views.export_responses, name="export_responses"),
]
