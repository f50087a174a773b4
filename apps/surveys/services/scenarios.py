"""Scenarios and the responses participants rate: PrivacyLens records imported, responses
imported from CSV or generated through the gateway.

Generation follows the gateway's rules (DESIGN.md, "Work that survives failure"): the model
is called outside any transaction and each answer is saved in its own short one; a scenario
that already has a response from this model and prompt version is not asked again, so a
redelivered or repeated task makes no call twice. Each request is a `ResponseGeneration`
row that a worker holds under a lease (apps/llm/leases.py): when the worker dies, another
takes it over and goes on from the scenarios still missing a response.
"""

import asyncio
import functools
import hashlib
import json
from dataclasses import dataclass

from asgiref.sync import async_to_sync, sync_to_async
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.console.uploads import UploadRefused, csv_rows, json_parse, shown, text_decode
from apps.llm import gateway, leases
from apps.llm.errors import PermanentLLMError, RetryableLLMError
from apps.llm.models import ModelConfig, PromptTemplate, Purpose
from apps.llm.selectors import prompt_current

from ..errors import SurveyError
from ..models import (
    ACTIVE_GENERATION,
    GenerationStatus,
    ResponseGeneration,
    ResponseSource,
    Scenario,
    ScenarioResponse,
    Study,
    StudyScenario,
    StudyStatus,
)
from ..privacylens import record_check
from ..selectors import scenario_response_messages
from .studies import study_set_status


@dataclass(frozen=True)
class ImportSummary:
    created: int
    unchanged: int


# The limits of what the pages show: a whole PrivacyLens record is shown on one page (the
# 40 bundled records are at most about 10,500 characters), a response is read by a participant.
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_RECORD_CHARS = 200_000
MAX_RESPONSE_CHARS = 20_000


def _import_errors(func):
    """With a `filename`, every refusal names the file, as the other importers' do."""

    @functools.wraps(func)
    def wrapper(*args, filename: str = "", **kwargs):
        try:
            return func(*args, **kwargs)
        except SurveyError as exc:
            if not filename:
                raise
            raise type(exc)(f"{filename} was not imported (nothing was changed): {exc}") from exc

    return wrapper


@_import_errors
def scenario_import_json(*, text: str | bytes, user=None) -> ImportSummary:
    """Import PrivacyLens records; all of them or, on any bad record, none. The file is read
    through apps.console.uploads (size, UTF-8, NUL, nesting) and each record is checked
    against what the columns and the pages hold (privacylens.record_check)."""
    try:
        records = json_parse(text_decode(text, max_bytes=MAX_FILE_BYTES))
    except UploadRefused as exc:
        raise SurveyError(f"The file cannot be imported: {exc}.") from exc
    if isinstance(records, dict):
        records = [records]
    if not isinstance(records, list) or not records:
        raise SurveyError("The file must hold a JSON list of PrivacyLens records.")
    rows, seen = [], {}
    for index, record in enumerate(records):
        record_check(record, index)
        name = record["name"]
        if name in seen:
            raise SurveyError(
                f"Record {index + 1} ({name}): the field name repeats record {seen[name] + 1}."
            )
        seen[name] = index
        raw = json.dumps(record, ensure_ascii=False)
        if len(raw) > MAX_RECORD_CHARS:
            raise SurveyError(
                f"Record {index + 1} ({name}): the record is {len(raw):,} characters long, "
                f"more than the {MAX_RECORD_CHARS:,} a scenario page can show."
            )
        rows.append((index, record, raw, hashlib.sha256(raw.encode()).hexdigest()))
    with transaction.atomic():
        existing = dict(
            Scenario.objects.select_for_update()
            .filter(name__in=list(seen))
            .values_list("name", "sha256")
        )
        new = []
        for index, record, raw, digest in rows:
            if record["name"] in existing:
                if existing[record["name"]] != digest:
                    raise SurveyError(
                        f"Record {index + 1} ({record['name']}): a different scenario with this "
                        "name was imported before; rename it or leave it out."
                    )
                continue
            trajectory = record["trajectory"]
            new.append(
                Scenario(
                    name=record["name"],
                    record_json=raw,
                    sha256=digest,
                    task=trajectory["user_instruction"],
                    trajectory=trajectory["executable_trajectory"],
                    user_name=trajectory["user_name"],
                    toolkits=trajectory["toolkits"],
                    final_action=trajectory["final_action"],
                    imported_by=user,
                )
            )
        Scenario.objects.bulk_create(new)
    return ImportSummary(created=len(new), unchanged=len(rows) - len(new))


