"""What a participant's pages record: answers as they are given, when each page was shown
and submitted, a scenario page submitted, and the survey finished.

Two in three of a participant's requests save an answer, so each save is one statement
written by hand (INSERT ... ON CONFLICT), not by the ORM: their column lists must name every
NOT NULL column of `Answer` and `PageTime` that has no database default
(tests/surveys/test_hand_written_sql.py holds them to the models).
"""

import datetime as dt

from django.db import connection, transaction
from django.utils import timezone

from .. import duration, quality, selectors
from ..errors import AnswerInvalid, SurveyError
from ..models import (
    MAX_EXPLANATION,
    Answer,
    Assignment,
    AssignmentStatus,
    Page,
    PageTime,
    Participant,
    ParticipantStatus,
    Study,
    StudyKind,
    SurveyItem,
)
from .reservation import assignments_complete


def _check_open(participant: Participant) -> None:
    if participant.status != ParticipantStatus.ACTIVE:
        raise SurveyError("This survey has been submitted; answers can no longer be changed.")


def _check_value(item: SurveyItem, value: str, explanation: str) -> None:
    if "\x00" in value or "\x00" in explanation:
        # PostgreSQL cannot store NUL in text; no keyboard types one.
        raise AnswerInvalid(f"{item.code}: the answer contains a character that cannot be saved.")
    if value and value not in {v for v, _label in item.choices}:
        raise AnswerInvalid(f"{item.code}: {value!r} is not one of the answers.")
    if len(explanation) > MAX_EXPLANATION:
        raise AnswerInvalid(
            f"{item.code}: explanations are limited to {MAX_EXPLANATION} characters."
        )


NOTHING_TO_SAVE = "an empty answer is not saved; an answer you gave before is kept."


def _parts_to_set(
    item: SurveyItem, value: str | None, explanation: str | None
) -> tuple[bool, bool]:
    """(set the value, set the explanation) for an autosave. An empty value never replaces
    one given, nor does a blank explanation where one is required: the page was submitted
    with them, and the completion code is given for them (participant_finish checks again).
    SurveyError when the save would change nothing at all."""
    set_value = bool(value)
    set_explanation = explanation is not None and bool(
        explanation.strip() or not item.explanation_required
    )
    if not set_value and not set_explanation:
        raise SurveyError(NOTHING_TO_SAVE)
    return set_value, set_explanation


# A repeat (another tab, a refresh, a double click) updates the row the unique constraint
# names: one row per assignment and item whatever happens, the last answer given winning.
ANSWER_ON_CONFLICT = """
ON CONFLICT (assignment_id, item_id) DO UPDATE
   SET value = CASE WHEN %s THEN EXCLUDED.value ELSE surveys_answer.value END,
       explanation = CASE WHEN %s THEN EXCLUDED.explanation ELSE surveys_answer.explanation END,
       saved_at = EXCLUDED.saved_at, save_count = surveys_answer.save_count + 1
"""
# Written only if the assignment is the participant's and each item is asked of its kind of
# unit (an answer's items on an answer's page, a pair's on a pair's): no separate read.
ANSWER_UPSERT = (
    """
INSERT INTO surveys_answer
       (assignment_id, item_id, value, explanation, first_saved_at, saved_at, save_count)
SELECT a.id, given.item_id, given.value, given.explanation, %s, %s, 1
  FROM surveys_assignment a
  JOIN surveys_studyscenario u ON u.id = a.study_scenario_id,
       (VALUES {rows}) AS given (item_id, value, explanation, unit_kind)
 WHERE a.id = %s AND a.participant_id = %s AND u.kind = given.unit_kind
"""
    + ANSWER_ON_CONFLICT
)
ANSWER_ROW = "(%s::bigint, %s::varchar, %s::text, %s::varchar)"


