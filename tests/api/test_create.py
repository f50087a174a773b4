"""Making and controlling runs through the API: drafts made by the services the pages call,
launch and resume queueing the engine's batches after commit (to a queue no worker reads),
pause and cancel moving the status, and the services' refusals as 400 or 409 in the error
shape, with their messages."""

import pytest
from django.conf import settings

from apps.grading.models import GradingRun
from apps.llm.models import PromptTemplate, Purpose, RunStatus
from apps.runs.models import Response, SamplingRun
from apps.surveys.models import Participant, ParticipantKind, ProxyCall, ProxyRun
from tests.factories import ModelConfigFactory
from tests.grading.builders import queue_unread, queued


@pytest.fixture
def quiet_queue():
    with queue_unread() as queue:
        yield queue


def post(api, url: str, body: dict | None = None):
    return api.post(url, body or {}, content_type="application/json")


def _refused(response, status: int, code: str, message: str | None = None) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert (error["status"], error["code"]) == (status, code)
    if message is not None:
        assert message in error["message"]
    return error


def _sampling_body(world, **fields) -> dict:
    return {
        "name": "Asked through the API",
        "models": list(world.sampling_run.model_configs.values_list("pk", flat=True)),
        "questions": list(world.sampling_run.questions.values_list("pk", flat=True)),
        "samples_per_item": 3,
        **fields,
    }


def test_a_sampling_run_is_made_as_a_draft_with_every_response(api, api_researcher, world):
    response = post(api, "/api/v1/sampling-runs/", _sampling_body(world, budget_usd="2.50"))
    assert response.status_code == 201
    body = response.json()
    run = SamplingRun.objects.get(pk=body["id"])
    assert (run.status, run.name, run.created_by) == (
        RunStatus.DRAFT,
        "Asked through the API",
        api_researcher,
    )
    assert body["status"] == "draft" and body["budget_usd"] == 2.5
    assert Response.objects.filter(run=run).count() == 2 * 2 * 3  # questions x models x samples
    assert body["questions_count"] == 2


def test_without_questions_a_sampling_run_takes_those_with_an_approved_rubric(api, world):
    body = _sampling_body(world)
    del body["questions"]
    response = post(api, "/api/v1/sampling-runs/", body)
    assert response.status_code == 201
    assert response.json()["questions_count"] == 2  # the world's questions, both approved


def test_a_selection_that_chooses_nothing_is_refused_with_the_services_message(api, world):
    body = _sampling_body(world, selection={"length_buckets": ["long"]})
    del body["questions"]
    _refused(post(api, "/api/v1/sampling-runs/", body), 400, "refused", "at least one question")


def test_a_selection_chooses_questions_by_each_need(api, world):
    from tests.factories import questions_by_need

    made = questions_by_need()
    for needs, chosen in [
        ({"needs_sensemaking": True}, {"both", "sense"}),
        ({"needs_guidance": True, "needs_sensemaking": False}, {"guide"}),
        ({"needs_sensemaking": False, "needs_guidance": False}, {"neither"}),
    ]:
        body = _sampling_body(world, selection={"conditions": [], **needs})
        del body["questions"]
        response = post(api, "/api/v1/sampling-runs/", body)
        assert response.status_code == 201, response.content
        run = SamplingRun.objects.get(pk=response.json()["id"])
        assert set(run.questions.all()) == {made[key] for key in chosen}, needs
        assert {k: run.selection[k] for k in needs} == needs


def test_a_selection_by_the_old_need_type_is_refused_not_ignored(api, world):
    body = _sampling_body(world, selection={"conditions": [], "need_types": ["guidance"]})
    del body["questions"]
    error = _refused(post(api, "/api/v1/sampling-runs/", body), 400, "invalid")
    assert "needs_sensemaking" in str(error["fields"])
    assert not SamplingRun.objects.filter(name="Asked through the API").exists()


