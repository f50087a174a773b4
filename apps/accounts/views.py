from django.conf import settings
from django.contrib.auth import views as auth_views
from django.shortcuts import render

from .home import home_panels_render
from .roles import ALL_ROLES, public, role_required, user_roles


@role_required(*ALL_ROLES)
def home(request):
    """Each role sees its own work: the panels the apps registered for the user's roles."""
    context = {
        "my_roles": sorted(user_roles(request.user)),
        "panels": home_panels_render(request=request),
    }
    return render(request, "accounts/home.html", context)


login = public(
    auth_views.LoginView.as_view(
        template_name="registration/login.html", redirect_authenticated_user=True
    )
)
logout = public(auth_views.LogoutView.as_view())


def locked_out(request, response=None, credentials=None):
    """What django-axes answers, on either login page, while the username and address are
    locked out (AXES_LOCKOUT_CALLABLE): the reason and the wait, as a page, with 429."""
    context = {"minutes": round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)}
    return render(
        request, "registration/locked_out.html", context, status=settings.AXES_HTTP_RESPONSE_CODE
    )


# Changing a password needs an account but no particular role.
password_change = role_required(*ALL_ROLES)(
    auth_views.PasswordChangeView.as_view(template_name="registration/password_change.html")
)
password_change_done = role_required(*ALL_ROLES)(
    auth_views.PasswordChangeDoneView.as_view(
        template_name="registration/password_change_done.html"
    )
)