def _answers_upsert(
    participant: Participant,
    assignment_id: int,
    answers: list[tuple[SurveyItem, str, str]],
    set_value: bool = True,
    set_explanation: bool = True,
) -> bool:
    """Save `answers` ((item, value, explanation), checked by the caller) on the participant's
    assignment, in one statement; False, and nothing written, if the assignment is not theirs
    (or no item is asked of its unit's kind).
    `set_value` / `set_explanation` False: an existing answer keeps that part."""
    now = timezone.now()
    params: list = [now, now]
    for item, value, explanation in answers:
        params += [item.pk, value, explanation, item.unit_kind]
    params += [assignment_id, participant.pk, set_value, set_explanation]
    sql = ANSWER_UPSERT.format(rows=", ".join([ANSWER_ROW] * len(answers)))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount > 0


# The same write, checking in the same statement everything a participant's request must show
# before it (answer_save and binding.participant_required): the browser key of the participant
# named by the signed cookie, their study and its address, that they are still taking part,
# that the assignment is theirs, that its unit is of the kind the item is asked of, and that
# the study's items are the version the item was checked against.
ANSWER_UPSERT_BOUND = (
    """
INSERT INTO surveys_answer
       (assignment_id, item_id, value, explanation, first_saved_at, saved_at, save_count)
SELECT a.id, %s, %s, %s, %s, %s, 1
  FROM surveys_assignment a
  JOIN surveys_participant p ON p.id = a.participant_id
  JOIN surveys_study s ON s.id = p.study_id
  JOIN surveys_studyscenario u ON u.id = a.study_scenario_id
 WHERE a.id = %s AND p.id = %s AND p.browser_key = %s AND p.status = %s
   AND s.id = %s AND s.slug = %s AND s.items_version = %s AND u.kind = %s
"""
    + ANSWER_ON_CONFLICT
)


def answer_save_if_bound(
    *,
    participant_id: int,
    browser_key: str,
    study_id: int,
    slug: str,
    items_version: int,
    assignment_id: int,
    item: SurveyItem,
    value: str | None,
    explanation: str | None,
) -> bool:
    """answer_save for a request that has not read the participant: one statement that writes
    only if every check holds (see ANSWER_UPSERT_BOUND). False: nothing written, and the
    caller finds out why the long way. SurveyError: the answer itself is not acceptable."""
    _check_value(item, value or "", explanation or "")
    set_value, set_explanation = _parts_to_set(item, value, explanation)
    now = timezone.now()
    params = [
        item.pk,
        value or "",
        explanation or "",
        now,
        now,
        assignment_id,
        participant_id,
        browser_key,
        ParticipantStatus.ACTIVE,
        study_id,
        slug,
        items_version,
        item.unit_kind,
        set_value,
        set_explanation,
    ]
    with connection.cursor() as cursor:
        cursor.execute(ANSWER_UPSERT_BOUND, params)
        return cursor.rowcount > 0


def answer_save(
    *,
    participant: Participant,
    assignment_id: int,
    item: SurveyItem,
    value: str | None,
    explanation: str | None,
) -> bool:
    """Save one answer as it is given (None: leave that part as it was; an empty value or a
    blank required explanation never replaces one given). One row per assignment and item
    whatever the number of tabs, refreshes or repeats: the last answer given wins, in a single
    statement (INSERT ... ON CONFLICT), so no race can add a row.

    False, and nothing written, unless the assignment is the participant's and its unit is of
    the kind the item is asked of. SurveyError: the
    participant has submitted the survey, or there is nothing to save; AnswerInvalid: the
    answer is not acceptable."""
    _check_open(participant)
    _check_value(item, value or "", explanation or "")
    set_value, set_explanation = _parts_to_set(item, value, explanation)
    return _answers_upsert(
        participant,
        assignment_id,
        [(item, value or "", explanation or "")],
        set_value=set_value,
        set_explanation=set_explanation,
    )


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
            _answers_upsert(participant, assignment.pk, rows)
        assignment.answered_at = timezone.now()
        assignment.save(update_fields=["answered_at"])
        page_time_submitted(participant=participant, page=Page.SCENARIO, assignment=assignment)
    return assignment


