"""Signed-in browser contexts for the browser tests (the login form has its own tests)."""

from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore


def signed_in(new_context, live_server, user, **kwargs):
    """A browser context whose session is `user`'s."""
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "apps.accounts.backends.RoleBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    context = new_context(**kwargs)
    context.add_cookies(
        [{"name": "sessionid", "value": session.session_key, "url": live_server.url}]
    )
    return context
