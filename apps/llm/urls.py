from django.urls import path

from . import views

app_name = "llm"
urlpatterns = [
    path("usage/", views.usage, name="usage"),
]

# The models, on the researcher's pages (setup_views.py).
from . import setup_views  # noqa: E402

urlpatterns += [
    path("models/", setup_views.model_list, name="setup_models"),
    path("models/new/", setup_views.model_new, name="setup_model_new"),
    path("models/<int:pk>/", setup_views.model_edit, name="setup_model"),
]