def participant_instructions_read(*, participant: Participant) -> None:
    page_time_submitted(participant=participant, page=Page.INSTRUCTIONS)


def _page(study: Study) -> str:
    """What participants call a unit's page (templatetags/surveys.py page_noun)."""
    return "Page" if study.kind == StudyKind.ANSWERS else "Scenario"


def _attention_failed(participant: Participant) -> bool:
    """Failed as many attention checks as Prolific's rules need before a rejection: two in a
    study of 5 minutes or more (quality.py). Fewer are shown on the review page only."""
    items = selectors.study_items(study=participant.study).items
    expected = [item.pk for item in items if item.attention_check]
    if not expected:
        return False
    given = dict(
        Answer.objects.filter(
            assignment__participant=participant, item_id__in=expected
        ).values_list("item_id", "value")
    )
    return _attention_failed_given(study=participant.study, items=items, given=given)


def _attention_failed_given(*, study, items: list[SurveyItem], given: dict[int, str]) -> bool:
    """_attention_failed, from the study's items and the values given (item id -> value)."""
    expected = {item.pk: item.expected_value for item in items if item.attention_check}
    failures = sum(1 for pk, value in expected.items() if pk in given and given[pk] != value)
    minutes = duration.study_estimate(study=study, items=items).minutes
    return failures >= quality.attention_failures_needed(minutes=minutes)


def _missing_answers(study, rows: list[tuple]) -> tuple[list[tuple[int, int]], dict[int, str]]:
    """([(assignment id, position)] of the pages with a required answer missing, the values
    given by item id), from `rows`: (assignment id, position, unit kind, item id, value,
    explanation), one per answer (item None: a page with no answer). Which items are
    required is what the page's form requires: a value for every item on it, and an
    explanation where one is."""
    answers: dict[int, dict[int, tuple[str, str]]] = {}
    positions: dict[int, int] = {}
    kinds: dict[int, str] = {}
    given: dict[int, str] = {}
    for assignment_id, position, kind, item_id, value, explanation in rows:
        positions[assignment_id], kinds[position] = position, kind
        if item_id is not None:
            answers.setdefault(assignment_id, {})[item_id] = (value, explanation)
            given[item_id] = value
    missing = []
    for assignment_id, position in sorted(positions.items(), key=lambda p: p[1]):
        page = answers.get(assignment_id, {})
        for item in selectors.items_for_page(study=study, position=position, kinds=kinds):
            value, explanation = page.get(item.pk, ("", ""))
            if not value or (item.explanation_required and not explanation.strip()):
                missing.append((assignment_id, position))
                break
    return missing, given


# Finishing, in one statement: the participant, if still taking part and every one of their
# reservations is live until `safe_until` (so that no expiry can free one meanwhile, and
# completing them adds nothing to any scenario's count: a live reservation is counted
# already); then all their assignments, completed, and the demographics page's time.
# Anything else (a reservation run out or about to) takes the locked path.
FINISH_IF_LIVE = """
WITH finished AS (
    UPDATE surveys_participant
       SET status = %(finished)s, finished_at = %(now)s, completion_code = %(code)s,
           attention_failed = %(failed)s, age = %(age)s, gender = %(gender)s,
           education = %(education)s, income = %(income)s
     WHERE id = %(participant)s AND status = %(active)s
       AND NOT EXISTS (
           SELECT 1 FROM surveys_assignment
            WHERE participant_id = %(participant)s
              AND NOT (status = %(reserved)s AND reserved_until > %(safe_until)s))
    RETURNING id
), completed AS (
    UPDATE surveys_assignment SET status = %(completed)s, completed_at = %(now)s
     WHERE participant_id IN (SELECT id FROM finished)
)
INSERT INTO surveys_pagetime (participant_id, page, assignment_id, shown_at, submitted_at)
SELECT id, %(page)s, NULL, %(now)s, %(now)s FROM finished
    ON CONFLICT ON CONSTRAINT page_time_once DO UPDATE SET submitted_at = EXCLUDED.submitted_at
RETURNING participant_id
"""
SAFE_MARGIN = dt.timedelta(minutes=2)


