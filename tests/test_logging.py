"""A refused request is one log line; a server error keeps its traceback."""

import logging

import pytest
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404
from django.test import Client
from django.urls import include, path, reverse


def _raise(exc: Exception):
    def view(request):
        raise exc

    return view


urlpatterns = [
    path("forbidden", _raise(PermissionDenied("not yours"))),
    path("bad", _raise(BadRequest("no such page number"))),
    path("suspicious", _raise(SuspiciousOperation("tampered signature"))),
    path("missing", _raise(Http404("no such rubric"))),
    path("broken", _raise(RuntimeError("the database is on fire"))),
    path("", include("config.urls")),  # the error pages link to them
]


def request_records(caplog):
    return [r for r in caplog.records if r.name.startswith(("django.request", "django.security"))]


def assert_one_line(records, status):
    assert len(records) == 1, [r.getMessage() for r in records]
    (record,) = records
    assert record.status_code == status
    assert record.exc_info is None and record.exc_text is None
    assert "Traceback" not in logging.getLogger().handlers[0].format(record)


def test_a_403_of_a_role_guard_logs_one_line_without_a_traceback(role_client, caplog):
    caplog.set_level(logging.INFO)
    response = role_client(None).get(reverse("home"))
    assert response.status_code == 403
    assert_one_line(request_records(caplog), 403)
    assert "Traceback" not in caplog.text


@pytest.mark.urls(__name__)
@pytest.mark.parametrize(
    ("url", "status"),
    [("/forbidden", 403), ("/bad", 400), ("/suspicious", 400), ("/missing", 404)],
)
def test_a_refusal_logs_one_line_without_a_traceback(db, caplog, url, status):
    caplog.set_level(logging.INFO)
    assert Client().get(url).status_code == status
    assert_one_line(request_records(caplog), status)
    assert "Traceback" not in caplog.text


def test_a_disallowed_host_logs_one_line_without_a_traceback(db, caplog):
    caplog.set_level(logging.INFO)
    assert Client().get("/healthz", HTTP_HOST="evil.example").status_code == 400
    records = request_records(caplog)
    assert [r.name for r in records] == ["django.security.DisallowedHost"]
    assert_one_line(records, 400)


@pytest.mark.urls(__name__)
def test_a_server_error_still_logs_its_traceback(db, caplog):
    caplog.set_level(logging.INFO)
    assert Client(raise_request_exception=False).get("/broken").status_code == 500
    (record,) = request_records(caplog)
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "Traceback" in caplog.text and "the database is on fire" in caplog.text
