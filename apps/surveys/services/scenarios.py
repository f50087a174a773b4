"""Scenarios and the responses participants rate: PrivacyLens records imported, responses
imported from CSV or generated through the gateway.

Generation runs on the bulk engine (apps/llm/engine.py): a request is a
`ResponseGeneration` with one `ScenarioResponseCall` per scenario still missing a response,
each claimed under a lease, called with no transaction open and recorded in a short one; a
scenario that already has a response from this model and prompt version is not asked
again, so a redelivered or repeated task makes no call twice, and a dead worker's calls
are taken over once their lease runs out.
"""

import functools
import hashlib
import json
import secrets
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.console.uploads import UploadRefused, csv_rows, json_parse, shown, text_decode
from apps.llm import batches, engine, leases
from apps.llm.errors import PromptError
from apps.llm.models import BatchRetry, ModelConfig, PromptTemplate, Purpose
from apps.llm.selectors import prompt_current

from ..errors import SurveyError
from ..models import (
    ACTIVE_GENERATION,
    GenerationStatus,
    ResponseGeneration,
    ResponseSource,
    Scenario,
    ScenarioCallStatus,
    ScenarioResponse,
    ScenarioResponseCall,
    Study,
    StudyKind,
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
    """With a `filename`, every refusal names the file, as the other importers' do; the
    refusal keeps the file's name and its problems apart (`filename`, `problems`) for a page
    that lists them."""

    @functools.wraps(func)
    def wrapper(*args, filename: str = "", **kwargs):
        try:
            return func(*args, **kwargs)
        except SurveyError as exc:
            if not filename:
                raise
            refused = type(exc)(f"{filename} was not imported (nothing was changed): {exc}")
            refused.filename, refused.problems = filename, [str(exc)]
            raise refused from exc

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
                scenario_id=scenarios[row["scenario"]],
                source=ResponseSource.IMPORTED,
                model_name=row["model"].strip(),
                prompt_version=(row.get("prompt_version") or "").strip(),
                defaults={
                    "text": row["response"],
                    "offline": (row.get("offline") or "").strip().lower() in {"1", "true", "yes"},
                },
            )
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
            scenario_id=study_scenario.scenario_id,
            model=model,
            prompt=prompt,
            source=ResponseSource.GENERATED,
            defaults={
                "text": completion.text,
                "model_name": model.display_name,
                "prompt_version": f"{prompt.purpose} v{prompt.version}",
                "offline": model.is_offline,
                "input_tokens": completion.input_tokens,
                "output_tokens": completion.output_tokens,
                "cost_usd": completion.cost_usd,
            },
        )
        StudyScenario.objects.filter(pk=study_scenario.pk, response__isnull=True).update(
            response=response, response_error=""
        )
    return response


def study_scenario_record_error(*, study_scenario: StudyScenario, error: str) -> None:
    StudyScenario.objects.filter(pk=study_scenario.pk, response__isnull=True).update(
        response_error=error[:2000]
    )


GENERATION_GAVE_UP = (
    "The worker generating these responses stopped {attempts} times before it finished; "
    "generate the missing responses again."
)


CALL_STATES = leases.LeaseStates(
    waiting=ScenarioCallStatus.PENDING,
    running=ScenarioCallStatus.RUNNING,
    failed=ScenarioCallStatus.FAILED,
)
MAX_ERROR_CHARS = 2000


def scenario_responses_request(
    *,
    study: Study,
    model: ModelConfig,
    go_live: bool = False,
    user=None,
    batch_mode: bool = False,
    batch_retry: str = BatchRetry.BATCH,
) -> tuple[ResponseGeneration, bool]:
    """(generation, started): a new request for `model`'s responses to the study's
    scenarios that have none, started once the transaction commits, or the one still
    queued or running (asking again while one runs starts nothing: the lease sweep resumes
    a generation whose worker died).

    A scenario that already has a response from this model and prompt version gets it at
    once; each other one becomes a call for the engine, with a seed of its own. In
    `batch_mode` the calls go through the provider's batch API (apps/llm/batches.py)."""
    if study.kind != StudyKind.SCENARIOS:
        raise SurveyError(
            "A study of answers shows answers a benchmark run already has: there are no "
            "responses to generate."
        )
    refusal = batches.batch_mode_refusal(
        batch_mode=batch_mode, batch_retry=batch_retry, models=[model]
    )
    if refusal:
        raise SurveyError(refusal)
    active = ResponseGeneration.objects.filter(
        study=study, model=model, status__in=ACTIVE_GENERATION
    )
    generation = active.first()
    if generation is not None:
        return generation, False
    try:
        prompt = prompt_current(purpose=Purpose.SCENARIO_RESPONSE)
    except PromptError as exc:
        raise SurveyError(str(exc)) from exc
    try:
        with transaction.atomic():
            generation = ResponseGeneration.objects.create(
                study=study,
                model=model,
                prompt=prompt,
                seed=secrets.randbelow(2**31),
                go_live=go_live,
                requested_by=user,
                batch_mode=batch_mode,
                batch_retry=batch_retry,
            )
            missing = list(study.study_scenarios.filter(response__isnull=True))
            made = ScenarioResponse.objects.filter(
                scenario_id__in=[ss.scenario_id for ss in missing],
                model=model,
                prompt=prompt,
                source=ResponseSource.GENERATED,
            )
            existing = {r.scenario_id: r for r in made}
            calls = []
            for ss in missing:
                if ss.scenario_id in existing:
                    StudyScenario.objects.filter(pk=ss.pk, response__isnull=True).update(
                        response=existing[ss.scenario_id], response_error=""
                    )
                else:
                    seed = engine.call_seed(generation.seed, ss.pk)
                    calls.append(
                        ScenarioResponseCall(generation=generation, study_scenario=ss, seed=seed)
                    )
            ScenarioResponseCall.objects.bulk_create(calls)
            engine.scope_start(SCENARIO_RESPONSE_WORK, generation.pk)
    except IntegrityError:  # a concurrent request made it first
        return active.get(), False
    return generation, True


