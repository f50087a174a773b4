"""Every write of the surveys app.

Counting rule (DESIGN.md, "Surveys under load"): a scenario is full when its completed
assignments plus its reserved assignments whose `reserved_until` is still ahead reach the
study's k. Anything that can *add* to that count (reserving, completing an expired
reservation) first locks the scenario's `StudyScenario` row and then counts in a new
statement, so the count it acts on includes every committed change by others. Whatever only
*lowers* the count (expiry, return, rejection) needs no lock.
"""

import csv
import datetime as dt
import hashlib
import io
import json
import random
import re
import time
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.llm.models import ModelConfig, PromptTemplate
from apps.llm.services import prompt_render

from . import prolific as prolific_api
from .errors import SurveyError
from .models import (
    Answer,
    Assignment,
    AssignmentStatus,
    Page,
    PageTime,
    Participant,
    ParticipantStatus,
    RejectionCategory,
    ResponseSource,
    ReviewStatus,
    Scenario,
    ScenarioResponse,
    Study,
    StudyScenario,
    StudyStatus,
    SurveyItem,
)
from .privacylens import record_check

MAX_EXPLANATION = 2000
MIN_REJECTION_MESSAGE = 100
PROLIFIC_ID = re.compile(r"^[0-9a-f]{24}$")
RESERVE_ATTEMPTS = 40


# --- scenarios and the responses to rate ----------------------------------------------


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


def scenario_response_messages(*, scenario: Scenario, prompt: PromptTemplate) -> list[dict]:
    """The messages that ask a model for the response to `scenario`'s task."""
    return prompt_render(prompt, task=scenario.task, context=scenario.trajectory)


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


# --- studies ------------------------------------------------------------------------------

STUDY_FIELDS = (
    "name", "prolific_study_id", "scenarios_per_participant", "ratings_per_scenario",
    "reservation_minutes", "consent_text", "instructions_text", "example_text",
    "code_completed", "code_no_consent", "code_failed_attention", "code_full",
)  # fmt: skip


@transaction.atomic
def study_create(*, scenarios, user=None, slug: str | None = None, **fields) -> Study:
    """A draft study over `scenarios`, asking the default items (copied, so editable)."""
    unknown = set(fields) - set(STUDY_FIELDS)
    if unknown:
        raise TypeError(f"unknown study fields: {sorted(unknown)}")
    study = Study(created_by=user, **fields)
    if slug:
        study.slug = slug
    study.full_clean()
    study.save()
    StudyScenario.objects.bulk_create(StudyScenario(study=study, scenario=s) for s in scenarios)
    items = []
    for item in SurveyItem.objects.filter(study=None):
        item.pk, item.study = None, study
        items.append(item)
    SurveyItem.objects.bulk_create(items)
    return study


@transaction.atomic
def study_update(*, study: Study, scenarios=None, **fields) -> Study:
    study = Study.objects.select_for_update().get(pk=study.pk)
    for name, value in fields.items():
        if name not in STUDY_FIELDS:
            raise TypeError(f"unknown study field: {name}")
        setattr(study, name, value)
    study.full_clean()
    study.save(update_fields=list(fields))
    if scenarios is not None:
        wanted = {s.pk for s in scenarios}
        current = set(study.study_scenarios.values_list("scenario_id", flat=True))
        if wanted != current and study.status != StudyStatus.DRAFT:
            raise SurveyError("Scenarios can be changed only while the study is a draft.")
        study.study_scenarios.exclude(scenario_id__in=wanted).delete()
        StudyScenario.objects.bulk_create(
            StudyScenario(study=study, scenario_id=pk) for pk in wanted - current
        )
    return study


TRANSITIONS = {
    StudyStatus.DRAFT: {StudyStatus.LIVE},
    StudyStatus.LIVE: {StudyStatus.PAUSED, StudyStatus.CLOSED},
    StudyStatus.PAUSED: {StudyStatus.LIVE, StudyStatus.CLOSED},
    StudyStatus.CLOSED: set(),
}


