import random

import pytest

from apps.llm.models import LLMCall
from apps.llm.selectors import prompt_current
from apps.runs import selectors
from apps.runs.errors import RunError
from apps.runs.models import Response, ResponseStatus, RunKind, SamplingRun
from apps.runs.services import (
    REFERENCE_WORK,
    reference_models_set,
    reference_run_get,
    sample_answers_draw,
)
from tests.factories import job_run, offline_model, question_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def models(offline_provider_url):
    made = [
        offline_model(offline_provider_url, name=name)
        for name in ("offline-terse", "offline-thorough", "offline-friendly")
    ]
    reference_models_set(models=made)
    return made


def test_without_reference_models_the_draw_says_how_to_configure_them():
    with pytest.raises(RunError, match="No reference models are configured"):
        sample_answers_draw(question=question_make())


def test_there_is_one_reference_run_pinned_to_the_sample_prompt():
    run = reference_run_get()
    assert reference_run_get() == run
    assert run.kind == RunKind.REFERENCE and run.prompt == prompt_current(purpose="sample")


def test_two_answers_from_two_different_models_are_generated_and_kept(models):
    question = question_make()
    drawn = sample_answers_draw(question=question, rng=random.Random(1))
    assert len(drawn) == 2 and len({r.model_id for r in drawn}) == 2
    assert all(
        r.status == ResponseStatus.PENDING and r.run.kind == RunKind.REFERENCE for r in drawn
    )

    for response in drawn:
        done = job_run(REFERENCE_WORK, response.pk)
        assert done.status == ResponseStatus.DONE and done.text.strip()
        assert done.output_tokens > 0 and done.cost_usd > 0 and done.attempts == 1

    again = sample_answers_draw(question=question, exclude_model_ids=[], rng=random.Random(1))
    assert {r.pk for r in again} == {r.pk for r in drawn}  # kept, not generated again
    assert Response.objects.count() == 2


def test_generating_twice_makes_one_call(models):
    (response, _other) = sample_answers_draw(question=question_make())
    job_run(REFERENCE_WORK, response.pk)
    assert job_run(REFERENCE_WORK, response.pk) is None
    assert LLMCall.objects.filter(caller=f"response:{response.pk}").count() == 1


def test_show_two_others_prefers_models_not_shown(models):
    question = question_make()
    shown = sample_answers_draw(question=question, rng=random.Random(3))
    shown_ids = {r.model_id for r in shown}
    others = sample_answers_draw(
        question=question, exclude_model_ids=shown_ids, rng=random.Random(3)
    )
    (unseen,) = {m.pk for m in models} - shown_ids
    assert unseen in {r.model_id for r in others}
    assert len(others) == 2


def test_an_answer_from_a_sampling_run_is_used_before_generating(models):
    question = question_make()
    run = SamplingRun.objects.create(name="Benchmark", prompt=prompt_current(purpose="sample"))
    for model in models:
        Response.objects.create(
            run=run,
            model=model,
            question=question,
            status=ResponseStatus.DONE,
            text=f"Answer from the benchmark by {model.display_name}",
        )
    drawn = sample_answers_draw(question=question)
    assert all(r.run == run and r.text.startswith("Answer from the benchmark") for r in drawn)
    assert not Response.objects.filter(run__kind=RunKind.REFERENCE).exists()
    assert len(selectors.answers_ready(question=question)) == 2


def test_a_failed_answer_is_tried_again_when_drawn_again(offline_provider_url):
    broken = offline_model(
        offline_provider_url,
        name="offline-terse",
        params={"offline_fault": "400"},
    )
    reference_models_set(models=[broken])
    question = question_make()
    (response,) = sample_answers_draw(question=question)
    failed = job_run(REFERENCE_WORK, response.pk)
    assert failed.status == ResponseStatus.FAILED and broken.display_name in failed.error
    (again,) = sample_answers_draw(question=question)
    assert again.pk == response.pk and again.status == ResponseStatus.PENDING
