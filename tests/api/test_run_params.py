"""Run parameters that would send a call, or the provider key, elsewhere (or fake the call)
are refused by the API with the parameter's name, for sampling and grading runs alike; the
listener on 127.0.0.1 they point at hears nothing."""

import pytest

from apps.grading.models import GradingRun
from apps.runs.models import SamplingRun

pytestmark = pytest.mark.django_db


def redirecting(listener) -> dict:
    return {"base_url": listener.url, "extra_headers": {"X-Collect": "1"}}


def test_the_api_refuses_redirecting_parameters_for_sampling_and_grading_runs(api, world, listener):
    run = world.sampling_run
    body = {
        "name": "Forged",
        "samples_per_item": 1,
        "models": list(run.model_configs.values_list("pk", flat=True)),
        "questions": list(run.questions.values_list("pk", flat=True)),
    }
    grading_runs = GradingRun.objects.count()
    for params, named in [
        (redirecting(listener), "base_url"),
        ({"mock_response": "x"}, "mock_response"),
    ]:
        response = api.post(
            "/api/v1/sampling-runs/", {**body, "params": params}, content_type="application/json"
        )
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert named in error["fields"]["params"][0]
        response = api.post(
            "/api/v1/grading-runs/",
            {"sampling_run": world.sampling_run.pk, "grader": world.grader.pk, "params": params},
            content_type="application/json",
        )
        assert response.status_code == 400, response.content
        assert named in response.json()["error"]["fields"]["params"][0]
    assert not SamplingRun.objects.filter(name="Forged").exists()
    assert GradingRun.objects.count() == grading_runs
    assert listener.connections == 0