@transaction.atomic
def study_set_status(*, study: Study, status: str) -> Study:
    study = Study.objects.select_for_update().get(pk=study.pk)
    if status not in TRANSITIONS[study.status]:
        raise SurveyError(
            f"A {study.get_status_display().lower()} study cannot become "
            f"{StudyStatus(status).label.lower()}."
        )
    if status == StudyStatus.LIVE:
        if not study.study_scenarios.exists():
            raise SurveyError("Add scenarios before going live.")
        waiting = study.study_scenarios.filter(response__isnull=True).count()
        if waiting:
            raise SurveyError(
                f"{waiting} scenario(s) have no response to rate yet; generate or import them."
            )
        if not study.items.filter(attention_check=False).exists():
            raise SurveyError("The study asks no questions.")
        if study.scenarios_per_participant > study.study_scenarios.count():
            raise SurveyError("Scenarios per participant exceeds the number of scenarios.")
    study.status = status
    study.save(update_fields=["status"])
    return study


def study_items_frozen(*, study: Study) -> bool:
    return Answer.objects.filter(item__study=study).exists()


def survey_item_save(*, item: SurveyItem) -> SurveyItem:
    """Save a study's item; refused once anyone has answered the study."""
    if item.study is None:
        raise SurveyError("The default items are changed by a migration, not here.")
    with transaction.atomic():
        Study.objects.select_for_update().get(pk=item.study_id)
        if study_items_frozen(study=item.study):
            raise SurveyError("Someone has answered this study: its questions are frozen.")
        item.full_clean()
        item.save()
    return item


# --- arriving from Prolific ---------------------------------------------------------------


@dataclass(frozen=True)
class ProlificParams:
    pid: str
    study_id: str
    session_id: str


def prolific_params_parse(*, study: Study, query) -> ProlificParams:
    """The PROLIFIC_PID, STUDY_ID and SESSION_ID of a link, or SurveyError saying what's wrong."""
    values = {
        key: (query.get(key) or "").strip() for key in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
    }
    missing = [key for key, value in values.items() if not value]
    if missing:
        raise SurveyError(f"The link is missing {', '.join(missing)}.")
    wrong = [key for key, value in values.items() if not PROLIFIC_ID.match(value)]
    if wrong:
        raise SurveyError(f"The link's {', '.join(wrong)} is not a Prolific id.")
    if study.prolific_study_id and values["STUDY_ID"] != study.prolific_study_id:
        raise SurveyError("The link's STUDY_ID belongs to another study.")
    return ProlificParams(values["PROLIFIC_PID"], values["STUDY_ID"], values["SESSION_ID"])


def participant_enter(*, study: Study, params: ProlificParams) -> Participant | None:
    """A returning PID's participant, now bound to this browser (None: a new arrival).

    Resuming needs the same SESSION_ID: it is the Prolific submission the work belongs to.
    A PID that has finished (or declined, or found the study full) only sees its code again.
    """
    participant = Participant.objects.filter(
        study=study, prolific_pid=params.pid, kind="human"
    ).first()
    if participant is None:
        return None
    if participant.status == ParticipantStatus.ACTIVE:
        if participant.prolific_session_id != params.session_id:
            raise SurveyError(
                "This Prolific ID already started the study in another Prolific session. "
                "Please continue from the session you started, or contact the researchers."
            )
        participant.browser_key = Participant._meta.get_field("browser_key").default()
        participant.save(update_fields=["browser_key"])
    return participant


def _participant_create(
    *, study: Study, params: ProlificParams, **fields
) -> tuple[Participant, bool]:
    try:
        with transaction.atomic():
            return Participant.objects.create(
                study=study, prolific_pid=params.pid, prolific_study_id=params.study_id,
                prolific_session_id=params.session_id, **fields,
            ), True  # fmt: skip
    except IntegrityError:
        # A second tab or a double click got here first: carry on with its row.
        return Participant.objects.get(study=study, prolific_pid=params.pid, kind="human"), False


