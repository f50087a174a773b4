"""The analysis app's writes: asking for a report's bootstrap intervals (a study's survey
report, or an answer study's report), and computing them (in a worker: workers/analysis.py).
Both reports keep theirs as `SurveyBootstrap` rows, told apart by `report`."""

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.llm import dispatch
from apps.surveys.models import Study

from .answer_study_data import answer_study_data, answer_study_fingerprint
from .models import RESAMPLES, SEED, BootstrapReport, BootstrapStatus, SurveyBootstrap
from .survey_data import survey_data, survey_fingerprint

log = logging.getLogger(__name__)
PROGRESS_EVERY = 5  # statistics between two writes of the progress
# Each report's data and fingerprint, read by the request (the fingerprint) and the worker.
FINGERPRINTS = {
    BootstrapReport.SURVEY: survey_fingerprint,
    BootstrapReport.ANSWERS: answer_study_fingerprint,
}


def survey_bootstrap_request(*, study: Study, user=None) -> tuple[SurveyBootstrap, bool]:
    """(the bootstrap of the study's survey report on its data as it is now, whether this
    call started it)."""
    return _bootstrap_request(study=study, report=BootstrapReport.SURVEY, user=user)


def answer_study_bootstrap_request(*, study: Study, user=None) -> tuple[SurveyBootstrap, bool]:
    """(the bootstrap of the answer study's report on its data as it is now, whether this
    call started it)."""
    return _bootstrap_request(study=study, report=BootstrapReport.ANSWERS, user=user)


def _bootstrap_request(*, study: Study, report: str, user) -> tuple[SurveyBootstrap, bool]:
    """An existing bootstrap is kept (done, or under way); a failed one is asked again. A
    worker computes it, started once the transaction commits."""
    fingerprint = FINGERPRINTS[report](study=study)
    key = {
        "study": study,
        "report": report,
        "fingerprint": fingerprint,
        "resamples": RESAMPLES,
        "seed": SEED,
    }
    try:
        with transaction.atomic():
            bootstrap, created = SurveyBootstrap.objects.get_or_create(
                **key, defaults={"requested_by": user}
            )
    except IntegrityError:  # a concurrent request made it first
        return SurveyBootstrap.objects.get(**key), False
    if not created and bootstrap.status != BootstrapStatus.FAILED:
        return bootstrap, False
    if not created:
        SurveyBootstrap.objects.filter(pk=bootstrap.pk).update(
            status=BootstrapStatus.QUEUED, error="", done=0, requested_by=user
        )
        bootstrap.refresh_from_db()
    dispatch.start("analysis.survey_bootstrap", bootstrap.pk)
    return bootstrap, True


def survey_bootstrap_compute(*, bootstrap_id: int) -> SurveyBootstrap | None:
    """Compute the intervals and store them in one write. A repeat (a redelivered task, or a
    worker that died half way) computes the same numbers again from the same seed, so running
    twice is harmless; a finished one is not computed again."""
    claimed = SurveyBootstrap.objects.filter(
        pk=bootstrap_id, status__in=[BootstrapStatus.QUEUED, BootstrapStatus.RUNNING]
    ).update(status=BootstrapStatus.RUNNING, started_at=timezone.now(), done=0)
    if not claimed:
        return None
    bootstrap = SurveyBootstrap.objects.select_related("study").get(pk=bootstrap_id)
    study = bootstrap.study
    data, intervals_compute = _bootstrap_inputs(bootstrap)
    if FINGERPRINTS[bootstrap.report](study=study) != bootstrap.fingerprint:
        SurveyBootstrap.objects.filter(pk=bootstrap.pk).update(
            status=BootstrapStatus.FAILED,
            finished_at=timezone.now(),
            error="The study's data changed before the intervals were computed: ask again.",
        )
        return None

    def progress(done: int, total: int) -> None:
        if done == total or done % PROGRESS_EVERY == 0:
            SurveyBootstrap.objects.filter(pk=bootstrap.pk).update(done=done, total=total)

    try:
        intervals = intervals_compute(
            data, resamples=bootstrap.resamples, seed=bootstrap.seed, progress=progress
        )
    except Exception as exc:
        log.exception("bootstrap %s failed", bootstrap.pk)
        SurveyBootstrap.objects.filter(pk=bootstrap.pk).update(
            status=BootstrapStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now(),
        )
        return None
    SurveyBootstrap.objects.filter(pk=bootstrap.pk).update(
        status=BootstrapStatus.DONE,
        intervals=_json_safe(intervals),
        done=len(intervals),
        total=len(intervals),
        finished_at=timezone.now(),
    )
    bootstrap.refresh_from_db()
    return bootstrap


def _bootstrap_inputs(bootstrap: SurveyBootstrap):
    """(the report's data, the function that computes its intervals)."""
    # Here, not with the module: the pages import it to ask for intervals, and only the
    # worker that computes them needs numpy, pandas and scipy.
    if bootstrap.report == BootstrapReport.ANSWERS:
        from .answer_study import answer_study_intervals

        return answer_study_data(study=bootstrap.study), answer_study_intervals
    from .survey import survey_intervals

    return survey_data(study=bootstrap.study), survey_intervals


def _json_safe(intervals: dict) -> dict:
    """NaN (an interval with no defined resample) as null: JSON has no NaN."""
    return {
        key: [None if isinstance(v, float) and v != v else v for v in values]
        for key, values in intervals.items()
    }
