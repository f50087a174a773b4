import datetime as dt

from django.urls import reverse
from django.utils import timezone

from apps.ops.models import Heartbeat


def test_healthz_reports_database_and_broker(client, db):
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["broker"] == "ok"
    assert body["worker_heartbeat_age_seconds"] is None


def test_healthz_reports_the_age_of_the_newest_worker_heartbeat(client, db):
    now = timezone.now()
    for token, minutes_ago in (("old", 60), ("newest", 10), ("older", 30)):
        beat = Heartbeat.objects.create(token=token, worker="w1")
        Heartbeat.objects.filter(pk=beat.pk).update(seen_at=now - dt.timedelta(minutes=minutes_ago))

    age = client.get(reverse("healthz")).json()["worker_heartbeat_age_seconds"]

    # The newest row's age: at least its 10 minutes, and not the 30 of the next one.
    assert 600 <= age < 1800


def test_healthz_fails_when_the_broker_is_unreachable(client, db, settings, monkeypatch):
    from config.celery import app

    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    assert response.json()["broker"] != "ok"


def test_favicon_ico_leads_to_the_icon_the_pages_name(client, db):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    icon = client.get(response["Location"])
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(icon.streaming_content)