def test_an_invalid_new_run_is_a_400_naming_its_fields(api, world):
    error = _refused(
        post(api, "/api/v1/sampling-runs/", {"models": [999999], "samples_per_item": 0}),
        400,
        "invalid",
    )
    assert {"name", "models", "samples_per_item"} <= set(error["fields"])
    assert not SamplingRun.objects.filter(name="").exists()


def test_launch_pause_resume_and_cancel_move_a_sampling_run_and_queue_its_work(
    api, world, quiet_queue, django_capture_on_commit_callbacks
):
    run_id = post(api, "/api/v1/sampling-runs/", _sampling_body(world)).json()["id"]
    base = f"/api/v1/sampling-runs/{run_id}"
    with django_capture_on_commit_callbacks(execute=True):
        launched = post(api, f"{base}/launch/")
    assert launched.status_code == 200 and launched.json()["status"] == "running"
    assert queued(quiet_queue) == settings.LLM_ENGINE_CHAINS

    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"{base}/pause/").json()["status"] == "paused"
    assert queued(quiet_queue) == settings.LLM_ENGINE_CHAINS  # pausing queues nothing

    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"{base}/resume/").json()["status"] == "running"
    assert queued(quiet_queue) == 2 * settings.LLM_ENGINE_CHAINS

    assert post(api, f"{base}/cancel/").json()["status"] == "cancelled"
    assert SamplingRun.objects.get(pk=run_id).status == RunStatus.CANCELLED


def test_a_control_the_runs_state_refuses_is_a_409_with_the_services_message(
    api, world, quiet_queue
):
    finished = world.sampling_run.pk
    _refused(post(api, f"/api/v1/sampling-runs/{finished}/launch/"), 409, "conflict", "not a draft")
    draft = post(api, "/api/v1/sampling-runs/", _sampling_body(world)).json()["id"]
    _refused(post(api, f"/api/v1/sampling-runs/{draft}/pause/"), 409, "conflict", "draft")
    assert SamplingRun.objects.get(pk=draft).status == RunStatus.DRAFT


def test_a_grading_run_is_made_as_a_draft_at_temperature_0_and_controlled(
    api, world, quiet_queue, django_capture_on_commit_callbacks
):
    body = {
        "sampling_run": world.sampling_run.pk,
        "grader": world.grader.pk,
        "mode": "per_criterion",
        "params": {"max_tokens": 500},
    }
    response = post(api, "/api/v1/grading-runs/", body)
    assert response.status_code == 201
    run = GradingRun.objects.get(pk=response.json()["id"])
    assert run.status == RunStatus.DRAFT
    assert run.params == {"max_tokens": 500, "temperature": 0}
    assert run.prompt.purpose == Purpose.GRADE_CRITERION
    base = f"/api/v1/grading-runs/{run.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"{base}/launch/").json()["status"] == "running"
    assert queued(quiet_queue) == settings.LLM_ENGINE_CHAINS
    assert post(api, f"{base}/pause/").json()["status"] == "paused"
    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"{base}/resume/").json()["status"] == "running"
    assert queued(quiet_queue) == 2 * settings.LLM_ENGINE_CHAINS
    assert post(api, f"{base}/cancel/").json()["status"] == "cancelled"
    _refused(post(api, f"{base}/resume/"), 409, "conflict")


def test_a_grading_prompt_for_the_other_mode_is_refused_with_the_services_message(api, world):
    checklist = PromptTemplate.objects.filter(purpose=Purpose.GRADE_CHECKLIST).first()
    body = {
        "sampling_run": world.sampling_run.pk,
        "grader": world.grader.pk,
        "mode": "per_criterion",
        "prompt": checklist.pk,
    }
    _refused(post(api, "/api/v1/grading-runs/", body), 400, "refused", "is not a prompt for")
    body = {
        "sampling_run": world.sampling_run.pk,
        "grader": world.grader.pk,
        "params": {"temperature": 1},
    }
    error = _refused(post(api, "/api/v1/grading-runs/", body), 400, "invalid")
    assert "params" in error["fields"]