RESPONSE_COLUMNS = ("scenario", "response", "model")
RESPONSE_LIMITS = {
    "response": MAX_RESPONSE_CHARS,
    "model": ScenarioResponse._meta.get_field("model_name").max_length,
    "prompt_version": ScenarioResponse._meta.get_field("prompt_version").max_length,
}


@_import_errors
def response_import_csv(*, text: str | bytes, study: Study | None = None) -> int:
    """Import responses from CSV (columns scenario, response, model; optionally
    prompt_version and offline), and show each in `study` where it has none yet. All rows,
    or none: each refusal names the line and the column."""
    try:
        columns, lines = csv_rows(text_decode(text, max_bytes=MAX_FILE_BYTES))
    except UploadRefused as exc:
        raise SurveyError(f"The file cannot be imported: {exc}.") from exc
    missing = [c for c in RESPONSE_COLUMNS if c not in columns]
    if missing:
        raise SurveyError(f"The CSV needs the column(s) {', '.join(missing)}.")
    if not lines:
        raise SurveyError("The CSV has no rows.")
    names = {r["scenario"] for _line, r in lines}
    scenarios = dict(Scenario.objects.filter(name__in=names).values_list("name", "pk"))
    for line, row in lines:
        if None in row:
            raise SurveyError(f"Line {line}: more cells than the {len(columns)} columns.")
        if row["scenario"] not in scenarios:
            raise SurveyError(f"Line {line}: no scenario is named {shown(row['scenario'])}.")
        for column, limit in RESPONSE_LIMITS.items():
            value = (row.get(column) or "").strip()
            if not value and column in RESPONSE_COLUMNS:
                raise SurveyError(f"Line {line}: the column {column} is empty.")
            if len(value) > limit:
                raise SurveyError(
                    f"Line {line}: the column {column} is longer than {limit:,} characters "
                    f"({len(value):,})."
                )
    rows = [row for _line, row in lines]
    count = 0
    with transaction.atomic():
        for row in rows:
            response, created = ScenarioResponse.objects.get_or_create(
                scenario_id=scenarios[row["scenario"]], source=ResponseSource.IMPORTED,
                model_name=row["model"].strip(),
                prompt_version=(row.get("prompt_version") or "").strip(),
                defaults={
                    "text": row["response"],
                    "offline": (row.get("offline") or "").strip().lower() in {"1", "true", "yes"},
                },
            )  # fmt: skip
            count += created
            if study is not None:
                StudyScenario.objects.filter(
                    study=study, scenario_id=response.scenario_id, response__isnull=True
                ).update(response=response)
    return count


def scenario_response_record(
    *, study_scenario: StudyScenario, model: ModelConfig, prompt: PromptTemplate, completion
) -> ScenarioResponse:
    """Keep a generated response and show it in the study (unless one is shown already)."""
    with transaction.atomic():
        response, _created = ScenarioResponse.objects.get_or_create(
            scenario_id=study_scenario.scenario_id, model=model, prompt=prompt,
            source=ResponseSource.GENERATED,
            defaults={
                "text": completion.text, "model_name": model.display_name,
                "prompt_version": f"{prompt.purpose} v{prompt.version}",
                "offline": model.is_offline, "input_tokens": completion.input_tokens,
                "output_tokens": completion.output_tokens, "cost_usd": completion.cost_usd,
            },
        )  # fmt: skip
        StudyScenario.objects.filter(pk=study_scenario.pk, response__isnull=True).update(
            response=response, response_error=""
        )
    return response


def study_scenario_record_error(*, study_scenario: StudyScenario, error: str) -> None:
    StudyScenario.objects.filter(pk=study_scenario.pk, response__isnull=True).update(
        response_error=error[:2000]
    )


