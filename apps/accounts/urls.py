from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", views.login, name="login"),
    path("accounts/logout/", views.logout, name="logout"),
    path("accounts/password/", views.password_change, name="password_change"),
    path("accounts/password/done/", views.password_change_done, name="password_change_done"),
    path("accounts/tokens/", views.api_tokens, name="api_tokens"),
    path(
        "accounts/tokens/<int:token_id>/revoke/",
        views.api_token_revoke_view,
        name="api_token_revoke",
    ),
]
