"""Survey tasks: freeing expired reservations (beat, every minute) and generating the
responses participants rate (on the `llm` queue, beside the gateway's other model calls).

Generation follows the gateway's rules (DESIGN.md, "Work that survives failure"): the model
is called outside any transaction and each answer is saved in its own short one; a scenario
that already has a response from this model and prompt version is not asked again, so a
redelivered or repeated task makes no call twice.
"""

import asyncio
import logging

from asgiref.sync import async_to_sync, sync_to_async
from celery import shared_task

from apps.llm import gateway
from apps.llm.errors import PermanentLLMError, RetryableLLMError
from apps.llm.models import ModelConfig
from apps.llm.services import prompt_current
from apps.surveys import services
from apps.surveys.models import ResponseSource, ScenarioResponse, Study, StudyScenario, StudyStatus

from .delivery import CappedRedeliveryTask

log = logging.getLogger(__name__)
RETRY_SECONDS = 60


@shared_task(name="workers.surveys.expire_reservations", base=CappedRedeliveryTask)
def expire_reservations() -> int:
    freed = services.assignment_expire_overdue()
    if freed:
        log.info("freed %s expired survey reservation(s)", freed)
    return freed


async def _generate(pending: list[tuple[StudyScenario, list[dict]]], model, prompt) -> dict:
    gate = asyncio.Semaphore(model.max_concurrent)
    outcome = {"ok": 0, "failed": 0, "retryable": 0}
    record = sync_to_async(services.scenario_response_record)
    record_error = sync_to_async(services.study_scenario_record_error)

    async def one(study_scenario: StudyScenario, messages: list[dict]) -> None:
        async with gate:
            try:
                completion = await gateway.acomplete(
                    model=model, messages=messages, purpose="scenario_response",
                    caller=f"study_scenario:{study_scenario.pk}", prompt=prompt,
                )  # fmt: skip
            except RetryableLLMError as exc:
                outcome["retryable"] += 1
                await record_error(study_scenario=study_scenario, error=str(exc))
                return
            except PermanentLLMError as exc:
                outcome["failed"] += 1
                await record_error(study_scenario=study_scenario, error=str(exc))
                return
        await record(
            study_scenario=study_scenario, model=model, prompt=prompt, completion=completion
        )
        outcome["ok"] += 1

    try:
        await asyncio.gather(*(one(ss, messages) for ss, messages in pending))
    finally:
        await gateway.aclose_redis()
    return outcome


@shared_task(
    name="workers.surveys.generate_responses", base=CappedRedeliveryTask, bind=True,
    max_retries=5,
)  # fmt: skip
def generate_responses(self, study_id: int, model_id: int, go_live: bool = False) -> dict:
    """Give every scenario of the study that has none a response from `model_id`; with
    `go_live`, a draft study goes live once every scenario has one (the demo does this)."""
    model = ModelConfig.objects.get(pk=model_id)
    prompt = prompt_current("scenario_response")
    missing = list(
        StudyScenario.objects.filter(study_id=study_id, response__isnull=True).select_related(
            "scenario"
        )
    )
    existing = {
        r.scenario_id: r
        for r in ScenarioResponse.objects.filter(
            scenario_id__in=[ss.scenario_id for ss in missing],
            model=model,
            prompt=prompt,
            source=ResponseSource.GENERATED,
        )
    }
    reused = 0
    for ss in [ss for ss in missing if ss.scenario_id in existing]:
        StudyScenario.objects.filter(pk=ss.pk, response__isnull=True).update(
            response=existing[ss.scenario_id], response_error=""
        )
        reused += 1
    pending = [
        (ss, services.scenario_response_messages(scenario=ss.scenario, prompt=prompt))
        for ss in missing
        if ss.scenario_id not in existing
    ]
    # async_to_sync, not asyncio.run (as workers/llm.py): the database writes come back to
    # this thread and its connection, which Celery closes after the task. With asyncio.run they
    # ran on asgiref's shared thread, whose connection stayed open for good.
    outcome = async_to_sync(_generate)(pending, model, prompt) if pending else {
        "ok": 0, "failed": 0, "retryable": 0,
    }  # fmt: skip
    outcome["reused"] = reused
    if outcome["retryable"] and self.request.id and not self.request.is_eager:
        raise self.retry(countdown=RETRY_SECONDS)
    study = Study.objects.get(pk=study_id)
    ready = not study.study_scenarios.filter(response__isnull=True).exists()
    if go_live and ready and study.status == StudyStatus.DRAFT:
        services.study_set_status(study=study, status=StudyStatus.LIVE)
        outcome["live"] = True
    return outcome


expire_reservations_task = expire_reservations
generate_responses_task = generate_responses
