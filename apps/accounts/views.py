from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from .errors import AccountError
from .forms import ApiTokenForm
from .home import home_panels_render
from .lockout import ADDRESS_LOCKED
from .models import ApiToken
from .roles import ALL_ROLES, Role, public, role_required, user_roles
from .services import api_token_create, api_token_revoke


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
    """What django-axes answers, on either login page, while the username and address, or the
    address alone, are locked out (AXES_LOCKOUT_CALLABLE): the reason and the wait, as a page,
    with 429."""
    context = {
        "minutes": round(settings.AXES_COOLOFF_TIME.total_seconds() / 60),
        "address_locked": getattr(request, ADDRESS_LOCKED, False),
    }
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


@role_required(Role.RESEARCHER)
def api_tokens(request):
    """One's own API tokens; a POST makes one and shows its key, this once."""
    status, key, made = 200, None, None
    form = ApiTokenForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                made, key = api_token_create(user=request.user, name=form.cleaned_data["name"])
            except AccountError as exc:
                form.add_error("name", str(exc))
                status = 400
            else:
                form = ApiTokenForm()
        else:
            status = 400
    tokens = ApiToken.objects.filter(user=request.user)
    context = {"form": form, "tokens": tokens, "key": key, "made": made}
    response = render(request, "accounts/api_tokens.html", context, status=status)
    if key is not None:
        # The key is in this page alone: no cache, no back-button copy, may keep it.
        response["Cache-Control"] = "no-store"
    return response


@role_required(Role.RESEARCHER)
@require_POST
def api_token_revoke_view(request, token_id: int):
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    if request.POST.get("confirmed") != "yes":
        return render(request, "accounts/api_token_revoke.html", {"token": token})
    api_token_revoke(token=token, user=request.user)
    messages.success(request, f"Revoked: the token “{token.name}” is refused from now on.")
    return redirect("api_tokens")
