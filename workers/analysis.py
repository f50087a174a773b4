"""Analysis tasks: a survey report's bootstrap intervals (seconds of numpy), on the default
queue. The task claims its row and computes from a fixed seed, so a redelivered or repeated
task is harmless. apps.analysis is imported inside the task: it brings pandas and scipy,
which the other tasks' worker processes need not carry."""

from celery import shared_task

from .delivery import CappedRedeliveryTask


@shared_task(name="workers.analysis.survey_bootstrap", base=CappedRedeliveryTask)
def survey_bootstrap(bootstrap_id: int) -> str:
    from apps.analysis import services

    bootstrap = services.survey_bootstrap_compute(bootstrap_id=bootstrap_id)
    return "skipped" if bootstrap is None else bootstrap.status


survey_bootstrap_task = survey_bootstrap
