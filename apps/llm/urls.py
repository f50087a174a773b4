from django.urls import path

from . import views

app_name = "llm"
urlpatterns = [
    path("usage/", views.usage, name="usage"),
]
