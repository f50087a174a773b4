"""LLM suggestions for a draft: requested by an expert, made by a worker, then decided.

The worker claims the job under a lease (apps/llm/leases.py), calls the model with no
transaction open, and stores the suggestions in one short transaction, only while it still
holds the job; a unique constraint on (job, text) makes a second run harmless. A job whose
worker died is taken over once its lease runs out.
"""

from django.db import transaction
from django.utils import timezone

from apps.llm import engine, gateway, leases, runs
from apps.llm.errors import PromptError
from apps.llm.models import Purpose
from apps.llm.selectors import prompt_current, prompt_render

from ..errors import RubricError
from ..models import (
    POINTS,
    AuthoringSettings,
    DraftJob,
    DraftStatus,
    EventAction,
    Kind,
    Origin,
    Polarity,
    Rubric,
    Suggestion,
    SuggestionStatus,
)
from .editing import criterion_add, normalise_text
from .revisions import locked, record, require_editable

DRAFT_SCHEMA = {
    "type": "object",
    "required": ["criteria"],
    "properties": {
        "criteria": {
            "type": "array",
            "minItems": 1,
            "maxItems": 30,
            "items": {
                "type": "object",
                "required": ["text", "polarity", "kind", "points"],
                "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 1000},
                    "polarity": {"enum": Polarity.values},
                    "kind": {"enum": Kind.values},
                    "points": {"enum": list(POINTS)},
                },
            },
        }
    },
}
# The expert is watching a progress indicator: give up sooner than a batch run would.
INTERACTIVE_POLICY = gateway.RetryPolicy(max_attempts=3, max_total_seconds=90.0)
LEASE_STATES = leases.LeaseStates(
    waiting=DraftStatus.QUEUED, running=DraftStatus.RUNNING, failed=DraftStatus.FAILED
)
GAVE_UP = (
    "The worker making these suggestions stopped {attempts} times before it finished; "
    "ask for suggestions again."
)


def draft_job_request(*, rubric: Rubric, user) -> tuple[DraftJob, bool]:
    """(job, started): a new job, or the one still queued or running for the draft;
    `started` when this call started its work (new, or its worker's lease ran out, so that
    asking again resumes a job that a dead worker held), once the transaction commits."""
    config = AuthoringSettings.objects.select_related("draft_model").first()
    model = config.draft_model if config else None
    if model is None or not model.active:
        raise RubricError(
            "No model is set to suggest criteria. A researcher chooses one in the console "
            "(Rubrics > Authoring settings)."
        )
    try:
        prompt = prompt_current(purpose=Purpose.RUBRIC_DRAFT)
    except PromptError as exc:
        raise RubricError(str(exc)) from exc
    with transaction.atomic():
        rubric = locked(rubric.pk)
        require_editable(rubric, user)
        active = rubric.draft_jobs.filter(
            status__in=[DraftStatus.QUEUED, DraftStatus.RUNNING]
        ).first()
        if active is not None:
            if active.lease_ran_out:
                engine.scope_start(DRAFT_WORK, active.pk)
            return active, active.lease_ran_out
        job = DraftJob.objects.create(
            rubric=rubric,
            requested_by=user,
            model=model,
            prompt=prompt,
            **leases.lease_waiting_fields(),
        )
        record(
            rubric,
            user=user,
            action=EventAction.SUGGESTIONS_REQUESTED,
            summary=str(model),
            detail={"job": job.pk, "prompt_version": prompt.version},
        )
        engine.scope_start(DRAFT_WORK, job.pk)
    return job, True


