"""What a researcher's browser sends to the sampling run pages: parameters (JSON) that the
column cannot hold, a budget past its column, filters past reason. Each is refused on the
form or taken as not given, never a 500, and no run is made."""

import html

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.llm.models import Purpose
from apps.llm.selectors import prompt_current
from apps.runs.models import SamplingRun
from tests.factories import offline_model
from tests.runs.builders import graded_questions, offline_models, run_made

pytestmark = pytest.mark.django_db
NOWHERE = "http://127.0.0.1:9"  # a provider nobody calls
PARAMS_MAX_CHARS = 10_000


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ('{"stop": "\\u0000"}', "stop: a NUL character"),
        ('{"stop": "\\ud800"}', "stop: a lone surrogate (\\ud800)"),
        ('{"top_p": 1, "top_p": 0.5}', 'the key "top_p" appears twice'),
        ('{"a": ' * 40 + "1" + "}" * 40, "nested more than 32 levels deep"),
        ('{"stop": "' + "x" * PARAMS_MAX_CHARS + '"}', f"at most {PARAMS_MAX_CHARS} characters"),
    ],
    ids=["escaped NUL", "lone surrogate", "key twice", "nested", "past the limit"],
)
def test_run_parameters_the_column_cannot_hold_are_refused_on_the_form(
    role_client, expert, reviewer, params, expected
):
    graded_questions(1, author=expert, reviewer=reviewer, topic="accounts")
    data = {
        "action": "create",
        "name": "Bad",
        "conditions": ["approved_rubric"],
        "models": [offline_model(NOWHERE).pk],
        "samples_per_item": 5,
        "prompt": prompt_current(purpose=Purpose.SAMPLE).pk,
        "params": params,
    }
    response = role_client(Role.RESEARCHER).post(reverse("runs:new"), data)
    assert response.status_code == 400
    assert expected in html.unescape(response.text)
    assert not SamplingRun.objects.filter(name="Bad").exists()


@pytest.mark.parametrize("value", ["\x00", "x" * 100_000, "²"])
def test_the_responses_list_takes_an_odd_question_filter_as_not_given(role_client, value):
    run = run_made(models=offline_models(NOWHERE), name="Filters")
    page = role_client(Role.RESEARCHER).get(
        reverse("runs:responses", args=[run.pk]), {"question": value, "model": value}
    )
    assert page.status_code == 200
