from django.urls import path

from apps.llm.progress import run_paths

from . import views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("new/", views.run_new, name="new"),
    path("<int:run_id>/", views.run_detail, name="detail"),
    *run_paths("<int:run_id>/", views.run_move, name="{move}"),
    path("<int:run_id>/responses/", views.run_responses, name="responses"),
    path("<int:run_id>/export/responses.csv", views.export_responses, name="export_responses"),
]
