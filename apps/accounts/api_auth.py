"""The API's token authentication: `Authorization: Bearer <key>`, with a key made on the
tokens page (`/accounts/tokens/`, `api_token_create`).

A request without that header is left to the next authentication class (the browser's
session, for the docs page); one with it is either a known, unrevoked token of an active
user or refused with 401, whatever else the request carries. Whether the user may read the
API is the permission's question (`IsResearcher`): a token of someone who is no longer a
researcher is authenticated and then refused with 403.
"""

import datetime as dt
import re

from django.contrib.auth.models import Group
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from .models import ApiToken
from .roles import user_roles_known
from .services import API_KEY_PREFIX, api_key_sha256, api_token_touch

KEYWORD = b"bearer"
KEY_FORMAT = re.compile(re.escape(API_KEY_PREFIX) + r"[A-Za-z0-9_-]{20,100}")
# `last_used_at` is written at most this often per token: a client paging through a long
# list would otherwise write a row for every page.
TOUCH_EVERY = dt.timedelta(minutes=1)


class TokenRefused(exceptions.AuthenticationFailed):
    def __init__(self, message: str, code: str):
        super().__init__(message, code=code)


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != KEYWORD:
            return None
        if len(parts) != 2:
            raise TokenRefused(
                "The Authorization header must be 'Bearer <key>', with one key.", "token_malformed"
            )
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            key = ""
        if not KEY_FORMAT.fullmatch(key):
            raise TokenRefused("This is not an Assay API key.", "token_malformed")
        # The token, its user and the user's groups in one query: every API request asks.
        groups = Group.objects.filter(user=OuterRef("user_id")).values("name")
        token = (
            ApiToken.objects.select_related("user")
            .annotate(group_names=ArraySubquery(groups))
            .filter(key_sha256=api_key_sha256(key))
            .first()
        )
        if token is None:
            raise TokenRefused("No API token has this key.", "token_unknown")
        if token.revoked_at is not None:
            raise TokenRefused("This API token was revoked.", "token_revoked")
        if not token.user.is_active:
            raise TokenRefused("The account this token belongs to is inactive.", "user_inactive")
        user_roles_known(token.user, token.group_names)
        api_token_touch(token=token, every=TOUCH_EVERY)
        return token.user, token

    def authenticate_header(self, request):
        # Makes an unauthenticated request a 401 (with this challenge), not a 403.
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key made on /accounts/tokens/: `Authorization: Bearer <key>`.",
        }