class DraftWork(runs.RowWork):
    """The engine's view of one suggestion job: a run of one row, the job itself (an
    expert waits for it)."""

    name = "rubrics.draft"
    caller = "draftjob"
    model = DraftJob
    states = LEASE_STATES
    policy = INTERACTIVE_POLICY

    def jobs(self):
        return DraftJob.objects.all()

    def gave_up(self):
        return {
            "error": GAVE_UP.format(attempts=leases.MAX_ATTEMPTS),
            "finished_at": timezone.now(),
        }

    def calls(self, ids):
        calls, refused = [], []
        for job in DraftJob.objects.filter(pk__in=ids).select_related(
            "rubric__question__topic", "model", "prompt"
        ):
            question = job.rubric.question
            try:
                messages = prompt_render(
                    template=job.prompt,
                    variables={"question": question.text, "topic": question.topic.name},
                )
            except PromptError as exc:
                refused.append((job.pk, str(exc)))
                continue
            call = engine.Call(
                row_id=job.pk,
                model=job.model,
                messages=messages,
                purpose=Purpose.RUBRIC_DRAFT,
                schema=DRAFT_SCHEMA,
                prompt=job.prompt,
            )
            calls.append(call)
        return calls, refused

    def record(self, results, *, owner):
        for result in results:
            if result.completion is not None:
                job = DraftJob.objects.select_related("rubric").get(pk=result.call.row_id)
                _store(job, result.completion.data["criteria"], owner)
            else:
                self._fail(result.call.row_id, str(result.error), owner)

    def refuse(self, failures, *, owner):
        for pk, reason in failures:
            self._fail(pk, reason, owner)

    def _fail(self, pk: int, reason: str, owner: str) -> None:
        leases.lease_end(
            DraftJob.objects.filter(pk=pk),
            states=LEASE_STATES,
            owner=owner,
            status=DraftStatus.FAILED,
            error=reason[:2000],
            finished_at=timezone.now(),
        )


DRAFT_WORK = engine.register(DraftWork())


def _store(job: DraftJob, items: list[dict], owner: str) -> None:
    with transaction.atomic():
        # First, so that a worker that lost its lease (presumed dead, replaced) stores nothing.
        ended = leases.lease_end(
            DraftJob.objects.filter(pk=job.pk),
            states=LEASE_STATES,
            owner=owner,
            status=DraftStatus.DONE,
            finished_at=timezone.now(),
        )
        if not ended:
            return
        existing = {t.lower() for t in job.rubric.criteria.values_list("text", flat=True)}
        fresh, seen = [], set()
        for item in items:
            text = normalise_text(item["text"])
            if text.lower() in existing or text.lower() in seen:
                continue
            seen.add(text.lower())
            fresh.append(
                Suggestion(
                    job=job,
                    rubric=job.rubric,
                    text=text,
                    polarity=item["polarity"],
                    kind=item["kind"],
                    points=item["points"],
                    order=len(fresh) + 1,
                )
            )
        Suggestion.objects.bulk_create(fresh, ignore_conflicts=True)
        DraftJob.objects.filter(pk=job.pk).update(left_out=len(items) - len(fresh))


def _pending(rubric: Rubric, suggestion_id: int) -> Suggestion:
    suggestion = (
        Suggestion.objects.select_for_update().filter(pk=suggestion_id, rubric=rubric).first()
    )
    if suggestion is None:
        raise RubricError("That suggestion is not part of this draft.")
    if suggestion.status != SuggestionStatus.PENDING:
        raise RubricError(f"That suggestion was already {suggestion.get_status_display().lower()}.")
    return suggestion


def suggestion_accept(
    *,
    rubric: Rubric,
    suggestion_id: int,
    user,
    revision: int,
    text: str | None = None,
    polarity: str | None = None,
    kind: str | None = None,
    points: int | None = None,
):
    """The suggestion, as it is or as the expert edited it, becomes a criterion marked as
    LLM-suggested."""
    with transaction.atomic():
        locked(rubric.pk)  # the draft before the suggestion, in the same order as reject
        suggestion = _pending(rubric, suggestion_id)
        criterion = criterion_add(
            rubric=rubric,
            user=user,
            revision=revision,
            text=suggestion.text if text is None else text,
            polarity=polarity or suggestion.polarity,
            kind=kind or suggestion.kind,
            points=suggestion.points if points is None else points,
            origin=Origin.LLM_SUGGESTED,
        )
        suggestion.status, suggestion.criterion = SuggestionStatus.ACCEPTED, criterion
        suggestion.decided_by, suggestion.decided_at = user, timezone.now()
        suggestion.save(update_fields=["status", "criterion", "decided_by", "decided_at"])
    return criterion


def suggestion_reject(*, rubric: Rubric, suggestion_id: int, user) -> Suggestion:
    with transaction.atomic():
        rubric = locked(rubric.pk)
        require_editable(rubric, user)
        suggestion = _pending(rubric, suggestion_id)
        suggestion.status = SuggestionStatus.REJECTED
        suggestion.decided_by, suggestion.decided_at = user, timezone.now()
        suggestion.save(update_fields=["status", "decided_by", "decided_at"])
    return suggestion
