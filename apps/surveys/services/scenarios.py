"""Scenarios and the responses participants rate: PrivacyLens records imported, responses
imported from CSV or generated through the gateway.

Generation follows the gateway's rules (DESIGN.md, "Work that survives failure"): the model
is called outside any transaction and each answer is saved in its own short one; a scenario
that already has a response from this model and prompt version is not asked again, so a
redelivered or repeated task makes no call twice.
"""

import asyncio
import csv
import hashlib
import io
import json
from dataclasses import dataclass

from asgiref.sync import async_to_sync, sync_to_async
from django.db import transaction

from apps.llm import gateway
from apps.llm.errors import PermanentLLMError, RetryableLLMError
from apps.llm.models import ModelConfig, PromptTemplate, Purpose
from apps.llm.selectors import prompt_current

from ..errors import SurveyError
from ..models import ResponseSource, Scenario, ScenarioResponse, Study, StudyScenario, StudyStatus
from ..privacylens import record_check
from ..selectors import scenario_response_messages
from .studies import study_set_status


@dataclass(frozen=True)
class ImportSummary:
    created: int
    unchanged: int


def scenario_import_json(*, text: str | bytes, user=None) -> ImportSummary:
    """Import PrivacyLens records; all of them or, on any bad record, none."""
    try:
        records = json.loads(text)
    except ValueError as exc:
        raise SurveyError(f"The file is not valid JSON: {exc}.") from exc
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


def response_import_csv(*, text: str, study: Study | None = None) -> int:
    """Import responses from CSV (columns scenario, response, model; optionally
    prompt_version and offline), and show each in `study` where it has none yet."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    missing = [c for c in RESPONSE_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise SurveyError(f"The CSV needs the column(s) {', '.join(missing)}.")
    rows = list(reader)
    if not rows:
        raise SurveyError("The CSV has no rows.")
    names = {r["scenario"] for r in rows}
    scenarios = dict(Scenario.objects.filter(name__in=names).values_list("name", "pk"))
    for line, row in enumerate(rows, start=2):
        if row["scenario"] not in scenarios:
            raise SurveyError(f"Line {line}: no scenario is named {row['scenario']!r}.")
        for column in ("response", "model"):
            if not (row.get(column) or "").strip():
                raise SurveyError(f"Line {line}: the column {column} is empty.")
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


def scenario_responses_generate(*, study_id: int, model_id: int, go_live: bool = False) -> dict:
    """Give every scenario of the study that has none a response from `model_id`; with
    `go_live`, a draft study goes live once every scenario has one (the demo does this).

    Counts of what happened: "ok", "failed" and "retryable" calls, "reused" responses (made
    before by the same model and prompt version), and "live" when the study went live. A
    retryable failure leaves its scenario without a response: the caller decides when to ask
    again."""
    model = ModelConfig.objects.get(pk=model_id)
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
    # A retryable failure left a scenario without a response, so the study is not ready and
    # stays a draft until a retry fills it.
    study = Study.objects.get(pk=study_id)
    ready = not study.study_scenarios.filter(response__isnull=True).exists()
    if go_live and ready and study.status == StudyStatus.DRAFT:
        study_set_status(study=study, status=StudyStatus.LIVE)
        outcome["live"] = True
    return outcome
