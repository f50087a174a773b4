from django.urls import reverse

from apps.ops.models import Heartbeat


def test_healthz_reports_database_and_broker(client, db):
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["broker"] == "ok"
    assert body["worker_heartbeat_age_seconds"] is None


def test_healthz_reports_worker_heartbeat_age(client, db):
    Heartbeat.objects.create(token="t", worker="w1")
    body = client.get(reverse("healthz")).json()
    assert body["worker_heartbeat_age_seconds"] is not None
    assert body["worker_heartbeat_age_seconds"] < 60


def test_healthz_fails_when_the_broker_is_unreachable(client, db, settings, monkeypatch):
    from config.celery import app

    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    assert response.json()["broker"] != "ok"
