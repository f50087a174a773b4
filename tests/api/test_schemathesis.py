"""The API against its own OpenAPI schema (schemathesis): every operation, GET and POST, with
data generated from the schema (valid, and invalid), on a seeded world (a finished sampling
and grading run with scores, a calibration, a study with people's and proxies' answers).
No answer may be a server error, carry a status the operation does not document, a content
type it does not declare, or a body or headers that break its schema.

The app is called in process through WSGI, inside the test's transaction, as a researcher
with a token, with DEBUG off and on: Django's debug pages are HTML, and every answer (a 404
for an id the schema allows but no route takes among them) must still be the API's JSON.
Hypothesis is bounded and derandomised: a few examples per operation and mode, the same
every run. What an operation enqueues goes to a queue no worker reads.
"""

from dataclasses import dataclass

import django
import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from apps.grading.services import grading_run_create
from apps.questions.models import Question
from apps.rubrics.models import Rubric
from apps.runs.services import sampling_run_create
from apps.surveys.models import Answer
from apps.surveys.services import proxy_run_create
from tests.factories import ModelConfigFactory
from tests.grading.builders import queue_unread

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
EXAMPLES = {GenerationMode.POSITIVE: 6, GenerationMode.NEGATIVE: 3}
BOUNDS = hypothesis_settings(
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)


class _InTransaction:
    """Requests served in this thread keep the test's connection (and its transaction), as
    Django's test client does: closing old connections would roll the test back."""

    def __enter__(self):
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)

    def __exit__(self, *exc):
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _operation_failures(operation, headers: dict, variants: list[dict]) -> list[str]:
    failures = []
    for mode, examples in EXAMPLES.items():
        for fixed in variants if mode == GenerationMode.POSITIVE else [{}]:

            @hypothesis_settings(BOUNDS, max_examples=examples)
            @given(case=operation.as_strategy(generation_mode=mode, headers=headers, **fixed))
            def exercise(case):
                case.call_and_validate(checks=CHECKS)

            try:
                exercise()
            except Exception as exc:  # every operation's failure, reported together
                failures.append(f"{operation.label} ({mode.value}, {fixed or 'generated'}):\n{exc}")
    return failures


@dataclass
class Seeded:
    """Rows of the world for the operations to find, besides the ids they make up."""

    ids: dict[str, int]  # resource -> an existing id
    drafts: dict[str, tuple[int, int]]  # run resource -> (a draft to cancel, one to launch)
    bodies: dict[str, dict]  # run resource -> a valid body for POST
    queries: dict[str, dict]  # long list -> a filter that finds rows
    study: int
    grading_run: int


def _seeded(world) -> Seeded:
    sampling, grading, study = world.sampling_run, world.grading_run, world.study
    models = list(sampling.model_configs.values_list("pk", flat=True))
    questions = list(sampling.questions.values_list("pk", flat=True))
    new_sampling = {
        "name": "From the API",
        "models": models,
        "questions": questions,
        "samples_per_item": 1,
    }
    new_grading = {"sampling_run": sampling.pk, "grader": world.grader.pk, "mode": "checklist"}
    proxy_model = ModelConfigFactory(name="offline-thorough")
    new_proxy = {"study": study.pk, "models": [proxy_model.pk], "runs_per_model": 1}

    def sampling_draft():
        return sampling_run_create(
            name="Draft",
            questions=Question.objects.filter(pk__in=questions),
            models=sampling.model_configs.all(),
            samples_per_item=1,
        ).pk

    def grading_draft():
        return grading_run_create(sampling_run=sampling, grader=world.grader, mode="checklist").pk

    def proxy_draft():
        return proxy_run_create(study=study, models=[proxy_model], runs_per_model=1).pk

    answer = Answer.objects.filter(assignment__participant__study=study).first()
    return Seeded(
        ids={
            "topics": Question.objects.get(pk=questions[0]).topic_id,
            "questions": questions[0],
            "rubrics": Rubric.objects.filter(question_id=questions[0]).first().pk,
            "responses": sampling.responses.first().pk,
            "judgments": grading.judgments.first().pk,
            "scores": grading.scores.first().pk,
            "calibrations": grading.calibrations.first().pk,
            "studies": study.pk,
            "scenarios": study.study_scenarios.first().scenario_id,
            "participants": world.people[0].pk,
            "answers": answer.pk,
        },
        drafts={
            "sampling-runs": (sampling_draft(), sampling_draft()),
            "grading-runs": (grading_draft(), grading_draft()),
            "proxy-runs": (proxy_draft(), proxy_draft()),
        },
        bodies={
            "sampling-runs": new_sampling,
            "grading-runs": new_grading,
            "proxy-runs": new_proxy,
        },
        queries={
            "responses": {"run": sampling.pk},
            "judgments": {"grading_run": grading.pk},
            "scores": {"grading_run": grading.pk},
            "answers": {"study": study.pk},
        },
        study=study.pk,
        grading_run=grading.pk,
    )


def _variants(operation, seeded: Seeded) -> list[dict]:
    """Besides what the schema generates (ids that mostly do not exist), the same operation
    on rows that do: each resource's id, the draft runs to control, a valid new run, a
    filter that finds rows, the study's report and one of its tables."""
    parts = operation.path.removeprefix("/api/v1/").strip("/").split("/")
    resource, rest = parts[0], parts[1:]
    variants = [{}]
    if resource == "reports":
        if "{run_id}" in operation.path:
            report, table = {"run_id": seeded.grading_run}, "table-3"
        else:
            report, table = {"study_id": seeded.study}, "alpha"
        variants.append({"path_parameters": report})
        if "{name}" in operation.path:
            variants.append({"path_parameters": report | {"name": table}})
    elif rest and rest[0] == "{id}":
        if resource in seeded.drafts:
            to_cancel, to_launch = seeded.drafts[resource]
            run = to_cancel if rest[1:] == ["cancel"] else to_launch
            variants.append({"path_parameters": {"id": run}})
        else:
            variants.append({"path_parameters": {"id": seeded.ids[resource]}})
    elif operation.method.upper() == "POST" and resource in seeded.bodies:
        variants.append({"body": seeded.bodies[resource], "media_type": "application/json"})
    elif resource in seeded.queries:
        variants.append({"query": seeded.queries[resource]})
    return variants


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_every_operation_answers_as_its_schema_says(world, api_key, settings, debug):
    settings.DEBUG = debug
    django.setup()
    headers = {"Authorization": f"Bearer {api_key}"}
    seeded = _seeded(world)
    app = WSGIHandler()
    failures = []
    with _InTransaction(), queue_unread():
        schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app, headers=headers)
        operations = [result.ok() for result in schema.get_all_operations()]
        for operation in operations:
            failures.extend(_operation_failures(operation, headers, _variants(operation, seeded)))
    assert len(operations) >= 40  # every list, retrieve, export, create, control and report
    assert not failures, "\n\n".join(failures)
