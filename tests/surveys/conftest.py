import csv
import io
import json
import secrets
from pathlib import Path

import pytest

from apps.surveys import services
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import Scenario, StudyStatus
from tests.conftest import ROOT, fast_password_hashing
from tests.llm.offline_fixture import offline_provider, offline_provider_url

__all__ = ["fast_password_hashing", "offline_provider", "offline_provider_url"]

FIXTURE = ROOT / "apps" / "surveys" / "fixtures" / "privacylens-scenarios-40.json"
RESPONSES = ROOT / "apps" / "surveys" / "fixtures" / "demo-responses-40.csv"
CODES = {
    "code_completed": "DONE1234", "code_no_consent": "NOPE1234",
    "code_failed_attention": "ATTN1234", "code_full": "FULL1234",
}  # fmt: skip


def fixture_records() -> list[dict]:
    return json.loads(Path(FIXTURE).read_text())


def new_pid() -> str:
    return secrets.token_hex(12)


def responses_csv(scenarios) -> str:
    """The bundled demo responses of `scenarios`, as CSV."""
    names = {s.name for s in scenarios}
    rows = list(csv.DictReader(io.StringIO(Path(RESPONSES).read_text())))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(r for r in rows if r["scenario"] in names)
    return out.getvalue()


@pytest.fixture
def scenarios(db):
    services.scenario_import_json(text=Path(FIXTURE).read_bytes())
    return list(Scenario.objects.order_by("name"))


@pytest.fixture
def make_study(scenarios):
    """`make_study(count=40, live=True, **fields)`: a study over the first `count` fixture
    scenarios, each with its (imported) response."""

    def make(count: int = 40, live: bool = True, **fields):
        values = {"name": "Test study", **DEFAULT_TEXTS, **CODES, **fields}
        study = services.study_create(scenarios=scenarios[:count], **values)
        services.response_import_csv(text=responses_csv(scenarios[:count]), study=study)
        if live:
            study = services.study_set_status(study=study, status=StudyStatus.LIVE)
        return study

    return make
