"""Responses as CSV: from the run page (streamed) and from the console, formula-safe."""

import csv
import io

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.runs.models import Response, ResponseStatus
from apps.runs.selectors import RESPONSE_EXPORT_HEADER
from apps.runs.services import sampling_run_launch
from tests.factories import offline_model, question_make
from tests.runs.builders import offline_models, run_made, run_worked

pytestmark = pytest.mark.django_db


def read_csv(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


@pytest.fixture
def answered(offline_provider_url):
    """A finished run of two models x two questions x two answers; one answer is a formula."""
    paid = offline_model(offline_provider_url, name="paid-lookalike")
    models = [*offline_models(offline_provider_url, names=["offline-terse"]), paid]
    run = run_made(
        models=models, samples=2, questions=[question_make(topic="scams") for _ in range(2)]
    )
    sampling_run_launch(run=run)
    run_worked(run)
    formula = run.responses.filter(model=models[0]).order_by("pk").first()
    Response.objects.filter(pk=formula.pk).update(text='=HYPERLINK("http://evil","x")')
    return run, formula


def test_the_run_page_exports_one_row_per_response_formula_safe(role_client, answered):
    run, formula = answered
    response = role_client(Role.RESEARCHER).get(reverse("runs:export_responses", args=[run.pk]))
    assert response.status_code == 200 and response.streaming
    assert f'filename="run-{run.pk}-responses.csv"' in response["Content-Disposition"]
    rows = read_csv(response)
    assert tuple(rows[0]) == RESPONSE_EXPORT_HEADER
    assert len(rows) == run.responses.count() == 8
    by_key = {(r["question"], r["litellm_model"], r["sample_index"]): r for r in rows}
    assert len(by_key) == 8  # none twice
    row = by_key[(formula.question.external_id, formula.model.litellm_model, "0")]
    assert row["text"] == "'" + '=HYPERLINK("http://evil","x")'
    assert row["offline"] == "true" and row["topic"] == "scams"
    assert row["model"] == formula.model.display_name and row["run"] == run.name
    assert row["status"] == ResponseStatus.DONE and row["seed"] == str(formula.seed)
    assert float(row["cost_usd"]) > 0 and int(row["output_tokens"]) > 0 and row["completed_at"]
    paid = [r for r in rows if r["litellm_model"] == "openai/paid-lookalike"]
    assert len(paid) == 4 and {r["offline"] for r in paid} == {"false"}


def test_the_console_exports_selected_responses_with_the_same_columns(role_client, answered):
    run, formula = answered
    ids = [str(pk) for pk in run.responses.values_list("pk", flat=True)]
    response = role_client(Role.RESEARCHER).post(
        reverse("admin:runs_response_changelist"),
        {"action": "export_as_csv", "_selected_action": ids},
    )
    rows = read_csv(response)
    assert len(rows) == 8
    row = next(r for r in rows if r["id"] == str(formula.pk))
    assert row["text"].startswith("'=HYPERLINK") and row["offline"] == "true"
    assert row["question_external_id"] == formula.question.external_id
    assert {r["offline"] for r in rows if "paid" in r["model_litellm_model"]} == {"false"}


def test_the_console_lists_runs_with_a_link_to_their_page_and_keeps_them_whole(
    role_client, answered
):
    run, _formula = answered
    researcher = role_client(Role.RESEARCHER)
    listing = researcher.get(reverse("admin:runs_samplingrun_changelist")).text
    assert reverse("runs:detail", args=[run.pk]) in listing and "Finished" in listing
    change = researcher.get(reverse("admin:runs_samplingrun_change", args=[run.pk])).text
    assert 'name="name"' in change and 'name="status"' not in change
    assert 'name="budget_usd"' not in change
    assert researcher.get(reverse("admin:runs_samplingrun_add")).status_code == 403
    responses = researcher.get(reverse("admin:runs_response_changelist"))
    assert responses.status_code == 200
