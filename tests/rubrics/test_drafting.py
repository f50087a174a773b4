import pytest

from apps.llm.models import CallStatus, LLMCall
from apps.rubrics import services
from apps.rubrics.errors import RubricConflict, RubricError
from apps.rubrics.models import (
    AuthoringSettings,
    DraftStatus,
    Origin,
    Suggestion,
    SuggestionStatus,
)
from apps.rubrics.services.drafting import DRAFT_WORK
from tests.factories import job_run, offline_model, question_assigned

pytestmark = pytest.mark.django_db


@pytest.fixture
def drafting_model(offline_provider_url):
    model = offline_model(offline_provider_url, name="offline-thorough")
    AuthoringSettings.objects.update_or_create(pk=1, defaults={"draft_model": model})
    return model


@pytest.fixture
def draft(expert):
    question = question_assigned(
        expert,
        text="Someone logged into my email from another country. I changed my password "
        "but I'm worried they can still get in. What else should I do?",
        topic="compromise",
    )
    return services.rubric_start(question=question, user=expert)


def test_asking_without_a_configured_model_says_who_can_fix_it(draft, expert):
    with pytest.raises(RubricError, match="A researcher chooses one"):
        services.draft_job_request(rubric=draft, user=expert)


def test_a_job_asks_the_model_with_the_versioned_prompt_and_keeps_its_suggestions(
    draft, expert, drafting_model
):
    job, created = services.draft_job_request(rubric=draft, user=expert)
    again, created_again = services.draft_job_request(rubric=draft, user=expert)
    assert created and not created_again and again == job
    assert job.status == DraftStatus.QUEUED and job.prompt.purpose == "rubric_draft"

    done = job_run(DRAFT_WORK, job.pk)

    assert done.status == DraftStatus.DONE
    suggestions = list(job.suggestions.all())
    assert 4 <= len(suggestions) <= 8
    assert {s.points for s in suggestions} <= {1, 2, 3, 5}
    assert {s.polarity for s in suggestions} == {"positive", "negative"}
    call = LLMCall.objects.get(caller=f"draftjob:{job.pk}")
    assert (call.status, call.purpose, call.prompt_template) == (
        CallStatus.OK,
        "rubric_draft",
        job.prompt,
    )
    job.prompt.refresh_from_db()
    assert job.prompt.used_at is not None


def test_running_a_job_twice_calls_the_model_once(draft, expert, drafting_model):
    job, _ = services.draft_job_request(rubric=draft, user=expert)
    job_run(DRAFT_WORK, job.pk)
    count = job.suggestions.count()
    assert job_run(DRAFT_WORK, job.pk) is None
    assert job.suggestions.count() == count
    assert LLMCall.objects.filter(caller=f"draftjob:{job.pk}").count() == 1


def test_a_model_that_refuses_leaves_the_job_failed_with_the_reason(
    draft, expert, offline_provider_url
):
    broken = offline_model(
        offline_provider_url,
        name="offline-thorough",
        params={"offline_fault": "400"},
    )
    AuthoringSettings.objects.update_or_create(pk=1, defaults={"draft_model": broken})
    job, _ = services.draft_job_request(rubric=draft, user=expert)
    failed = job_run(DRAFT_WORK, job.pk)
    assert failed.status == DraftStatus.FAILED
    assert broken.display_name in failed.error
    assert not job.suggestions.exists()


def _suggestion(draft, expert, **fields) -> Suggestion:
    job, _ = services.draft_job_request(rubric=draft, user=expert)
    values = {
        "text": "Suggests signing out every other session.",
        "polarity": "positive",
        "kind": "factual",
        "points": 3,
        "order": 1,
        **fields,
    }
    return Suggestion.objects.create(job=job, rubric=draft, **values)


def test_accepting_a_suggestion_makes_an_llm_suggested_criterion(draft, expert, drafting_model):
    suggestion = _suggestion(draft, expert)
    draft.refresh_from_db()
    criterion = services.suggestion_accept(
        rubric=draft, suggestion_id=suggestion.pk, user=expert, revision=draft.revision
    )
    suggestion.refresh_from_db()
    assert criterion.origin == Origin.LLM_SUGGESTED
    assert (criterion.text, criterion.points) == (suggestion.text, 3)
    assert (suggestion.status, suggestion.criterion) == (SuggestionStatus.ACCEPTED, criterion)
    with pytest.raises(RubricError, match="already accepted"):
        draft.refresh_from_db()
        services.suggestion_accept(
            rubric=draft, suggestion_id=suggestion.pk, user=expert, revision=draft.revision
        )


def test_a_suggestion_can_be_edited_before_it_is_accepted(draft, expert, drafting_model):
    suggestion = _suggestion(draft, expert)
    draft.refresh_from_db()
    criterion = services.suggestion_accept(
        rubric=draft,
        suggestion_id=suggestion.pk,
        user=expert,
        revision=draft.revision,
        text="Suggests signing out of every other session from the security page.",
        points=5,
        polarity="positive",
        kind="factual",
    )
    assert criterion.text.endswith("security page.") and criterion.points == 5
    assert criterion.origin == Origin.LLM_SUGGESTED


def test_accepting_on_a_stale_draft_is_a_conflict_and_the_suggestion_stays(
    draft, expert, drafting_model
):
    suggestion = _suggestion(draft, expert)
    stale = draft.revision
    services.criterion_add(
        rubric=draft,
        user=expert,
        revision=stale,
        text="Another.",
        polarity="positive",
        kind="factual",
        points=1,
    )
    with pytest.raises(RubricConflict):
        services.suggestion_accept(
            rubric=draft, suggestion_id=suggestion.pk, user=expert, revision=stale
        )
    suggestion.refresh_from_db()
    assert suggestion.status == SuggestionStatus.PENDING


def test_rejecting_a_suggestion_changes_nothing_in_the_draft(draft, expert, drafting_model):
    suggestion = _suggestion(draft, expert)
    draft.refresh_from_db()
    revision = draft.revision
    services.suggestion_reject(rubric=draft, suggestion_id=suggestion.pk, user=expert)
    suggestion.refresh_from_db()
    draft.refresh_from_db()
    assert suggestion.status == SuggestionStatus.REJECTED and draft.revision == revision


def test_suggestions_already_in_the_rubric_are_left_out(draft, expert, drafting_model):
    first, _ = services.draft_job_request(rubric=draft, user=expert)
    job_run(DRAFT_WORK, first.pk)
    kept = first.suggestions.order_by("order").first()
    draft.refresh_from_db()
    services.suggestion_accept(
        rubric=draft, suggestion_id=kept.pk, user=expert, revision=draft.revision
    )

    # The offline model answers the same prompt the same way, so it suggests `kept` again.
    second, _ = services.draft_job_request(rubric=draft, user=expert)
    job_run(DRAFT_WORK, second.pk)

    second.refresh_from_db()
    assert second.left_out == 1
    assert kept.text not in set(second.suggestions.values_list("text", flat=True))
    assert second.suggestions.count() == first.suggestions.count() - 1
