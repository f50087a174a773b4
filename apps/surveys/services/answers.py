"""What a participant's pages record: answers as they are given, when each page was shown
and submitted, a scenario page submitted, and the survey finished.

Two in three of a participant's requests save an answer, so each save is one statement
written by hand (INSERT ... ON CONFLICT), not by the ORM: their column lists must name every
NOT NULL column of `Answer` and `PageTime` that has no database default
(tests/surveys/test_hand_written_sql.py holds them to the models).
"""

from django.db import connection, transaction
from django.utils import timezone

from ..errors import SurveyError
from ..models import (
    Answer,
    Assignment,
    Page,
    PageTime,
    Participant,
    ParticipantStatus,
    SurveyItem,
)
from .reservation import assignments_complete

MAX_EXPLANATION = 2000


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


def _answers_upsert(
    participant: Participant, assignment_id: int, answers: list[tuple[SurveyItem, str, str]],
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
# before it (answer_save and binding.participant_required): the browser key of the participant
# named by the signed cookie, their study and its address, that they are still taking part,
# that the assignment is theirs, and that the study's items are the version the item was
# checked against.
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


def answer_save_if_bound(
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
    *, participant: Participant, assignment_id: int, item: SurveyItem, value: str | None,
    explanation: str | None,
) -> bool:  # fmt: skip
    """Save one answer as it is given (None: leave that part as it was). One row per
    assignment and item whatever the number of tabs, refreshes or repeats: the last answer
    given wins, in a single statement (INSERT ... ON CONFLICT), so no race can add a row.

    False, and nothing written, unless the assignment is the participant's. SurveyError: the
    participant has submitted the survey, or the answer is not acceptable."""
    _check_open(participant)
    _check_value(item, value or "", explanation or "")
    return _answers_upsert(
        participant, assignment_id, [(item, value or "", explanation or "")],
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
            _answers_upsert(participant, assignment.pk, rows)
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
            update_fields=["age", "gender", "education", "income", "attention_failed",
                           "completion_code", "status", "finished_at"]
        )  # fmt: skip
        page_time_submitted(participant=participant, page=Page.DEMOGRAPHICS)
    return participant
