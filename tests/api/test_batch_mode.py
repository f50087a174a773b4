"""Batch mode through the API: sampling, grading and proxy runs take `batch_mode` and
`batch_retry` when they are made, store them and return them; a run whose model has no batch
API is refused on the field with the model named, and nothing is made."""

import pytest

from apps.grading.models import GradingRun
from apps.llm.models import BatchRetry, ModelConfig
from apps.runs.models import SamplingRun
from apps.surveys.models import ProxyRun
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db


def post(api, url: str, body: dict):
    return api.post(url, body, content_type="application/json")


def bodies(world) -> dict[str, tuple[dict, list[ModelConfig]]]:
    """For each kind of run: a body that makes one, and the models it asks."""
    sampling_models = list(world.sampling_run.model_configs.order_by("pk"))
    proxy_model = ModelConfigFactory(name="offline-thorough")
    return {
        "/api/v1/sampling-runs/": (
            {
                "name": "Batched through the API",
                "models": [m.pk for m in sampling_models],
                "questions": list(world.sampling_run.questions.values_list("pk", flat=True)),
                "samples_per_item": 1,
            },
            sampling_models,
        ),
        "/api/v1/grading-runs/": (
            {"sampling_run": world.sampling_run.pk, "grader": world.grader.pk},
            [world.grader],
        ),
        "/api/v1/proxy-runs/": (
            {"study": world.study.pk, "models": [proxy_model.pk]},
            [proxy_model],
        ),
    }


MODELS = {
    "/api/v1/sampling-runs/": SamplingRun,
    "/api/v1/grading-runs/": GradingRun,
    "/api/v1/proxy-runs/": ProxyRun,
}


@pytest.mark.parametrize("url", list(MODELS))
def test_a_run_is_made_in_batch_mode_and_says_so(api, world, url):
    body, models = bodies(world)[url]
    ModelConfig.objects.filter(pk__in=[m.pk for m in models]).update(batch_api=True)
    response = post(api, url, {**body, "batch_mode": True, "batch_retry": BatchRetry.LIVE})
    assert response.status_code == 201, response.content
    made = response.json()
    assert (made["batch_mode"], made["batch_retry"]) == (True, "live")
    run = MODELS[url].objects.get(pk=made["id"])
    assert (run.batch_mode, run.batch_retry) == (True, BatchRetry.LIVE)
    listed = api.get(f"{url}{run.pk}/").json()
    assert (listed["batch_mode"], listed["batch_retry"]) == (True, "live")


@pytest.mark.parametrize("url", list(MODELS))
def test_a_run_is_live_unless_it_asks_for_batch_mode(api, world, url):
    body, _models = bodies(world)[url]
    response = post(api, url, body)
    assert response.status_code == 201, response.content
    assert (response.json()["batch_mode"], response.json()["batch_retry"]) == (False, "batch")


@pytest.mark.parametrize("url", list(MODELS))
def test_batch_mode_with_a_model_without_a_batch_api_is_refused_on_the_field(api, world, url):
    body, models = bodies(world)[url]
    ModelConfig.objects.filter(pk__in=[m.pk for m in models[1:]]).update(batch_api=True)
    before = MODELS[url].objects.count()
    response = post(api, url, {**body, "batch_mode": True})
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert f"{models[0].display_name} has no batch API" in error["fields"]["batch_mode"][0]
    assert MODELS[url].objects.count() == before


def test_an_unknown_place_for_failed_lines_is_refused(api, world):
    body, _models = bodies(world)["/api/v1/sampling-runs/"]
    response = post(api, "/api/v1/sampling-runs/", {**body, "batch_retry": "tomorrow"})
    assert response.status_code == 400
    assert "batch_retry" in response.json()["error"]["fields"]
