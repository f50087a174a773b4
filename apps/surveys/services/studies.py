"""A study's setup and life: created over scenarios, edited, live, paused, closed; its items."""

from django.db import transaction

from ..errors import SurveyError
from ..models import Study, StudyKind, StudyScenario, StudyStatus, SurveyItem, UnitKind
from ..selectors import study_items_frozen

STUDY_FIELDS = (
    "name",
    "prolific_study_id",
    "scenarios_per_participant",
    "ratings_per_scenario",
    "reservation_minutes",
    "consent_text",
    "instructions_text",
    "example_text",
    "code_completed",
    "code_no_consent",
    "code_failed_attention",
    "code_full",
)


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
        if study.kind != StudyKind.SCENARIOS:
            raise SurveyError(
                "A study of answers has no scenarios to choose: its answers were drawn from a "
                "benchmark run."
            )
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
        waiting = study.study_scenarios.filter(kind=UnitKind.SCENARIO, response__isnull=True)
        waiting = waiting.count()
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
