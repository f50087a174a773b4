"""The home page's panels. Each app contributes its own (in its AppConfig.ready), so that
accounts, the platform, knows nothing of rubrics, studies or runs: a panel is an app's own
template and the function that gives it its context, shown to the roles it names."""

from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from .roles import Role, user_roles


@dataclass(frozen=True)
class HomePanel:
    key: str
    roles: frozenset[Role]
    template: str
    context: Callable[[HttpRequest], dict] | None
    order: int


_PANELS: dict[str, HomePanel] = {}


def home_panel_register(
    *,
    key: str,
    roles: set[Role],
    template: str,
    context: Callable[[HttpRequest], dict] | None = None,
    order: int = 100,
) -> HomePanel:
    """Show `template` on the home page of users with any of `roles`, lowest `order` first.
    Registering the same key again replaces the panel (ready() may run more than once)."""
    panel = HomePanel(key, frozenset(roles), template, context, order)
    _PANELS[key] = panel
    return panel


def home_panels_render(*, request: HttpRequest) -> list[SafeString]:
    """The panels for the signed-in user's roles, rendered with the request's context."""
    roles = user_roles(request.user)
    shown = sorted((p for p in _PANELS.values() if p.roles & roles), key=lambda p: (p.order, p.key))
    return [
        render_to_string(p.template, p.context(request) if p.context else {}, request=request)
        for p in shown
    ]