def test_a_proxy_run_is_made_with_its_participants_and_calls_and_controlled(
    api, world, quiet_queue, django_capture_on_commit_callbacks
):
    model = ModelConfigFactory(name="offline-thorough")
    body = {"study": world.study.pk, "models": [model.pk], "runs_per_model": 2, "seed": 7}
    response = post(api, "/api/v1/proxy-runs/", body)
    assert response.status_code == 201
    run = ProxyRun.objects.get(pk=response.json()["id"])
    proxies = Participant.objects.filter(proxy_run=run, kind=ParticipantKind.PROXY)
    assert proxies.count() == 2
    assert ProxyCall.objects.filter(run=run).count() == 2 * world.study.study_scenarios.count()
    base = f"/api/v1/proxy-runs/{run.pk}"
    with django_capture_on_commit_callbacks(execute=True):
        assert post(api, f"{base}/launch/").json()["status"] == "running"
    assert queued(quiet_queue) == settings.LLM_ENGINE_CHAINS
    assert post(api, f"{base}/pause/").json()["status"] == "paused"
    assert post(api, f"{base}/cancel/").json()["status"] == "cancelled"
    _refused(post(api, f"{base}/launch/"), 409, "conflict", "cancelled")


def test_a_proxy_run_for_a_study_without_responses_is_refused(api, world, make_study):
    study = make_study(count=1, live=False)
    study.study_scenarios.update(response=None)
    model = ModelConfigFactory(name="offline-thorough")
    body = {"study": study.pk, "models": [model.pk]}
    _refused(post(api, "/api/v1/proxy-runs/", body), 400, "refused", "no response to rate")
    assert not ProxyRun.objects.filter(study=study).exists()


def test_a_switched_off_model_cannot_be_chosen(api, world):
    model = ModelConfigFactory(name="offline-thorough", active=False)
    error = _refused(
        post(api, "/api/v1/sampling-runs/", _sampling_body(world, models=[model.pk])),
        400,
        "invalid",
    )
    assert "models" in error["fields"]


def test_a_body_that_is_not_json_is_a_415_or_400_in_the_error_shape(api, world):
    form = api.post("/api/v1/sampling-runs/", {"name": "x"})  # form-encoded, not JSON
    _refused(form, 415, "unsupported_media_type")
    broken = api.post("/api/v1/sampling-runs/", "{not json", content_type="application/json")
    _refused(broken, 400, "parse_error")


def test_a_throttled_request_is_a_429_in_the_error_shape_with_retry_after():
    from rest_framework.exceptions import Throttled

    from apps.accounts.api_errors import api_exception_handler

    response = api_exception_handler(Throttled(wait=30), {})
    assert response.status_code == 429
    assert response["Retry-After"] == "30"
    assert response.data["error"]["status"] == 429
    assert response.data["error"]["code"] == "throttled"
    assert "fields" not in response.data["error"]


# --- bodies that used to be server errors ---------------------------------------------------

CREATE_URLS = ["/api/v1/sampling-runs/", "/api/v1/grading-runs/", "/api/v1/proxy-runs/"]


def _ids_listed_twice(world) -> dict[str, tuple[str, dict, str]]:
    """For each list of ids a new run takes: (url, a body naming one id twice, the field)."""
    model = world.sampling_run.model_configs.order_by("pk").first().pk
    question = world.sampling_run.questions.order_by("pk").first().pk
    topic = world.sampling_run.questions.order_by("pk").first().topic_id
    proxy_model = ModelConfigFactory(name="offline-thorough").pk
    sampling = _sampling_body(world)
    selection = {k: v for k, v in sampling.items() if k != "questions"}
    return {
        "sampling models": (
            "/api/v1/sampling-runs/",
            {**sampling, "models": [model] * 3},
            "models",
        ),
        "sampling questions": (
            "/api/v1/sampling-runs/",
            {**sampling, "questions": [question, question]},
            "questions",
        ),
        "selection topics": (
            "/api/v1/sampling-runs/",
            {**selection, "selection": {"topics": [topic, topic]}},
            "selection.topics",
        ),
        "proxy models": (
            "/api/v1/proxy-runs/",
            {"study": world.study.pk, "models": [proxy_model, proxy_model]},
            "models",
        ),
    }


