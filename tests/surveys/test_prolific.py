"""The Prolific client against a fake Prolific on 127.0.0.1 (real HTTP, nothing mocked inside)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client, override_settings

from apps.accounts.roles import Role
from apps.surveys.errors import ProlificError
from apps.surveys.models import AssignmentStatus, ParticipantStatus, ReviewStatus
from apps.surveys.prolific import HttpProlificClient
from apps.surveys.services import study_sync_returned
from tests.surveys.flow import SESSION, STUDY, consent, finish

TOKEN = "test-token"
MESSAGE = (
    "Every explanation in this submission is the same short phrase and none refers to the "
    "scenario shown, so we are unable to use it."
)


class FakeProlific:
    def __init__(self):
        self.requests: list[tuple[str, str, dict | None, str]] = []
        self.submissions: list[dict] = []
        self.fail_with: int | None = None
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, status: int, body: dict):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(("POST", self.path, body, self.headers["Authorization"]))
                if fake.fail_with:
                    return self._reply(
                        fake.fail_with, {"error": {"detail": "Submission is not awaiting review"}}
                    )
                if self.path == "/api/v1/submissions/bulk-approve/":
                    return self._reply(200, {"message": "The request to bulk approve was received"})
                return self._reply(200, {"id": self.path.split("/")[4], "status": body["action"]})

            def do_GET(self):
                fake.requests.append(("GET", self.path, None, self.headers["Authorization"]))
                page = 2 if "page=2" in self.path else 1
                rows = fake.submissions[:1] if page == 1 else fake.submissions[1:]
                nxt = {"href": f"{self.path.split('?')[0]}?page=2"} if page == 1 else None
                return self._reply(200, {"results": rows, "_links": {"next": nxt}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        # A short poll: shutdown() waits up to one poll interval (0.5 s by default).
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_prolific():
    fake = FakeProlific()
    yield fake
    fake.stop()


def test_client_bulk_approves_and_rejects_with_the_token(fake_prolific):
    client = HttpProlificClient(base_url=fake_prolific.url, token=TOKEN)
    client.bulk_approve(study_id="b" * 24, participant_ids=["p1", "p2"])
    client.reject(submission_id="s2", category="LOW_EFFORT", message=MESSAGE)
    approve = {"study_id": "b" * 24, "participant_ids": ["p1", "p2"]}
    reject = {"action": "REJECT", "message": MESSAGE, "rejection_category": "LOW_EFFORT"}
    assert fake_prolific.requests == [
        ("POST", "/api/v1/submissions/bulk-approve/", approve, f"Token {TOKEN}"),
        ("POST", "/api/v1/submissions/s2/transition/", reject, f"Token {TOKEN}"),
    ]


def test_client_reports_prolifics_refusal(fake_prolific):
    fake_prolific.fail_with = 400
    client = HttpProlificClient(base_url=fake_prolific.url, token=TOKEN)
    with pytest.raises(ProlificError, match="HTTP 400: Submission is not awaiting review"):
        client.bulk_approve(study_id="b" * 24, participant_ids=["p1"])


def test_client_reports_an_unreachable_prolific():
    client = HttpProlificClient(base_url="http://127.0.0.1:9", token=TOKEN, timeout=2)
    with pytest.raises(ProlificError, match="could not be reached"):
        client.submissions(study_id="x")


def test_returned_submissions_from_prolific_free_their_scenarios(fake_prolific, make_study):
    study = make_study(count=5, ratings_per_scenario=1, prolific_study_id="b" * 24)
    pid, _ = consent(Client(), study)
    fake_prolific.submissions = [
        {"id": "f" * 24, "participant_id": "x", "status": "APPROVED"},
        {"id": SESSION, "participant_id": pid, "status": "RETURNED"},
    ]
    client = HttpProlificClient(base_url=fake_prolific.url, token=TOKEN)
    assert study_sync_returned(study=study, client=client) == 1
    first = f"/api/v1/studies/{'b' * 24}/submissions/"
    assert [r[1] for r in fake_prolific.requests] == [first, first + "?page=2"]
    participant = study.participants.get()
    assert participant.status == ParticipantStatus.RETURNED
    assert set(participant.assignments.values_list("status", flat=True)) == {
        AssignmentStatus.RELEASED
    }


def test_review_decisions_go_to_prolific_when_configured(fake_prolific, make_study, role_client):
    study = make_study(count=10)
    good, bad = finish(Client(), study), finish(Client(), study)
    researcher = role_client(Role.RESEARCHER)
    with override_settings(PROLIFIC_API_URL=fake_prolific.url, PROLIFIC_API_TOKEN=TOKEN):
        researcher.post(
            f"/studies/{study.pk}/approve/", {"participant": good.pk, "confirmed": "yes"}
        )
        fake_prolific.fail_with = 409
        refused = researcher.post(
            f"/studies/{study.pk}/review/{bad.pk}/",
            {"action": "reject", "category": "LOW_EFFORT", "message": MESSAGE},
            follow=True,
        )
    assert fake_prolific.requests[0][1:3] == (
        "/api/v1/submissions/bulk-approve/",
        {"study_id": STUDY, "participant_ids": [good.prolific_pid]},
    )
    good.refresh_from_db()
    bad.refresh_from_db()
    assert good.review_status == ReviewStatus.APPROVED
    assert "Prolific did not accept the rejection" in refused.content.decode()
    assert bad.review_status == ReviewStatus.PENDING, "nothing changes here when Prolific refuses"


def test_approving_several_is_one_bulk_approval_on_prolific_after_a_confirmation(
    fake_prolific, make_study, role_client
):
    study = make_study(count=10)
    first, second = finish(Client(), study), finish(Client(), study)
    researcher = role_client(Role.RESEARCHER)
    chosen = {"participant": [first.pk, second.pk], "back": "pending"}
    with override_settings(PROLIFIC_API_URL=fake_prolific.url, PROLIFIC_API_TOKEN=TOKEN):
        asked = researcher.post(f"/studies/{study.pk}/approve/", chosen)
        assert asked.status_code == 200 and "Approve 2 submissions?" in asked.text
        assert first.prolific_pid in asked.text and 'name="confirmed" value="yes"' in asked.text
        assert fake_prolific.requests == [], "nothing is sent before the confirmation"
        done = researcher.post(f"/studies/{study.pk}/approve/", chosen | {"confirmed": "yes"})
    assert done["Location"] == f"/studies/{study.pk}/review/?status=pending"
    assert fake_prolific.requests == [
        (
            "POST",
            "/api/v1/submissions/bulk-approve/",
            {"study_id": STUDY, "participant_ids": [first.prolific_pid, second.prolific_pid]},
            f"Token {TOKEN}",
        ),
    ]
    assert set(study.participants.values_list("review_status", flat=True)) == {
        ReviewStatus.APPROVED
    }


def test_a_refused_bulk_approval_approves_nobody_here(fake_prolific, make_study, role_client):
    study = make_study(count=10)
    first, second = finish(Client(), study), finish(Client(), study)
    fake_prolific.fail_with = 400
    with override_settings(PROLIFIC_API_URL=fake_prolific.url, PROLIFIC_API_TOKEN=TOKEN):
        page = role_client(Role.RESEARCHER).post(
            f"/studies/{study.pk}/approve/",
            {"participant": [first.pk, second.pk], "confirmed": "yes"},
            follow=True,
        )
    assert "Prolific did not accept the approval" in page.text
    assert set(study.participants.values_list("review_status", flat=True)) == {ReviewStatus.PENDING}
