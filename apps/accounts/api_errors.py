"""Every error the API answers, in one shape, documented once:

    {"error": {"status": 404, "code": "not_found", "message": "...", "fields": {...}}}

`fields` (a list of messages per field) comes with validation errors only. The DRF
exception handler (`api_exception_handler`, REST_FRAMEWORK's EXCEPTION_HANDLER) shapes what
DRF raises (401, 403, 404, 405, 415, 429, 400) and the domain errors the API's views
turn into `Refused` (400) or `Conflict` (409); `page_not_found` (config/urls.py's handler404)
shapes Django's own 404 for a URL under /api/ that matches nothing; `errors_documented`
(a drf-spectacular postprocessing hook) attaches the shape to every operation's errors.
"""

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler

logger = logging.getLogger("apps.api")

API_PREFIX = "/api/"
ERROR_SCHEMA = "Error"
INVALID_MESSAGE = "The request is not valid: see the fields."


class Refused(exceptions.APIException):
    """A request the domain refuses as asked (a run with no questions): 400."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "refused"
    default_detail = "The request was refused."


class Conflict(exceptions.APIException):
    """A request the resource's state refuses (launching a finished run): 409."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "The resource is not in a state that allows this."


def error_body(*, status_code: int, code: str, message: str, fields: dict | None = None) -> dict:
    error = {"status": status_code, "code": code, "message": message}
    if fields is not None:
        error["fields"] = fields
    return {"error": error}


def _flatten(detail, prefix: str = "") -> dict[str, list[str]]:
    """A ValidationError's detail as {field: [messages]}; nested fields as "a.b" or "a.0"."""
    if isinstance(detail, dict):
        flat = {}
        for key, value in detail.items():
            flat |= _flatten(value, f"{prefix}.{key}" if prefix else str(key))
        return flat
    if isinstance(detail, list) and any(isinstance(v, dict | list) for v in detail):
        flat = {}
        for index, value in enumerate(detail):
            flat |= _flatten(value, f"{prefix}.{index}" if prefix else str(index))
        return flat
    messages = detail if isinstance(detail, list) else [detail]
    return {prefix or "non_field_errors": [str(m) for m in messages]} if messages else {}


def _code(detail, default: str) -> str:
    return getattr(detail, "code", None) or default


def api_exception_handler(exc, context):
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) if str(exc) else None)
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) if str(exc) else None)
    response = exception_handler(exc, context)
    if response is None:
        if settings.DEBUG:
            return None  # Django's debug page, with the traceback
        logger.error("Unhandled error in the API", exc_info=exc)
        body = error_body(
            status_code=500, code="server_error", message="Something went wrong on our side."
        )
        return Response(body, status=500)
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        if list(fields) == ["non_field_errors"] and len(fields["non_field_errors"]) == 1:
            message = fields["non_field_errors"][0]
        else:
            message = INVALID_MESSAGE
        response.data = error_body(
            status_code=response.status_code, code="invalid", message=message, fields=fields
        )
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        response.data = error_body(
            status_code=response.status_code,
            code=_code(detail, "error"),
            message=str(detail),
        )
    return response


class JsonErrors:
    """A view mixin for a DRF view that serves another type (the schema's YAML): its errors
    are JSON all the same, as documented."""

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


def page_not_found(request, exception=None):
    """Django's 404 (no URL matched): in the API's shape under /api/, the site's page elsewhere."""
    if request.path.startswith(API_PREFIX):
        body = error_body(
            status_code=404, code="not_found", message="There is nothing at this URL."
        )
        return JsonResponse(body, status=404)
    return defaults.page_not_found(request, exception)


# --- the schema ----------------------------------------------------------------------------

ERROR_COMPONENT = {
    "type": "object",
    "description": "Every error the API answers has this shape.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "status": {"type": "integer", "description": "The HTTP status, repeated."},
                "code": {"type": "string", "description": "A short code: not_found, invalid, ..."},
                "message": {"type": "string", "description": "What went wrong, for a person."},
                "fields": {
                    "type": "object",
                    "description": "Validation errors only: the messages for each field.",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
            "required": ["status", "code", "message"],
        }
    },
    "required": ["error"],
}
ERRORS = {
    "400": "The request is not valid (`fields` says why), or the domain refused it.",
    "401": "No credentials, or a malformed, unknown or revoked token, or an inactive account.",
    "403": "The account is not a researcher's.",
    "404": "No such resource, or an invalid cursor.",
    "405": "The method is not allowed here.",
    "429": "Too many requests: wait for the time in Retry-After.",
}
WRITE_ERRORS = {
    "409": "The resource's state does not allow this (a finished run cannot be launched).",
    "415": "The body's media type is not one this operation reads.",
}
WRITE_METHODS = {"post", "put", "patch", "delete"}


def errors_documented(result, generator, request, public):
    """Attach the one error shape to every operation's 4xx responses (postprocessing hook)."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components[ERROR_SCHEMA] = ERROR_COMPONENT
    reference = {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}
    for path in result.get("paths", {}).values():
        for method, operation in path.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            errors = ERRORS | (WRITE_ERRORS if method in WRITE_METHODS else {})
            for code, description in errors.items():
                operation["responses"].setdefault(
                    code,
                    {"description": description,
                     "content": {"application/json": {"schema": reference}}},
                )  # fmt: skip
    return result
