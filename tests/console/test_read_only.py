"""Records the product writes are read-only in the console; a few may still be deleted."""

import pytest
from django.contrib import admin

from apps.llm.models import LLMCall
from apps.runs.models import Response
from apps.surveys.models import (
    Assignment,
    Participant,
    ResponseGeneration,
    Scenario,
    ScenarioResponse,
)


@pytest.mark.parametrize(
    ("model", "deletable"),
    [
        (Participant, True),
        (Scenario, True),
        (ScenarioResponse, True),
        (ResponseGeneration, False),
        (Assignment, False),
        (Response, False),
        (LLMCall, False),
    ],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_researchers_may_delete_only_what_is_meant_to_be_deleted(rf, researcher, model, deletable):
    request = rf.get("/admin/")
    request.user = researcher
    model_admin = admin.site._registry[model]

    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert model_admin.has_delete_permission(request) is deletable
