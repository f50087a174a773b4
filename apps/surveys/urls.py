from django.urls import path

from apps.llm.progress import run_paths

from . import proxy_views, views

app_name = "surveys"
urlpatterns = [
    # Participants (public, anonymous): the Prolific link points at `entry`.
    path("s/<slug:slug>/", views.entry, name="entry"),
    path("s/<slug:slug>/consent/", views.consent, name="consent"),
    path("s/<slug:slug>/instructions/", views.instructions, name="instructions"),
    path("s/<slug:slug>/scenario/<int:assignment_id>/", views.scenario, name="scenario"),
    path(
        "s/<slug:slug>/scenario/<int:assignment_id>/answer/<str:code>/",
        views.answer,
        name="answer",
    ),
    path("s/<slug:slug>/about-you/", views.demographics, name="demographics"),
    path("s/<slug:slug>/done/", views.done, name="done"),
    # Researchers.
    path("studies/", views.study_list, name="study_list"),
    path("studies/new/", views.study_create, name="study_create"),
    path("studies/<int:study_id>/", views.study_detail, name="study_detail"),
    path("studies/<int:study_id>/edit/", views.study_edit, name="study_edit"),
    path("studies/<int:study_id>/status/", views.study_status, name="study_status"),
    path("studies/<int:study_id>/responses/", views.study_generate, name="study_generate"),
    path("studies/<int:study_id>/preview/", views.study_preview, name="study_preview"),
    path("studies/<int:study_id>/review/", views.study_review, name="study_review"),
    path(
        "studies/<int:study_id>/review/<int:participant_id>/",
        views.participant_review,
        name="participant_review",
    ),
    path("studies/<int:study_id>/approve/", views.study_approve, name="study_approve"),
    path("studies/<int:study_id>/sync/", views.study_sync, name="study_sync"),
    path("studies/<int:study_id>/approvals.csv", views.approvals_csv, name="approvals_csv"),
    path("studies/<int:study_id>/proxies/", proxy_views.proxy_runs, name="proxy_runs"),
    path(
        "studies/<int:study_id>/proxies/sweep/",
        proxy_views.proxy_sweep_create,
        name="proxy_sweep_create",
    ),
    path("studies/<int:study_id>/proxies/<int:run_id>/", proxy_views.proxy_run, name="proxy_run"),
    *run_paths(
        "studies/<int:study_id>/proxies/<int:run_id>/",
        proxy_views.proxy_run_move,
        name="proxy_run_{move}",
    ),
]

# Setting up studies on the researcher's pages (setup_views.py).
from . import setup_views  # noqa: E402

urlpatterns += [
    path("studies/setup/import/", setup_views.scenario_import, name="setup_import"),
    path("studies/<int:study_id>/items/", setup_views.survey_items, name="setup_items"),
    path(
        "studies/<int:study_id>/items/<int:item_id>/",
        setup_views.survey_item_edit,
        name="setup_item",
    ),
]