async def _responses_generate(
    pending: list[tuple[StudyScenario, list[dict]]], model: ModelConfig, prompt: PromptTemplate
) -> dict:
    gate = asyncio.Semaphore(model.max_concurrent)
    outcome = {"ok": 0, "failed": 0, "retryable": 0}
    record = sync_to_async(scenario_response_record)
    record_error = sync_to_async(study_scenario_record_error)

    async def one(study_scenario: StudyScenario, messages: list[dict]) -> None:
        async with gate:
            try:
                completion = await gateway.acomplete(
                    model=model, messages=messages, purpose=Purpose.SCENARIO_RESPONSE,
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


GENERATION_STATES = leases.LeaseStates(
    waiting=GenerationStatus.QUEUED, running=GenerationStatus.RUNNING,
    failed=GenerationStatus.FAILED,
)  # fmt: skip
GENERATION_GAVE_UP = (
    "The worker generating these responses stopped {attempts} times before it finished; "
    "generate the missing responses again."
)


def scenario_responses_request(
    *, study: Study, model: ModelConfig, go_live: bool = False, user=None
) -> tuple[ResponseGeneration, bool]:
    """(generation, to_enqueue): a new request for `model`'s responses to the study's
    scenarios that have none, or the one still queued or running; `to_enqueue` when the
    caller should queue its task (new, or its worker's lease ran out)."""
    active = ResponseGeneration.objects.filter(
        study=study, model=model, status__in=ACTIVE_GENERATION
    )
    generation = active.first()
    if generation is not None:
        return generation, generation.lease_ran_out
    try:
        with transaction.atomic():
            generation = ResponseGeneration.objects.create(
                study=study, model=model, go_live=go_live, requested_by=user,
                **leases.lease_waiting_fields(),
            )  # fmt: skip
    except IntegrityError:  # a concurrent request made it first
        return active.get(), False
    return generation, True


def scenario_responses_generate(*, generation_id: int, retry_seconds: float = 0) -> dict | None:
    """Give every scenario of the generation's study that has none a response from its
    model; a draft study asked to go live does so once every scenario has one.

    None when the generation was not ours to work on (finished, held by a live worker, or
    out of attempts). Otherwise counts of what happened: "ok", "failed" and "retryable"
    calls, "reused" responses (made before by the same model and prompt version), "live"
    when the study went live, and "retry" when the generation went back to the queue, to be
    claimed again after `retry_seconds`, because calls failed in a way worth retrying and it
    has attempts left (apps/llm/leases.py MAX_ATTEMPTS)."""
    owner = leases.lease_owner_name()
    rows = ResponseGeneration.objects.filter(pk=generation_id)
    states = GENERATION_STATES
    if not leases.lease_claim(rows, states=states, owner=owner, started_at=timezone.now()):
        return None
    generation = ResponseGeneration.objects.select_related("model").get(pk=generation_id)
    with leases.lease_kept(rows, states=states, owner=owner):
        outcome = _missing_responses_generate(study_id=generation.study_id, model=generation.model)
    study = Study.objects.get(pk=generation.study_id)
    missing = study.study_scenarios.filter(response__isnull=True).count()
    if outcome["retryable"] and generation.attempts < leases.MAX_ATTEMPTS:
        error = (
            f"Attempt {generation.attempts} of {leases.MAX_ATTEMPTS} left {missing} "
            "scenario(s) without a response (see each one's error); trying again."
        )
        released = leases.lease_release(
            rows, states=states, owner=owner, delay_seconds=retry_seconds, error=error
        )
        outcome["retry"] = bool(released)
        return outcome
    if missing:
        leases.lease_end(
            rows, states=states, owner=owner, status=GenerationStatus.FAILED,
            error=f"{missing} scenario(s) still have no response after attempt "
            f"{generation.attempts} (see each one's error).",
            finished_at=timezone.now(),
        )  # fmt: skip
        return outcome
    ended = leases.lease_end(
        rows, states=states, owner=owner, status=GenerationStatus.DONE, error="",
        finished_at=timezone.now(),
    )  # fmt: skip
    if ended and generation.go_live and study.status == StudyStatus.DRAFT:
        study_set_status(study=study, status=StudyStatus.LIVE)
        outcome["live"] = True
    return outcome


def response_generations_expired_requeue() -> list[int]:
    """The generations whose worker died or never came (their lease ran out), back to
    queued: the caller queues their task. One out of attempts fails instead, saying so."""
    return leases.leases_expire(
        ResponseGeneration.objects.all(), states=GENERATION_STATES,
        gave_up={"error": GENERATION_GAVE_UP.format(attempts=leases.MAX_ATTEMPTS),
                 "finished_at": timezone.now()},
    )  # fmt: skip


def _missing_responses_generate(*, study_id: int, model: ModelConfig) -> dict:
    prompt = prompt_current(purpose=Purpose.SCENARIO_RESPONSE)
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
        (ss, scenario_response_messages(scenario=ss.scenario, prompt=prompt))
        for ss in missing
        if ss.scenario_id not in existing
    ]
    # async_to_sync, not asyncio.run (as apps/llm/bulk.py): the database writes come back to
    # this thread and its connection, which Celery closes after the task. With asyncio.run they
    # ran on asgiref's shared thread, whose connection stayed open for good.
    outcome = async_to_sync(_responses_generate)(pending, model, prompt) if pending else {
        "ok": 0, "failed": 0, "retryable": 0,
    }  # fmt: skip
    outcome["reused"] = reused
    return outcome