def participant_consent(
    *, study: Study, params: ProlificParams, consent_seconds: float | None
) -> Participant:
    """Consent given: the participant, with a bundle of scenarios (status FULL when none)."""
    existing = participant_enter(study=study, params=params)
    if existing is not None:
        return existing
    if study.status != StudyStatus.LIVE:
        raise SurveyError("This study is not taking new participants at the moment.")
    now = timezone.now()
    participant, created = _participant_create(study=study, params=params, consented_at=now)
    if not created:
        return participant
    if consent_seconds is not None:
        shown = now - dt.timedelta(seconds=max(0.0, min(consent_seconds, 86400)))
        PageTime.objects.create(
            participant=participant, page=Page.CONSENT, shown_at=shown, submitted_at=now
        )
    if not assignment_reserve_bundle(participant=participant):
        participant.status, participant.completion_code = ParticipantStatus.FULL, study.code_full
        participant.save(update_fields=["status", "completion_code"])
    return participant


def participant_decline(*, study: Study, params: ProlificParams) -> Participant:
    existing = participant_enter(study=study, params=params)
    if existing is not None and existing.status != ParticipantStatus.ACTIVE:
        return existing
    if existing is not None:
        raise SurveyError("You have already consented and started; your answers are kept.")
    participant, _ = _participant_create(
        study=study, params=params, status=ParticipantStatus.NO_CONSENT,
        completion_code=study.code_no_consent,
    )  # fmt: skip
    return participant


# --- assignment ---------------------------------------------------------------------------


def _counted(now) -> Q:
    return Q(status=AssignmentStatus.COMPLETED) | Q(
        status=AssignmentStatus.RESERVED, reserved_until__gt=now
    )


def _filled_subquery(now):
    counted = (
        Assignment.objects.filter(_counted(now), study_scenario=OuterRef("pk"))
        .order_by()
        .values("study_scenario")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted), Value(0))


def _fill(ids, now) -> dict[int, int]:
    rows = (
        Assignment.objects.filter(_counted(now), study_scenario_id__in=ids)
        .values("study_scenario_id")
        .annotate(n=Count("pk"))
    )
    counts = dict.fromkeys(ids, 0)
    counts.update({r["study_scenario_id"]: r["n"] for r in rows})
    return counts


def _try_reserve(participant: Participant, now, settle: bool = False) -> list[Assignment] | None:
    """One attempt in one transaction; None when rows locked by others may have room
    (unless `settle`: then whatever is free now)."""
    study = participant.study
    wanted, k = study.scenarios_per_participant, study.ratings_per_scenario
    with transaction.atomic():
        # The participant's row lock makes two tabs or a double click reserve once.
        Participant.objects.select_for_update().get(pk=participant.pk)
        mine = list(participant.assignments.order_by("position"))
        if mine:
            return mine
        candidates = StudyScenario.objects.filter(study=study, response__isnull=False)
        chosen: list[int] = []
        examined: set[int] = set()
        while len(chosen) < wanted:
            # Least-filled first; random among equals so that concurrent arrivals spread out.
            # SKIP LOCKED: rows another arrival is handing out are passed over, not waited for.
            batch = list(
                candidates.exclude(pk__in=examined)
                .annotate(filled=_filled_subquery(now))
                .filter(filled__lt=k)
                .order_by("filled", "?")
                .select_for_update(skip_locked=True, of=("self",))
                .values_list("pk", flat=True)[: wanted - len(chosen)]
            )
            if not batch:
                break
            examined.update(batch)
            # Counted again in a new statement, now that the rows are ours: the first
            # statement's snapshot may predate a commit by whoever held a row before us.
            fresh = _fill(batch, now)
            chosen += [pk for pk in batch if fresh[pk] < k]
        if len(chosen) < wanted and not settle:
            room = candidates.exclude(pk__in=examined).annotate(filled=_filled_subquery(now))
            if room.filter(filled__lt=k).exists():
                transaction.set_rollback(True)
                return None  # others hold rows that may still have room: try again shortly
        until = now + dt.timedelta(minutes=study.reservation_minutes)
        random.shuffle(chosen)  # the order scenarios are shown in carries no information
        return Assignment.objects.bulk_create(
            Assignment(
                participant=participant,
                study_scenario_id=pk,
                position=i,
                reserved_at=now,
                reserved_until=until,
            )
            for i, pk in enumerate(chosen, start=1)
        )


