"""Everything under /api/ answers in the API's error shape, with DEBUG off and on: a URL no
route matches, a method a route does not take, and whatever a view raises, a fault among
them (a JSON 500 whose traceback is logged). Elsewhere the site's pages stay HTML."""

import logging

import pytest
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404
from django.test import Client
from django.urls import include, path
from rest_framework.views import APIView

from config.urls import handler400, handler403, handler404, handler500  # noqa: F401

DEBUG = pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])

UNROUTABLE = [
    ("get", "/api/v1/nope/"),
    ("get", "/api/v1/topics/abc/"),
    ("post", "/api/v1/sampling-runs/null,null/pause/"),
    ("get", "/api/v1/topics/1/nope/"),
    ("get", "/api/v1/judgments/export/x"),
    ("delete", "/api/nope"),
    ("get", "/api/"),
]


def assert_error_shape(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert (error["status"], error["code"]) == (status, code)
    assert error["message"]
    return error


@DEBUG
@pytest.mark.parametrize(("method", "url"), UNROUTABLE)
def test_a_url_no_route_matches_is_a_404_in_the_error_shape(api, settings, debug, method, url):
    settings.DEBUG = debug
    response = getattr(api, method)(url)
    error = assert_error_shape(response, 404, "not_found")
    assert error["message"] == "There is nothing at this URL."


@DEBUG
def test_an_anonymous_caller_gets_the_same_404(db, settings, debug):
    settings.DEBUG = debug
    assert_error_shape(Client().get("/api/v1/nope/"), 404, "not_found")


@DEBUG
def test_a_browsers_post_to_no_route_is_a_404_not_a_csrf_refusal(api_researcher, settings, debug):
    settings.DEBUG = debug
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(api_researcher)
    response = browser.post("/api/v1/grading-runs/-4.4e-250/cancel/")
    assert_error_shape(response, 404, "not_found")


@DEBUG
def test_an_unknown_id_of_a_resource_is_a_404_in_the_error_shape(api, settings, debug):
    settings.DEBUG = debug
    assert_error_shape(api.get("/api/v1/grading-runs/999999/"), 404, "not_found")
    assert_error_shape(api.post("/api/v1/sampling-runs/999999/pause/"), 404, "not_found")


@DEBUG
@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("delete", "/api/v1/topics/"),
        ("put", "/api/v1/sampling-runs/1/"),
        ("get", "/api/v1/sampling-runs/1/launch/"),
        ("patch", "/api/v1/judgments/"),
    ],
)
def test_a_method_a_route_does_not_take_is_a_405_in_the_error_shape(
    api, settings, debug, method, url
):
    settings.DEBUG = debug
    assert_error_shape(getattr(api, method)(url), 405, "method_not_allowed")


@DEBUG
def test_an_api_url_without_its_slash_is_redirected_to_it_for_a_read_only(api, settings, debug):
    settings.DEBUG = debug
    read = api.get("/api/v1/topics?page_size=5")
    assert read.status_code == 301
    assert read["Location"] == "/api/v1/topics/?page_size=5"
    # A redirected POST would lose its body: it is told where to go instead.
    error = assert_error_shape(api.post("/api/v1/sampling-runs"), 404, "not_found")
    assert error["message"].endswith("/api/v1/sampling-runs/")


@DEBUG
def test_pages_outside_the_api_keep_their_html_404(client, db, settings, debug):
    settings.DEBUG = debug
    response = client.get("/nope/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_refused_host_under_the_api_is_a_400_in_the_error_shape(db):
    assert_error_shape(
        Client().get("/api/v1/topics/", HTTP_HOST="evil.example"), 400, "bad_request"
    )


# --- what a view raises ----------------------------------------------------------------------


class Raises(APIView):
    """An API view that fails as a bug would, past DRF's own exceptions."""

    def get(self, request):
        raise RuntimeError("the database is on fire")


def _raise(exc: Exception):
    def view(request):
        raise exc

    return view


urlpatterns = [
    path("api/v1/broken/", Raises.as_view()),
    path("api/v1/plain/broken/", _raise(RuntimeError("the database is on fire"))),
    path("api/v1/plain/missing/", _raise(Http404("no such rubric"))),
    path("api/v1/plain/forbidden/", _raise(PermissionDenied("not yours"))),
    path("api/v1/plain/bad/", _raise(BadRequest("no such page number"))),
    path("api/v1/plain/suspicious/", _raise(SuspiciousOperation("tampered signature"))),
    path("", include("config.urls")),
]


@pytest.mark.urls(__name__)
@DEBUG
@pytest.mark.parametrize("url", ["/api/v1/broken/", "/api/v1/plain/broken/"])
def test_a_fault_in_an_api_view_is_a_500_in_the_error_shape_with_its_traceback_logged(
    api, settings, caplog, debug, url
):
    settings.DEBUG = debug
    caplog.set_level(logging.INFO)
    api.raise_request_exception = False
    error = assert_error_shape(api.get(url), 500, "server_error")
    assert "fire" not in error["message"], "a fault's details are the log's, not the caller's"
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.levelno == logging.ERROR and record.status_code == 500
    assert "Traceback" in caplog.text and "the database is on fire" in caplog.text


@pytest.mark.urls(__name__)
@DEBUG
@pytest.mark.parametrize(
    ("url", "status", "code"),
    [
        ("/api/v1/plain/missing/", 404, "not_found"),
        ("/api/v1/plain/forbidden/", 403, "permission_denied"),
        ("/api/v1/plain/bad/", 400, "bad_request"),
        ("/api/v1/plain/suspicious/", 400, "bad_request"),
    ],
)
def test_djangos_refusals_in_an_api_view_are_in_the_error_shape(
    api, settings, caplog, debug, url, status, code
):
    settings.DEBUG = debug
    caplog.set_level(logging.INFO)
    api.raise_request_exception = False
    assert_error_shape(api.get(url), status, code)
    assert "Traceback" not in caplog.text