@pytest.mark.parametrize(
    "case", ["sampling models", "sampling questions", "selection topics", "proxy models"]
)
def test_an_id_listed_twice_is_a_400_naming_the_field_and_makes_nothing(api, world, case):
    url, body, field = _ids_listed_twice(world)[case]
    runs = (SamplingRun.objects.count(), ProxyRun.objects.count())
    error = _refused(post(api, url, body), 400, "invalid")
    assert list(error["fields"]) == [field]
    assert "more than once" in error["fields"][field][0]
    assert (SamplingRun.objects.count(), ProxyRun.objects.count()) == runs


def test_the_schema_says_each_id_once(api, db):
    schemas = api.get("/api/schema/?format=json").json()["components"]["schemas"]
    assert schemas["SamplingRunCreateRequest"]["properties"]["models"]["uniqueItems"] is True
    assert schemas["SamplingRunCreateRequest"]["properties"]["questions"]["uniqueItems"] is True
    assert schemas["SelectionRequest"]["properties"]["topics"]["uniqueItems"] is True
    assert schemas["ProxyRunCreateRequest"]["properties"]["models"]["uniqueItems"] is True


def _nested(depth: int, leaf: str = "1") -> str:
    """A JSON array `depth` levels deep."""
    return "[" * depth + leaf + "]" * depth


@pytest.mark.parametrize("url", CREATE_URLS)
def test_a_body_nested_thousands_deep_is_a_400_naming_its_field(api, db, url):
    body = '{"name": "ok", "params": {"a": ' + _nested(5000) + "}}"
    error = _refused(post_raw(api, url, body), 400, "invalid")
    assert list(error["fields"]) == ["params"]
    assert "deeper than 32 levels" in error["fields"]["params"][0]


@pytest.mark.parametrize("url", CREATE_URLS)
def test_a_deep_array_as_the_whole_body_is_a_400(api, db, url):
    error = _refused(post_raw(api, url, _nested(5000)), 400, "invalid")
    assert list(error["fields"]) == ["non_field_errors"]


def test_nesting_up_to_the_bound_is_read_and_one_more_level_is_refused(api, world):
    from apps.accounts.api_parsers import MAX_DEPTH

    def params(levels: int) -> dict:
        value = 1
        for _ in range(levels):
            value = {"x": value}
        return value

    body = {"sampling_run": world.sampling_run.pk, "grader": world.grader.pk}
    # The body is one level: params(MAX_DEPTH - 1) makes it MAX_DEPTH deep. Parameters are
    # flat, so that body is read and refused for what it says, not for how deep it is.
    read = post(api, "/api/v1/grading-runs/", {**body, "params": params(MAX_DEPTH - 1)})
    message = _refused(read, 400, "invalid")["fields"]["params"][0]
    assert "x is not a parameter" in message
    refused = post(api, "/api/v1/grading-runs/", {**body, "params": params(MAX_DEPTH)})
    message = _refused(refused, 400, "invalid")["fields"]["params"][0]
    assert message.startswith(f"Nested deeper than {MAX_DEPTH} levels")


def test_brackets_and_quotes_inside_a_string_are_text_not_nesting(api, world):
    name = '\\"[{' * 100 + "]"
    response = post(api, "/api/v1/sampling-runs/", _sampling_body(world, name=name[:200]))
    assert response.status_code == 201, response.content
    assert SamplingRun.objects.get(pk=response.json()["id"]).name == name[:200]


def post_raw(api, url: str, body: str):
    return api.post(url, body, content_type="application/json")