def assignment_reserve_bundle(*, participant: Participant) -> list[Assignment]:
    """Hand `participant` up to N distinct scenarios that still have room, least-rated first.

    Fewer than N only when fewer than N scenarios have room left; none when the study is full.
    """
    for attempt in range(RESERVE_ATTEMPTS):
        reserved = _try_reserve(participant, timezone.now())
        if reserved is not None:
            return reserved
        time.sleep(min(0.2, 0.005 * 2**attempt) * random.uniform(0.5, 1.5))
    # Still contended after many tries: take what is free now rather than turn the person away.
    return _try_reserve(participant, timezone.now(), settle=True)


def assignment_expire_overdue(*, now=None) -> int:
    """Free every reservation past its deadline (the scenario may be offered again)."""
    now = now or timezone.now()
    return Assignment.objects.filter(
        status=AssignmentStatus.RESERVED, reserved_until__lte=now
    ).update(status=AssignmentStatus.EXPIRED)


# --- answering ----------------------------------------------------------------------------


def _check_open(participant: Participant) -> None:
    if participant.status != ParticipantStatus.ACTIVE:
        raise SurveyError("This survey has been submitted; answers can no longer be changed.")


def _check_value(item: SurveyItem, value: str, explanation: str) -> None:
    if value and value not in {v for v, _label in item.choices}:
        raise SurveyError(f"{item.code}: {value!r} is not one of the answers.")
    if len(explanation) > MAX_EXPLANATION:
        raise SurveyError(f"{item.code}: explanations are limited to {MAX_EXPLANATION} characters.")


# A repeat (another tab, a refresh, a double click) updates the row the unique constraint
# names: one row per assignment and item whatever happens, the last answer given winning.
ANSWER_ON_CONFLICT = """
ON CONFLICT (assignment_id, item_id) DO UPDATE
   SET value = CASE WHEN %s THEN EXCLUDED.value ELSE surveys_answer.value END,
       explanation = CASE WHEN %s THEN EXCLUDED.explanation ELSE surveys_answer.explanation END,
       saved_at = EXCLUDED.saved_at, save_count = surveys_answer.save_count + 1
"""
# Written only if the assignment is the participant's: no separate ownership read.
ANSWER_UPSERT = (
    """
INSERT INTO surveys_answer
       (assignment_id, item_id, value, explanation, first_saved_at, saved_at, save_count)
SELECT a.id, given.item_id, given.value, given.explanation, %s, %s, 1
  FROM surveys_assignment a,
       (VALUES {rows}) AS given (item_id, value, explanation)
 WHERE a.id = %s AND a.participant_id = %s
"""
    + ANSWER_ON_CONFLICT
)
ANSWER_ROW = "(%s::bigint, %s::varchar, %s::text)"


def answers_upsert(
    *, participant: Participant, assignment_id: int, answers: list[tuple[SurveyItem, str, str]],
    set_value: bool = True, set_explanation: bool = True,
) -> bool:  # fmt: skip
    """Save `answers` ((item, value, explanation), checked by the caller) on the participant's
    assignment, in one statement; False, and nothing written, if the assignment is not theirs.
    `set_value` / `set_explanation` False: an existing answer keeps that part."""
    now = timezone.now()
    params: list = [now, now]
    for item, value, explanation in answers:
        params += [item.pk, value, explanation]
    params += [assignment_id, participant.pk, set_value, set_explanation]
    sql = ANSWER_UPSERT.format(rows=", ".join([ANSWER_ROW] * len(answers)))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount > 0


