"""Studies with answers, stored as the surveys app stores them: people's completed
assignments and proxies' own, each with an answer per item."""

import datetime as dt

from django.utils import timezone

from apps.llm.models import ModelConfig
from apps.surveys.models import (
    Answer,
    Assignment,
    AssignmentStatus,
    Participant,
    ParticipantKind,
    ParticipantStatus,
    Study,
    SurveyItem,
)


def person(study: Study, number: int, **fields) -> Participant:
    values = {"status": ParticipantStatus.FINISHED, "age": "25-34", "gender": "woman"}
    return Participant.objects.create(
        study=study,
        prolific_pid=f"{number:024x}",
        kind=ParticipantKind.HUMAN,
        **(values | fields),
    )


def proxy(study: Study, model: ModelConfig, run_index: int) -> Participant:
    return Participant.objects.create(
        study=study,
        kind=ParticipantKind.PROXY,
        model=model,
        run_index=run_index,
        status=ParticipantStatus.FINISHED,
    )


def rate(
    participant: Participant, answers: dict[int, dict[str, str]], explanation="Because."
) -> None:
    """`answers`: scenario position (0-based, in name order) -> item code -> stored value."""
    study = participant.study
    scenarios = list(study.study_scenarios.order_by("scenario__name"))
    items = {i.code: i for i in SurveyItem.objects.filter(study=study)}
    now = timezone.now()
    status = (
        AssignmentStatus.PROXY
        if participant.kind == ParticipantKind.PROXY
        else AssignmentStatus.COMPLETED
    )
    for position, (index, values) in enumerate(sorted(answers.items()), start=1):
        assignment = Assignment.objects.create(
            participant=participant,
            study_scenario=scenarios[index],
            position=position,
            status=status,
            reserved_at=now,
            reserved_until=now + dt.timedelta(hours=1),
            answered_at=now,
            completed_at=now,
        )
        Answer.objects.bulk_create(
            Answer(
                assignment=assignment,
                item=items[code],
                value=value,
                explanation=f"{explanation} ({code})",
                first_saved_at=now,
                saved_at=now,
            )
            for code, value in values.items()
        )
