from django.urls import path

from . import views

app_name = "rubrics"
urlpatterns = [
    path("", views.index, name="index"),
    path("workspace/", views.workspace, name="workspace"),
    path("workspace/questions/<int:question_id>/", views.assign, name="assign"),
    path("workspace/topics/<int:topic_id>/", views.topic_claiming, name="topic_claiming"),
    path("shared/", views.shared_criteria, name="shared"),
    path("freshness/", views.freshness, name="freshness"),
    path("export/", views.export, name="export"),
    path("import/", views.import_upload, name="import"),
    path("import/<int:pk>/", views.import_preview, name="import_preview"),
    path("questions/<int:question_id>/", views.question, name="question"),
    path("questions/<int:question_id>/start/", views.start, name="start"),
    path("questions/<int:question_id>/claim/", views.claim, name="claim"),
    path("questions/<int:question_id>/history/", views.history, name="history"),
    path("<int:pk>/", views.rubric, name="rubric"),
    path("<int:pk>/criteria/", views.criterion_add, name="criterion_add"),
    path("<int:pk>/criteria/<int:criterion_id>/", views.criterion_edit, name="criterion_edit"),
    path(
        "<int:pk>/criteria/<int:criterion_id>/delete/",
        views.criterion_delete,
        name="criterion_delete",
    ),
    path("<int:pk>/criteria/<int:criterion_id>/move/", views.criterion_move, name="criterion_move"),
    path("<int:pk>/suggest/", views.suggest, name="suggest"),
    path("<int:pk>/suggestions/", views.suggestions, name="suggestions"),
    path(
        "<int:pk>/suggestions/<int:suggestion_id>/accept/",
        views.suggestion_accept,
        name="suggestion_accept",
    ),
    path(
        "<int:pk>/suggestions/<int:suggestion_id>/reject/",
        views.suggestion_reject,
        name="suggestion_reject",
    ),
    path("<int:pk>/samples/", views.samples, name="samples"),
    path("<int:pk>/comments/", views.comment, name="comment"),
    path("<int:pk>/submit/", views.submit, name="submit"),
    path("<int:pk>/request-changes/", views.request_changes, name="request_changes"),
    path("<int:pk>/approve/", views.approve, name="approve"),
    path("<int:pk>/claim-review/", views.claim_review, name="claim_review"),
    path("<int:pk>/next-version/", views.start_next, name="start_next"),
]
