"""Every error the API answers, in one shape, documented once:

    {"error": {"status": 404, "code": "not_found", "message": "...", "fields": {...}}}

`fields` (a list of messages per field) comes with validation errors only. The DRF
exception handler (`api_exception_handler`, REST_FRAMEWORK's EXCEPTION_HANDLER) shapes what
DRF raises (401, 403, 404, 405, 415, 429, 400) and the domain errors the API's views
turn into `Refused` (400) or `Conflict` (409); `errors_documented` (a drf-spectacular
postprocessing hook) attaches the shape to every operation's errors.

Django answers everything else in HTML, and with DEBUG on in its debug pages, which never
call the error handlers. So under /api/, whatever DEBUG is: a URL no route matches reaches
`not_found` (config/urls.py's last route), an exception a view raises is answered by
`ApiErrorsMiddleware` (the 500 among them), and config/urls.py's handler400, handler403,
handler404 and handler500 answer what is raised outside a view.
"""

import logging

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpResponsePermanentRedirect, JsonResponse
from django.urls import is_valid_path
from django.utils.log import log_response
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.views import exception_handler

from .roles import public

API_PREFIX = "/api/"
NOT_FOUND_ROUTE = "api-not-found"
ERROR_SCHEMA = "Error"
INVALID_MESSAGE = "The request is not valid: see the fields."
# What Django's own answers under /api/ say: (code, message) by status.
DJANGO_ERRORS = {
    400: ("bad_request", "The request could not be read."),
    403: ("permission_denied", "You do not have permission to perform this action."),
    404: ("not_found", "There is nothing at this URL."),
    500: ("server_error", "Something went wrong on our side."),
}


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
        return None  # DRF raises it again, and ApiErrorsMiddleware answers it
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


def is_api(request) -> bool:
    return request.path_info.startswith(API_PREFIX)


def django_error(status_code: int, message: str | None = None) -> JsonResponse:
    code, default = DJANGO_ERRORS[status_code]
    body = error_body(status_code=status_code, code=code, message=message or default)
    return JsonResponse(body, status=status_code)


@public
@csrf_exempt  # it changes nothing, and a POST with a session cookie must get its 404, not a 403
def not_found(request):
    """Every URL under /api/ that no other route matches (config/urls.py's last route): 404 in
    the error shape. Django's debug 404 page, with DEBUG on, never reaches handler404.

    Being a route, it also decides what APPEND_SLASH did: a GET of an API URL without its
    slash is redirected to it; any other method is told the URL, not redirected, since a
    redirected POST loses its body (and with DEBUG on Django raised a 500 instead)."""
    path = request.path_info
    if settings.APPEND_SLASH and not path.endswith("/"):
        match = is_valid_path(f"{path}/", getattr(request, "urlconf", None))
        if match and match.url_name != NOT_FOUND_ROUTE:
            if request.method in ("GET", "HEAD"):
                return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
            return django_error(
                404, f"There is nothing at this URL; it ends in a slash: {request.path}/"
            )
    return django_error(404)


class ApiErrorsMiddleware:
    """An exception a view under /api/ raises answers in the error shape, whatever DEBUG is,
    and is logged as Django logs it (a 500 with its traceback). DRF's views raise here only
    what their exception handler leaves: a fault, or Django's BadRequest and
    SuspiciousOperation. Elsewhere Django answers, as it does."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not is_api(request):
            return None
        if isinstance(exception, Http404):
            return django_error(404)
        if isinstance(exception, PermissionDenied):
            return django_error(403)
        status_code = 400 if isinstance(exception, BadRequest | SuspiciousOperation) else 500
        response = django_error(status_code)
        if isinstance(exception, SuspiciousOperation):
            name = exception.__class__.__name__
            log_response(
                str(exception),
                response=response,
                request=request,
                exception=exception,
                level="error",
                logger=logging.getLogger(f"django.security.{name}"),
            )
        else:
            log_response(
                "%s: %s",
                response.reason_phrase,
                request.path,
                response=response,
                request=request,
                exception=exception,
            )
        return response


def _api_or_page(status_code: int, page):
    """config/urls.py's handler for a status: the error shape under /api/, the page elsewhere."""

    def handler(request, *args, **kwargs):
        if is_api(request):
            return django_error(status_code)
        return page(request, *args, **kwargs)

    handler.__name__ = page.__name__
    return handler


bad_request = _api_or_page(400, defaults.bad_request)
permission_denied = _api_or_page(403, defaults.permission_denied)
page_not_found = _api_or_page(404, defaults.page_not_found)
server_error = _api_or_page(500, defaults.server_error)


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
                    {
                        "description": description,
                        "content": {"application/json": {"schema": reference}},
                    },
                )
    return result