class ScenarioResponseWork(engine.Work):
    """The engine's view of a generation's calls (scope: the generation)."""

    name = "surveys.scenario_response"
    caller = "scenario_response_call"
    chains = 1
    model = ScenarioResponseCall
    states = CALL_STATES

    def rows(self, scope):
        return ScenarioResponseCall.objects.filter(generation_id=scope)

    def scope_lock(self, scope):
        generation = (
            ResponseGeneration.objects.select_for_update().filter(pk=scope).only("status").first()
        )
        return generation is not None and generation.status in ACTIVE_GENERATION

    def batch_choice(self, scope):
        generation = ResponseGeneration.objects.filter(pk=scope).values("batch_mode", "batch_retry")
        held = generation.first()
        return held["batch_retry"] if held and held["batch_mode"] else None

    def prepare(self, scope):
        ResponseGeneration.objects.filter(pk=scope, status=GenerationStatus.QUEUED).update(
            status=GenerationStatus.RUNNING, started_at=timezone.now()
        )

    def calls(self, ids):
        calls = []
        for call in ScenarioResponseCall.objects.filter(pk__in=ids).select_related(
            "generation__model", "generation__prompt", "study_scenario__scenario"
        ):
            generation = call.generation
            messages = scenario_response_messages(
                scenario=call.study_scenario.scenario, prompt=generation.prompt
            )
            item = engine.Call(
                row_id=call.pk,
                model=generation.model,
                messages=messages,
                purpose=Purpose.SCENARIO_RESPONSE,
                params={"seed": call.seed},
                prompt=generation.prompt,
            )
            calls.append(item)
        return calls, []

    def record(self, results, *, owner):
        now = timezone.now()
        with transaction.atomic():
            ids = [r.call.row_id for r in results]
            mine = engine.held(
                ScenarioResponseCall.objects.filter(pk__in=ids), states=self.states, owner=owner
            )
            held = {
                c.pk: c
                for c in mine.select_for_update(of=("self",)).select_related(
                    "generation__model", "generation__prompt", "study_scenario"
                )
            }
            for result in results:
                call = held.get(result.call.row_id)
                if call is None:
                    continue  # presumed dead and taken over: the successor records it
                changes = {"lease_owner": "", "lease_expires_at": None, "completed_at": now}
                if result.completion is not None:
                    response = scenario_response_record(
                        study_scenario=call.study_scenario,
                        model=call.generation.model,
                        prompt=call.generation.prompt,
                        completion=result.completion,
                    )
                    changes.update(
                        status=ScenarioCallStatus.DONE,
                        response=response,
                        error="",
                        error_kind="",
                        cost_usd=result.completion.cost_usd,
                    )
                else:
                    error = str(result.error)[:MAX_ERROR_CHARS]
                    study_scenario_record_error(study_scenario=call.study_scenario, error=error)
                    changes.update(
                        status=ScenarioCallStatus.FAILED,
                        error=error,
                        error_kind=result.error.status,
                    )
                ScenarioResponseCall.objects.filter(pk=call.pk).update(**changes)

    def gave_up(self):
        return {
            "error": GENERATION_GAVE_UP.format(attempts=leases.MAX_ATTEMPTS),
            "completed_at": timezone.now(),
        }

    def active_scopes(self):
        return ResponseGeneration.objects.filter(status__in=ACTIVE_GENERATION).values_list(
            "pk", flat=True
        )

    def settle(self, scope):
        """When no call is left, end the generation: done when every scenario of the study
        has a response (and then a draft asked to go live does), failed otherwise."""
        rows = self.rows(scope)
        if rows.filter(engine.claimable(self.states, timezone.now())).exists():
            return 0
        if rows.filter(status=self.states.running).exists():
            return None  # their holders settle it when they finish
        with transaction.atomic():
            generation = ResponseGeneration.objects.select_for_update().get(pk=scope)
            if generation.status not in ACTIVE_GENERATION:
                return None
            study = Study.objects.get(pk=generation.study_id)
            missing = study.study_scenarios.filter(response__isnull=True).count()
            failed = rows.filter(status=ScenarioCallStatus.FAILED).count()
            generation.finished_at = timezone.now()
            if missing:
                generation.status = GenerationStatus.FAILED
                generation.error = (
                    f"{missing} scenario(s) still have no response: {failed} call(s) failed "
                    "(see each scenario's error); generate the missing responses again."
                )
            else:
                generation.status, generation.error = GenerationStatus.DONE, ""
            generation.save(update_fields=["status", "error", "finished_at"])
            if not missing and generation.go_live and study.status == StudyStatus.DRAFT:
                study_set_status(study=study, status=StudyStatus.LIVE)
        return None


SCENARIO_RESPONSE_WORK = engine.register(ScenarioResponseWork())


def survey_file_import(
    *, kind: str, text: str | bytes, filename: str, study: Study | None = None, user=None
) -> str:
    """A file of scenarios (`kind` "scenarios": PrivacyLens JSON) or of responses (CSV, shown
    in `study`), imported whole or refused with SurveyError; what was imported, in a sentence,
    as the console and the setup page say it."""
    if kind == "scenarios":
        summary = scenario_import_json(text=text, user=user, filename=filename)
        return (
            f"{filename}: {summary.created} scenario(s) imported, "
            f"{summary.unchanged} skipped (already there, unchanged), no errors."
        )
    count = response_import_csv(text=text, study=study, filename=filename)
    return f"{filename}: {count} response(s) imported, no errors."