def participant_finish(*, participant: Participant, demographics: dict[str, str]) -> Participant:
    """Demographics given: complete the participant's ratings and give them their code, only
    if every required answer of every scenario is there (checked here, at the end: a page
    found with an answer missing is reopened, and SurveyError says which).

    `participant` comes with its study (participant_required loads them so). Two statements
    when every reservation is live: the answers read, and FINISH_IF_LIVE."""
    if participant.status == ParticipantStatus.FINISHED:
        return participant
    _check_open(participant)
    study = participant.study
    rows = list(
        participant.assignments.values_list(
            "id",
            "position",
            "answered_at",
            "study_scenario__kind",
            "answers__item_id",
            "answers__value",
            "answers__explanation",
        )
    )
    unanswered = sorted({position for _id, position, at, *_ in rows if at is None})
    if unanswered:
        raise SurveyError(f"{_page(study)} {unanswered[0]} is not finished yet.")
    missing, given = _missing_answers(study, [(r[0], r[1], *r[3:]) for r in rows])
    if missing:
        Assignment.objects.filter(pk__in=[pk for pk, _ in missing]).update(answered_at=None)
        raise SurveyError(
            f"{_page(study)} {missing[0][1]} has a question without an answer: please answer it."
        )
    items = selectors.study_items(study=study).items
    failed = _attention_failed_given(study=study, items=items, given=given)
    code = study.code_failed_attention if failed else study.code_completed
    now = timezone.now()
    params = {
        "finished": ParticipantStatus.FINISHED,
        "active": ParticipantStatus.ACTIVE,
        "reserved": AssignmentStatus.RESERVED,
        "completed": AssignmentStatus.COMPLETED,
        "page": Page.DEMOGRAPHICS,
        "participant": participant.pk,
        "now": now,
        "safe_until": now + SAFE_MARGIN,
        "code": code,
        "failed": failed,
        **{field: demographics[field] for field in DEMOGRAPHICS},
    }
    with connection.cursor() as cursor:
        cursor.execute(FINISH_IF_LIVE, params)
        finished = cursor.fetchone() is not None
    if not finished:  # finished meanwhile, or a reservation ran out: decided under locks
        return _participant_finish_locked(participant=participant, demographics=demographics)
    for field in DEMOGRAPHICS:
        setattr(participant, field, demographics[field])
    participant.attention_failed, participant.completion_code = failed, code
    participant.status, participant.finished_at = ParticipantStatus.FINISHED, now
    return participant


DEMOGRAPHICS = ("age", "gender", "education", "income")


def _participant_finish_locked(
    *, participant: Participant, demographics: dict[str, str]
) -> Participant:
    """participant_finish when a reservation ran out (or is about to), or a second tab got
    there first: with the participant's row locked, the counting rule decides each one."""
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
            raise SurveyError(f"{_page(participant.study)} {unanswered[0]} is not finished yet.")
        now = timezone.now()
        study = participant.study
        assignments_complete(
            assignments=assignments, ratings_per_scenario=study.ratings_per_scenario, now=now
        )
        for field, value in demographics.items():
            setattr(participant, field, value)
        participant.attention_failed = _attention_failed(participant)
        participant.completion_code = (
            study.code_failed_attention if participant.attention_failed else study.code_completed
        )
        participant.status, participant.finished_at = ParticipantStatus.FINISHED, now
        participant.save(
            update_fields=[
                "age",
                "gender",
                "education",
                "income",
                "attention_failed",
                "completion_code",
                "status",
                "finished_at",
            ]
        )
        page_time_submitted(participant=participant, page=Page.DEMOGRAPHICS)
    return participant
