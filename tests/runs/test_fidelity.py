"""How models are asked, against the published benchmark: the question alone, as the only user
message, no system message, the model's default parameters. A run that departs says so on
its page and on every report built from it."""

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.analysis.benchmark import benchmark_report_for
from apps.llm.models import PromptTemplate, Purpose
from apps.llm.selectors import prompt_current
from apps.runs import selectors
from apps.runs.models import Response
from apps.runs.services import SAMPLE_WORK
from tests.analysis.benchmark_builders import Q, bench_make, grading_add
from tests.runs.builders import offline_models, run_made

pytestmark = pytest.mark.django_db

NOWHERE = "http://127.0.0.1:9"
QUESTION = 'Someone got into my email and changed the recovery phone. What now? <b>"$x"</b>'


def version_1() -> PromptTemplate:
    return PromptTemplate.objects.get(purpose=Purpose.SAMPLE, version=1)


def the_calls(run) -> list:
    ids = list(Response.objects.filter(run=run).values_list("pk", flat=True))
    calls, refused = SAMPLE_WORK.calls(ids)
    assert not refused
    return calls


def test_the_default_prompt_sends_the_question_alone_as_the_only_user_message():
    from tests.factories import question_make

    question = question_make(text=QUESTION)
    run = run_made(models=offline_models(NOWHERE, names=("offline-terse",)), questions=[question])
    assert run.prompt == prompt_current(purpose=Purpose.SAMPLE)
    assert run.prompt.version == 2
    calls = the_calls(run)
    assert calls
    for call in calls:
        assert call.messages == [{"role": "user", "content": QUESTION}]
        # Nothing beyond the model's defaults: only the seed every call carries, which
        # litellm drops for a provider that has none.
        assert set(call.params) == {"seed"}
    assert selectors.run_fidelity_notes(run=run) == []


def test_version_1_adds_a_persona_and_wraps_the_question_and_the_run_says_so():
    run = run_made(models=offline_models(NOWHERE, names=("offline-terse",)), prompt=version_1())
    messages = the_calls(run)[0].messages
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] != run.questions.first().text
    (note,) = selectors.run_fidelity_notes(run=run)
    assert "adds a system message" in note and "other words around the question" in note


def test_parameters_of_the_run_or_the_models_settings_are_named_as_departures():
    models = offline_models(NOWHERE, names=("offline-terse", "offline-friendly"))
    models[1].params = {"top_p": 0.5}
    models[1].save(update_fields=["params"])
    run = run_made(models=models, params={"temperature": 0.7})
    notes = selectors.run_fidelity_notes(run=run)
    assert any("temperature=0.7" in note for note in notes)
    assert any("top_p=0.5" in note and models[1].display_name in note for note in notes)
    assert the_calls(run)[0].params["temperature"] == 0.7


def test_the_run_page_shows_departures_and_none_for_the_default(role_client):
    client = role_client(Role.RESEARCHER)
    models = offline_models(NOWHERE, names=("offline-terse",))
    published = run_made(models=models, name="As published")
    departing = run_made(models=models, name="Persona", prompt=version_1())
    page = client.get(reverse("runs:detail", args=[published.pk])).content.decode()
    assert 'data-testid="fidelity-note"' not in page
    page = client.get(reverse("runs:detail", args=[departing.pk])).content.decode()
    assert page.count('data-testid="fidelity-note"') == 1
    assert "adds a system message" in page


def test_every_report_built_from_a_departing_run_says_so(role_client):
    bench = bench_make(
        models={"Alpha": "A", "Beta": "A"},
        questions=[Q("q1"), Q("q2")],
        answers={(m, q): [0.5] for m in ("Alpha", "Beta") for q in ("q1", "q2")},
    )
    bench.sampling.prompt = version_1()
    bench.sampling.save(update_fields=["prompt"])
    other = grading_add(bench, answers={("Alpha", "q1"): [0.5]}, name="Second")
    report = benchmark_report_for(run=bench.grading)
    assert any("adds a system message" in note for note in report.run.fidelity_notes)
    client = role_client(Role.RESEARCHER)
    page = client.get(reverse("analysis:benchmark_report", args=[bench.grading.pk]))
    assert "adds a system message" in page.content.decode()
    compare = client.get(
        reverse("analysis:benchmark_compare", args=[bench.grading.pk, other.pk])
    ).content.decode()
    assert compare.count("adds a system message") >= 2  # both runs share the sampling run
