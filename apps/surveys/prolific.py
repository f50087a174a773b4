"""Prolific's API, behind an interface.

Only what a study needs: approve submissions, many at once (Prolific's bulk-approve
endpoint, by study and participant ids), reject one (Prolific's submission id is the
`SESSION_ID` a participant arrives with), and list a study's submissions, to learn who
returned. `HttpProlificClient` speaks HTTP to `PROLIFIC_API_URL` with the researcher
workspace's token; tests point it at a fake server on 127.0.0.1. With no token configured
`prolific_client()` is None and reviews are recorded in Assay only: then approve the
participants of the approvals CSV on Prolific's own pages.
"""

from dataclasses import dataclass
from typing import Protocol

import httpx
from django.conf import settings

from .errors import ProlificError


@dataclass(frozen=True)
class Submission:
    session_id: str
    participant_id: str
    status: str


class ProlificClient(Protocol):
    def bulk_approve(self, *, study_id: str, participant_ids: list[str]) -> None: ...

    def reject(self, *, submission_id: str, category: str, message: str) -> None: ...

    def submissions(self, *, study_id: str) -> list[Submission]: ...


class HttpProlificClient:
    def __init__(self, *, base_url: str, token: str, timeout: float = 15.0):
        self.http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=timeout,
        )

    def _request(self, method: str, url: str, **kwargs) -> dict:
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise ProlificError(f"Prolific could not be reached ({type(exc).__name__}).") from exc
        if response.status_code >= 400:
            detail = response.text[:300]
            try:
                body = response.json()
                error = body.get("error", body) if isinstance(body, dict) else body
                detail = str(error.get("detail", error) if isinstance(error, dict) else error)[:300]
            except ValueError:
                pass
            raise ProlificError(f"HTTP {response.status_code}: {detail}")
        return response.json() if response.content else {}

    def bulk_approve(self, *, study_id: str, participant_ids: list[str]) -> None:
        """Approve the study's submissions of these participants (PROLIFIC_PIDs)."""
        self._request(
            "POST",
            "/api/v1/submissions/bulk-approve/",
            json={"study_id": study_id, "participant_ids": participant_ids},
        )

    def reject(self, *, submission_id: str, category: str, message: str) -> None:
        self._request(
            "POST",
            f"/api/v1/submissions/{submission_id}/transition/",
            json={"action": "REJECT", "message": message, "rejection_category": category},
        )

    def submissions(self, *, study_id: str) -> list[Submission]:
        found: list[Submission] = []
        url: str | None = f"/api/v1/studies/{study_id}/submissions/"
        pages = 0
        while url and pages < 1000:
            body = self._request("GET", url)
            pages += 1
            for row in body.get("results", []):
                found.append(
                    Submission(
                        session_id=row.get("id", ""),
                        participant_id=row.get("participant_id", ""),
                        status=row.get("status", ""),
                    )
                )
            url = ((body.get("_links") or {}).get("next") or {}).get("href")
        return found

    def close(self) -> None:
        self.http.close()


def prolific_client() -> ProlificClient | None:
    token = getattr(settings, "PROLIFIC_API_TOKEN", "")
    if not token:
        return None
    return HttpProlificClient(base_url=settings.PROLIFIC_API_URL, token=token)
