"""A survey report's bootstrap intervals (workers/analysis.py) computed by a real Celery
worker: the row ends done with an interval for every alpha and rho of the report, a repeated
task computes nothing again, and a task for data that changed since it was asked for fails
with its reason. Waits are for a state to be reached, never a bound on how long it takes."""

import random
import uuid

import pytest

from apps.analysis.models import BootstrapStatus, SurveyBootstrap
from apps.analysis.services import survey_bootstrap_request
from apps.analysis.survey import RESAMPLES, SEED, survey_intervals, survey_statistics
from apps.analysis.survey_data import survey_data
from apps.ops.models import Heartbeat
from apps.surveys.models import SurveyItem
from config.celery import TASK_MODULES, app
from tests.analysis.builders import person, proxy, rate
from tests.conftest import wait_until
from tests.factories import offline_model
from workers.analysis import survey_bootstrap_task
from workers.ops import heartbeat_task

SCENARIOS = 6
ENDED = {BootstrapStatus.DONE, BootstrapStatus.FAILED}
CHANGED = "The study's data changed before the intervals were computed: ask again."


def answers(rng: random.Random, items: list[SurveyItem], leaning: int = 0) -> dict:
    """An answer to every item of every scenario: each scenario has a level of its own, each
    rater strays from it by a point now and then, and `leaning` moves them all."""
    out = {}
    for scenario in range(SCENARIOS):
        level = 1 + scenario % 5
        values = {}
        for item in items:
            value = min(5, max(1, level + leaning + rng.choice((-1, 0, 0, 1))))
            values[item.code] = (
                ("yes" if value >= 3 else "no") if item.kind == "yes_no" else (str(value))
            )
        out[scenario] = values
    return out


def study_answered(make_study):
    """Three people and two proxy models of two runs each, every scenario answered."""
    study = make_study(live=False, count=SCENARIOS)
    items = list(SurveyItem.objects.filter(study=study, attention_check=False))
    rng = random.Random(5)
    for number in range(1, 4):
        rate(person(study, number), answers(rng, items))
    for leaning, name in enumerate(("offline-terse", "offline-thorough")):
        model = offline_model("http://127.0.0.1:9/v1", name=name)
        for run_index in (1, 2):
            rate(proxy(study, model, run_index), answers(rng, items, leaning))
    return study


def ended(bootstrap) -> SurveyBootstrap:
    found = wait_until(
        lambda: SurveyBootstrap.objects.filter(pk=bootstrap.pk, status__in=ENDED).first(),
        timeout=120,
        interval=0.2,
    )
    assert found is not None, SurveyBootstrap.objects.get(pk=bootstrap.pk).status
    return found


def worker_idle(queue: str) -> None:
    """Wait until the worker has run everything queued before now: a solo worker takes its
    queue's messages one at a time, in order, so once a heartbeat queued last is recorded,
    every task before it has run."""
    token = uuid.uuid4().hex
    heartbeat_task.apply_async(args=[token], queue=queue)
    assert wait_until(lambda: Heartbeat.objects.filter(token=token).exists(), timeout=60)


@pytest.mark.worker
def test_a_worker_computes_an_interval_for_every_statistic_once(route_to_worker, make_study):
    queue = route_to_worker(survey_bootstrap_task)
    study = study_answered(make_study)
    bootstrap, to_queue = survey_bootstrap_request(study=study)
    assert to_queue

    survey_bootstrap_task.delay(bootstrap.pk)

    done = ended(bootstrap)
    assert (done.status, done.error) == (BootstrapStatus.DONE, "")
    data = survey_data(study=study)
    keys = {spec.key for spec in survey_statistics(data)}
    assert {key.split(":")[0] for key in keys} == {"alpha", "rho"}
    assert {f"alpha:{proxy_.key}:pooled" for proxy_ in data.proxies} <= keys  # both proxies
    assert set(done.intervals) == keys
    assert done.done == done.total == len(keys)
    assert done.started_at is not None and done.finished_at is not None
    for key, (low, high, used, undefined) in done.intervals.items():
        assert used + undefined == RESAMPLES, key
        assert low is None or low <= high, key
    # The numbers are the report's own, from the row's seed.
    expected = survey_intervals(data, resamples=RESAMPLES, seed=SEED)
    assert done.intervals.keys() == expected.keys()
    for key, values in expected.items():
        assert done.intervals[key] == pytest.approx(values, nan_ok=True), key

    # Queued again (a redelivery, a second click): the done row is not computed again.
    survey_bootstrap_task.delay(bootstrap.pk)
    worker_idle(queue)
    again = SurveyBootstrap.objects.get(pk=bootstrap.pk)
    assert (again.status, again.started_at, again.finished_at, again.intervals) == (
        BootstrapStatus.DONE,
        done.started_at,
        done.finished_at,
        done.intervals,
    )
    assert survey_bootstrap_task.run(bootstrap.pk) == "skipped"
    assert survey_bootstrap_request(study=study) == (again, False)


@pytest.mark.worker
def test_a_bootstrap_of_data_that_changed_fails_with_its_reason(route_to_worker, make_study):
    route_to_worker(survey_bootstrap_task)
    study = study_answered(make_study)
    bootstrap, _to_queue = survey_bootstrap_request(study=study)
    items = list(SurveyItem.objects.filter(study=study, attention_check=False))
    rate(person(study, 9), answers(random.Random(1), items))  # answered after it was asked

    survey_bootstrap_task.delay(bootstrap.pk)

    failed = ended(bootstrap)
    assert (failed.status, failed.error) == (BootstrapStatus.FAILED, CHANGED)
    assert failed.intervals == {} and failed.finished_at is not None
    # Asked again, the data as it is now is computed.
    fresh, to_queue = survey_bootstrap_request(study=study)
    assert to_queue and fresh.pk != bootstrap.pk
    survey_bootstrap_task.delay(fresh.pk)
    assert ended(fresh).status == BootstrapStatus.DONE


def test_the_bootstrap_task_is_imported_by_workers_and_routed_to_the_default_queue():
    assert "workers.analysis" in TASK_MODULES
    app.loader.import_default_modules()
    assert survey_bootstrap_task.name in app.tasks
    route = app.amqp.router.route({}, survey_bootstrap_task.name, (), {}, None)
    assert route["queue"].name == app.conf.task_default_queue == "default"
