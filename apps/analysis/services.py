"""The analysis app's writes: asking for a survey report's bootstrap intervals, and
computing them (in a worker: workers/analysis.py)."""

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.llm import dispatch
from apps.surveys.models import Study

from .models import RESAMPLES, SEED, BootstrapStatus, SurveyBootstrap
from .survey_data import survey_data, survey_fingerprint

log = logging.getLogger(__name__)
PROGRESS_EVERY = 5  # statistics between two writes of the progress


def survey_bootstrap_request(*, study: Study, user=None) -> tuple[SurveyBootstrap, bool]:
    """(the bootstrap of the study's data as it is now, whether this call started it): an
    existing one is kept (done, or under way); a failed one is asked again. A worker
    computes it, started once the transaction commits."""
    fingerprint = survey_fingerprint(study=study)
    key = {"study": study, "fingerprint": fingerprint, "resamples": RESAMPLES, "seed": SEED}
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
    # Here, not with the module: the pages import it to ask for intervals, and only the
    # worker that computes them needs numpy, pandas and scipy.
    from .survey import survey_intervals

    claimed = SurveyBootstrap.objects.filter(
        pk=bootstrap_id, status__in=[BootstrapStatus.QUEUED, BootstrapStatus.RUNNING]
    ).update(status=BootstrapStatus.RUNNING, started_at=timezone.now(), done=0)
    if not claimed:
        return None
    bootstrap = SurveyBootstrap.objects.select_related("study").get(pk=bootstrap_id)
    study = bootstrap.study
    data = survey_data(study=study)
    if survey_fingerprint(study=study) != bootstrap.fingerprint:
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
        intervals = survey_intervals(
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


def _json_safe(intervals: dict) -> dict:
    """NaN (an interval with no defined resample) as null: JSON has no NaN."""
    return {
        key: [None if isinstance(v, float) and v != v else v for v in values]
        for key, values in intervals.items()
    }