# The same write, checking in the same statement everything a participant's request must show
# before it (services.answer_save and views.participant_required): the browser key of the
# participant named by the signed cookie, their study and its address, that they are still
# taking part, that the assignment is theirs, and that the study's items are the version the
# item was checked against.
ANSWER_UPSERT_BOUND = (
    """
INSERT INTO surveys_answer
       (assignment_id, item_id, value, explanation, first_saved_at, saved_at, save_count)
SELECT a.id, %s, %s, %s, %s, %s, 1
  FROM surveys_assignment a
  JOIN surveys_participant p ON p.id = a.participant_id
  JOIN surveys_study s ON s.id = p.study_id
 WHERE a.id = %s AND p.id = %s AND p.browser_key = %s AND p.status = %s
   AND s.id = %s AND s.slug = %s AND s.items_version = %s
"""
    + ANSWER_ON_CONFLICT
)


def answer_save_bound(
    *, participant_id: int, browser_key: str, study_id: int, slug: str, items_version: int,
    assignment_id: int, item: SurveyItem, value: str | None, explanation: str | None,
) -> bool:  # fmt: skip
    """answer_save for a request that has not read the participant: one statement that writes
    only if every check holds (see ANSWER_UPSERT_BOUND). False: nothing written, and the
    caller finds out why the long way. SurveyError: the answer itself is not acceptable."""
    _check_value(item, value or "", explanation or "")
    now = timezone.now()
    params = [
        item.pk, value or "", explanation or "", now, now,
        assignment_id, participant_id, browser_key, ParticipantStatus.ACTIVE,
        study_id, slug, items_version, value is not None, explanation is not None,
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(ANSWER_UPSERT_BOUND, params)
        return cursor.rowcount > 0


def answer_save(
    *, item: SurveyItem, value: str | None, explanation: str | None,
    assignment: Assignment | None = None, participant: Participant | None = None,
    assignment_id: int | None = None,
) -> bool:  # fmt: skip
    """Save one answer as it is given (None: leave that part as it was). One row per
    assignment and item whatever the number of tabs, refreshes or repeats: the last answer
    given wins, in a single statement (INSERT ... ON CONFLICT), so no race can add a row.

    Either `assignment`, or `participant` and `assignment_id`: then nothing is written, and
    False returned, unless that assignment is the participant's."""
    if assignment is not None:
        participant, assignment_id = assignment.participant, assignment.pk
    _check_open(participant)
    _check_value(item, value or "", explanation or "")
    return answers_upsert(
        participant=participant, assignment_id=assignment_id,
        answers=[(item, value or "", explanation or "")],
        set_value=value is not None, set_explanation=explanation is not None,
    )  # fmt: skip


PAGE_TIME_SHOWN = """
INSERT INTO surveys_pagetime (participant_id, page, assignment_id, shown_at)
VALUES (%s, %s, %s, %s)
ON CONFLICT DO NOTHING
"""


def page_time_shown(
    *, participant: Participant, page: str, assignment: Assignment | None = None
) -> None:
    """When the page was first shown (a reload keeps the first time). One statement, with no
    transaction around it: this runs on every page a participant loads."""
    with connection.cursor() as cursor:
        cursor.execute(
            PAGE_TIME_SHOWN,
            [participant.pk, page, assignment.pk if assignment else None, timezone.now()],
        )


def page_time_submitted(
    *, participant: Participant, page: str, assignment: Assignment | None = None
) -> None:
    now = timezone.now()
    updated = PageTime.objects.filter(
        participant=participant, page=page, assignment=assignment
    ).update(submitted_at=now)
    if not updated:
        PageTime.objects.bulk_create(
            [
                PageTime(
                    participant=participant,
                    page=page,
                    assignment=assignment,
                    shown_at=now,
                    submitted_at=now,
                )
            ],
            ignore_conflicts=True,
        )


def assignment_submit(
    *, assignment: Assignment, answers: dict[str, tuple[str, str]], items
) -> Assignment:
    """Save a scenario page's answers (all required ones given, checked by the caller's form)."""
    participant = assignment.participant
    _check_open(participant)
    rows = []
    for item in items:
        value, explanation = answers[item.code]
        _check_value(item, value, explanation)
        rows.append((item, value, explanation))
    with transaction.atomic():
        if rows:
            answers_upsert(participant=participant, assignment_id=assignment.pk, answers=rows)
        assignment.answered_at = timezone.now()
        assignment.save(update_fields=["answered_at"])
        page_time_submitted(participant=participant, page=Page.SCENARIO, assignment=assignment)
    return assignment


def participant_instructions_read(*, participant: Participant) -> None:
    page_time_submitted(participant=participant, page=Page.INSTRUCTIONS)


def _attention_failed(participant: Participant) -> bool:
    checks = SurveyItem.objects.filter(study=participant.study_id, attention_check=True)
    expected = {item.pk: item.expected_value for item in checks}
    if not expected:
        return False
    given = dict(
        Answer.objects.filter(
            assignment__participant=participant, item_id__in=expected
        ).values_list("item_id", "value")
    )
    return any(given.get(pk) != value for pk, value in expected.items() if pk in given)


def participant_finish(*, participant: Participant, demographics: dict[str, str]) -> Participant:
    """Demographics given: complete the participant's ratings and give them their code."""
    with transaction.atomic():
        # The participant's row only: a lock on the study's row too (FOR UPDATE locks every
        # joined table unless told) would hold up every arrival (their rows' foreign key
        # checks share-lock it) and every other finish until this commits.
        participant = (
            Participant.objects.select_for_update(of=("self",))
            .select_related("study")
            .get(pk=participant.pk)
        )
        if participant.status == ParticipantStatus.FINISHED:
            return participant
        _check_open(participant)
        assignments = list(participant.assignments.select_related("study_scenario__scenario"))
        unanswered = [a.position for a in assignments if a.answered_at is None]
        if unanswered:
            raise SurveyError(f"Scenario {unanswered[0]} is not finished yet.")
        now = timezone.now()
        # Lock in id order (reservations take rows with SKIP LOCKED and never wait, so
        # waiting here cannot deadlock with them).
        ids = sorted(a.study_scenario_id for a in assignments)
        list(
            StudyScenario.objects.select_for_update().filter(pk__in=ids).order_by("pk").values("pk")
        )
        fill = _fill(ids, now)
        k = participant.study.ratings_per_scenario
        for a in assignments:
            live = a.status == AssignmentStatus.RESERVED and a.reserved_until > now
            # A reservation that ran out still counts if its scenario has room left now;
            # otherwise its answers are kept but not counted towards k.
            if live or (
                a.status in (AssignmentStatus.RESERVED, AssignmentStatus.EXPIRED)
                and fill[a.study_scenario_id] < k
            ):
                if not live:
                    fill[a.study_scenario_id] += 1
                a.status, a.completed_at = AssignmentStatus.COMPLETED, now
                a.save(update_fields=["status", "completed_at"])
            elif a.status == AssignmentStatus.RESERVED:
                a.status = AssignmentStatus.EXPIRED
                a.save(update_fields=["status"])
        for field, value in demographics.items():
            setattr(participant, field, value)
        participant.attention_failed = _attention_failed(participant)
        study = participant.study
        participant.completion_code = (
            study.code_failed_attention if participant.attention_failed else study.code_completed
        )
        participant.status, participant.finished_at = ParticipantStatus.FINISHED, now
        participant.save(
            update_fields=["age", "gender", "education", "income", "attention_failed",
                           "completion_code", "status", "finished_at"]
        )  # fmt: skip
        page_time_submitted(participant=participant, page=Page.DEMOGRAPHICS)
    return participant


# --- review -------------------------------------------------------------------------------

FREED_ON_RETURN = (AssignmentStatus.RESERVED, AssignmentStatus.COMPLETED, AssignmentStatus.EXPIRED)


@transaction.atomic
def participant_mark_returned(*, participant: Participant) -> Participant:
    """The person returned their submission on Prolific: their scenarios reopen."""
    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if participant.review_status == ReviewStatus.APPROVED:
        raise SurveyError("An approved submission cannot be marked returned.")
    participant.assignments.filter(status__in=FREED_ON_RETURN).update(
        status=AssignmentStatus.RELEASED
    )
    participant.status = ParticipantStatus.RETURNED
    participant.save(update_fields=["status"])
    return participant


def _reviewable(participant: Participant) -> None:
    if participant.status != ParticipantStatus.FINISHED:
        raise SurveyError("Only finished submissions can be reviewed.")
    if participant.review_status != ReviewStatus.PENDING:
        raise SurveyError(
            f"This submission is already {participant.get_review_status_display().lower()}."
        )


def participant_approve(
    *, participant: Participant, user, client: prolific_api.ProlificClient | None = None
) -> Participant:
    _reviewable(participant)
    if client is not None:
        try:
            client.approve(submission_id=participant.prolific_session_id)
        except prolific_api.ProlificError as exc:
            raise SurveyError(f"Prolific did not accept the approval: {exc}") from exc
    with transaction.atomic():
        updated = Participant.objects.filter(
            pk=participant.pk, review_status=ReviewStatus.PENDING
        ).update(review_status=ReviewStatus.APPROVED, reviewed_at=timezone.now(), reviewed_by=user)
        if not updated:
            raise SurveyError("Someone else reviewed this submission a moment ago.")
    participant.refresh_from_db()
    return participant


def participant_reject(
    *, participant: Participant, user, category: str, message: str,
    client: prolific_api.ProlificClient | None = None,
) -> Participant:  # fmt: skip
    """Reject a submission: its ratings leave the analysis and their scenarios reopen."""
    _reviewable(participant)
    if category not in RejectionCategory.values:
        raise SurveyError("Choose one of Prolific's rejection categories.")
    message = message.strip()
    if len(message) < MIN_REJECTION_MESSAGE:
        raise SurveyError(
            f"Prolific requires a message of at least {MIN_REJECTION_MESSAGE} characters "
            f"explaining the rejection ({len(message)} so far)."
        )
    if client is not None:
        try:
            client.reject(
                submission_id=participant.prolific_session_id, category=category, message=message
            )
        except prolific_api.ProlificError as exc:
            raise SurveyError(f"Prolific did not accept the rejection: {exc}") from exc
    with transaction.atomic():
        pending = Participant.objects.filter(pk=participant.pk, review_status=ReviewStatus.PENDING)
        updated = pending.update(
            review_status=ReviewStatus.REJECTED, rejection_category=category,
            rejection_message=message, reviewed_at=timezone.now(), reviewed_by=user,
        )  # fmt: skip
        if not updated:
            raise SurveyError("Someone else reviewed this submission a moment ago.")
        participant.assignments.exclude(status=AssignmentStatus.RELEASED).update(
            status=AssignmentStatus.REJECTED
        )
    participant.refresh_from_db()
    return participant


RETURNED_STATUSES = {"RETURNED", "TIMED-OUT"}


def study_sync_returned(*, study: Study, client: prolific_api.ProlificClient) -> int:
    """Mark participants whose Prolific submissions were returned or timed out; their
    scenarios reopen. Returns how many were marked."""
    if not study.prolific_study_id:
        raise SurveyError("Set the study's Prolific study id first.")
    try:
        submissions = client.submissions(study_id=study.prolific_study_id)
    except prolific_api.ProlificError as exc:
        raise SurveyError(f"Could not read the study's submissions from Prolific: {exc}") from exc
    returned = {s.session_id for s in submissions if s.status in RETURNED_STATUSES}
    marked = 0
    for participant in study.participants.filter(prolific_session_id__in=returned).exclude(
        status=ParticipantStatus.RETURNED
    ):
        participant_mark_returned(participant=participant)
        marked += 1
    return marked
