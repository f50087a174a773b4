from django.urls import path

from . import views

app_name = "answer_studies"
urlpatterns = [
    path("", views.answer_study_list, name="list"),
    path("new/", views.answer_study_new, name="create"),
    path("<int:study_id>/draw/", views.answer_draw, name="draw"),
]
