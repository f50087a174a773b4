"""An adaptive model's limit history on a run page (apps/llm/limit_history.py, drawn by
templates/partials/run_progress.html): its changes between the launch and the last
completion beside its calls per second in the run, counted in a bounded number of queries."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.accounts.roles import Role
from apps.llm.limit_history import ChartPoint
from apps.llm.models import LimitChange, RunStatus
from apps.runs import selectors
from apps.runs.models import Response, ResponseStatus, SamplingRun
from apps.surveys import services as surveys
from apps.surveys.models import ProxyCall, ProxyCallStatus, ProxyRun
from apps.surveys.selectors import proxy_run_progress
from tests.factories import ModelConfigFactory, offline_model, question_make
from tests.runs.builders import HX, run_made

pytestmark = pytest.mark.django_db

NOWHERE = "http://127.0.0.1:9"  # a provider nobody calls: nothing here makes a call
CUT, GROW, START = LimitChange.Why.CUT, LimitChange.Why.GROW, LimitChange.Why.START


def adaptive(name: str = "offline-terse", **fields):
    fields = {"min_concurrent": 2, "max_concurrent": 16, **fields}
    return offline_model(NOWHERE, name=name, adapts_concurrency=True, **fields)


def launched(run: SamplingRun, at: dt.datetime) -> SamplingRun:
    SamplingRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, launched_at=at)
    run.refresh_from_db()
    return run


def changed(model, at, old, new, why, in_flight=0) -> LimitChange:
    return LimitChange.objects.create(
        model=model, at=at, old=old, new=new, why=why, in_flight=in_flight
    )


def completed(run, model, launch, *seconds) -> None:
    """One pending response of `model` done `s` seconds after `launch` for each of `seconds`."""
    pending = run.responses.filter(model=model, status=ResponseStatus.PENDING)
    for pk, s in zip(pending.values_list("pk", flat=True), seconds, strict=False):
        Response.objects.filter(pk=pk).update(
            status=ResponseStatus.DONE, completed_at=launch + dt.timedelta(seconds=s)
        )


def history(progress, model):
    return next(m for m in progress.models if m.model == model).limits


def test_the_limit_is_drawn_from_the_launch_to_the_last_completion_beside_the_calls_per_second():
    found, fixed, other = (
        adaptive(),
        offline_model(NOWHERE, name="offline-friendly"),
        adaptive("offline-verbose"),
    )
    run = run_made(models=[found, fixed], samples=3)  # 6 responses a model
    now = timezone.now()
    launch = now - dt.timedelta(seconds=100)
    launched(run, launch)
    completed(run, found, launch, 2, 7, 7, 30)  # nothing in flight: drawn up to 30 s

    def at(s):
        return launch + dt.timedelta(seconds=s)

    changed(found, at(-50), 4, 2, CUT)  # before the launch: not this run's
    changed(found, at(1), 2, 4, START, in_flight=2)
    changed(found, at(3), 4, 8, START, in_flight=4)
    changed(found, at(12), 8, 7, CUT, in_flight=8)
    changed(found, at(25), 7, 8, GROW, in_flight=7)
    changed(found, at(40), 8, 6, CUT)  # after the last completion
    changed(other, at(5), 2, 4, START)  # another model's

    progress = selectors.run_progress(run=run, now=now)

    assert history(progress, fixed) is None
    limits = history(progress, found)
    assert not limits.live and limits.ended_at == at(30) and limits.bucket_seconds == 5
    assert (limits.floor, limits.ceiling, limits.current, limits.cuts) == (2, 16, 8, 1)
    assert limits.changes_total == 4
    assert [(c.old, c.new, c.in_flight) for c in limits.changes] == [
        (2, 4, 2),
        (4, 8, 4),
        (8, 7, 8),
        (7, 8, 7),
    ]
    # Both changes of the first 5 s in one step, from 2 to 8; the cut at 12 s in the third.
    assert limits.steps == [
        ChartPoint(0, 2),
        ChartPoint(0, 8),
        ChartPoint(10, 8),
        ChartPoint(10, 7),
        ChartPoint(25, 7),
        ChartPoint(25, 8),
        ChartPoint(30, 8),
    ]
    assert limits.throughput == [
        ChartPoint(2.5, 0.2),
        ChartPoint(7.5, 0.4),
        ChartPoint(12.5, 0),
        ChartPoint(17.5, 0),
        ChartPoint(22.5, 0),
        ChartPoint(27.5, 0.2),  # the completion at the very end counts in the last bucket
    ]
    # The ceiling (16) tops the plot (y from 22 to 134), 30 s span x from 40 to 556.
    assert limits.limit_path == "M40 120V78H212V85H470V78H556"
    # Calls per second topped at 0.5/s.
    assert limits.rate_points.split()[:2] == ["83,89.2", "169,44.4"]
    assert {label.text for label in limits.labels} >= {"16", "0.5/s", "30 s"}


def test_a_last_bucket_cut_short_is_counted_with_the_one_before():
    model = adaptive()
    run = run_made(models=[model], samples=2)
    now = timezone.now()
    launch = launched(run, now - dt.timedelta(minutes=1)).launched_at
    completed(run, model, launch, 2, 26, 31, 32)  # drawn up to 32 s: 2 s past a bucket

    limits = history(selectors.run_progress(run=run, now=now), model)

    assert limits.throughput == [
        ChartPoint(2.5, 0.2),
        ChartPoint(7.5, 0),
        ChartPoint(12.5, 0),
        ChartPoint(17.5, 0),
        ChartPoint(22.5, 0),
        ChartPoint(28.5, 3 / 7),  # from 25 s to 32 s
    ]
    assert limits.steps == [ChartPoint(0, 2), ChartPoint(32, 2)]  # at the floor: no change


def test_a_long_live_run_is_drawn_in_wider_buckets_from_the_limit_it_started_at():
    model = adaptive()
    run = run_made(models=[model], samples=2)
    now = timezone.now()
    launch = now - dt.timedelta(hours=2)
    launched(run, launch)
    changed(model, launch - dt.timedelta(hours=1), 2, 6, GROW)
    changed(model, launch - dt.timedelta(minutes=30), 6, 5, CUT)
    completed(run, model, launch, 60)
    Response.objects.filter(
        pk=run.responses.filter(status=ResponseStatus.PENDING).first().pk
    ).update(status=ResponseStatus.RUNNING)

    limits = history(selectors.run_progress(run=run, now=now), model)

    assert limits.live and limits.ended_at == now
    assert limits.bucket_seconds == 30 and len(limits.throughput) == 240
    assert limits.throughput[2] == ChartPoint(75, 1 / 30)
    assert limits.steps == [ChartPoint(0, 5), ChartPoint(7200, 5)]
    assert (limits.current, limits.cuts, limits.changes_total, limits.changes) == (5, 0, 0, [])


def test_a_run_not_yet_launched_draws_no_limit():
    model = adaptive()
    changed(model, timezone.now(), 2, 4, START)
    run = run_made(models=[model], samples=1)
    assert history(selectors.run_progress(run=run), model) is None


def progress_queries(run, now) -> int:
    with CaptureQueriesContext(connection) as queries:
        selectors.run_progress(run=run, now=now)
    return len(queries)


def test_the_history_is_read_in_as_many_queries_whatever_the_runs_size():
    now = timezone.now()
    launch = now - dt.timedelta(minutes=10)

    small_model = adaptive("offline-small")
    small = launched(run_made(models=[small_model], samples=1), launch)
    changed(small_model, launch + dt.timedelta(seconds=3), 2, 4, START)
    completed(small, small_model, launch, 4)

    models = [adaptive(f"offline-big-{i}") for i in range(3)]
    unchanged = adaptive("offline-still")
    big = run_made(
        models=[*models, unchanged],
        samples=10,
        questions=[question_make() for _ in range(10)],
    )
    launched(big, launch)
    LimitChange.objects.bulk_create(
        LimitChange(
            model=model,
            at=launch + dt.timedelta(seconds=s),
            old=2 + s % 5,
            new=2 + (s + 1) % 5,
            why=GROW,
            in_flight=1,
        )
        for model in models
        for s in range(1, 150)
    )
    for model in [*models, unchanged]:
        completed(big, model, launch, *range(2, 201, 2))  # the last at 200 s

    # The rows, the models, the errors; the completions and the changes by bucket, the
    # last changes, and the limit before the launch of a model that has not changed since.
    assert progress_queries(small, now) <= 7
    assert progress_queries(big, now) <= 7
    limits = history(selectors.run_progress(run=big, now=now), models[0])
    assert limits.changes_total == 149 and len(limits.changes) == 50
    assert limits.changes[-1].at == launch + dt.timedelta(seconds=149)


def test_the_run_page_draws_the_limit_and_lists_its_changes_with_the_model_named_safely(
    role_client,
):
    model = ModelConfigFactory(
        display_name="<i>Ada</i> & co", adapts_concurrency=True, min_concurrent=2
    )
    fixed = offline_model(NOWHERE, name="offline-friendly")
    run = run_made(models=[model, fixed], samples=2)
    launch = timezone.now() - dt.timedelta(minutes=5)
    launched(run, launch)
    completed(run, model, launch, 10, 20, 200)
    for s in range(55):
        changed(model, launch + dt.timedelta(seconds=s + 1), 2 + s % 3, 2 + (s + 1) % 3, GROW)

    researcher = role_client(Role.RESEARCHER)
    url = reverse("runs:detail", args=[run.pk])
    for body in (researcher.get(url).text, researcher.get(url, **HX).text):
        assert body.count('data-testid="limit-history"') == 1  # the fixed model has none
        assert (
            f'role="img" aria-labelledby="limits-{model.pk}-title">\n'
            f'      <title id="limits-{model.pk}-title">Concurrency limit of '
            "&lt;i&gt;Ada&lt;/i&gt; &amp; co (offline demo model)"
        ) in body
        assert (
            "<figcaption>Concurrency limit of &lt;i&gt;Ada&lt;/i&gt; &amp; co "
            '<span class="badge offline">offline demo model</span> (found by itself, between '
            "floor 2 and ceiling 8;"
        ) in body
        assert "<i>Ada</i>" not in body
        assert 'data-testid="limit-now">3<' in body and 'data-testid="limit-cuts">0<' in body
        assert 'class="chart-limit" d="M40 ' in body and 'class="chart-rate" points="' in body
        assert body.count('data-testid="limit-change"') == 50
        assert "The last 50 of 55 changes since the launch" in body
        # A poll keeps the open table as it was while the run goes on.
        assert f'id="limit-changes-{model.pk}" hx-preserve>' in body

    Response.objects.filter(run=run).update(status=ResponseStatus.DONE)
    SamplingRun.objects.filter(pk=run.pk).update(status=RunStatus.FINISHED)
    body = researcher.get(url).text
    assert f'id="limit-changes-{model.pk}">' in body and "hx-preserve" not in body
    assert "Limit at the last answer" in body


def test_a_proxy_runs_calls_are_counted_by_their_participants_model(make_study):
    model = adaptive()
    run = surveys.proxy_run_create(study=make_study(live=False, count=3), models=[model])
    now = timezone.now()
    launch = now - dt.timedelta(seconds=20)
    ProxyRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, launched_at=launch)
    run.refresh_from_db()
    first = ProxyCall.objects.filter(run=run).first()
    ProxyCall.objects.filter(pk=first.pk).update(
        status=ProxyCallStatus.DONE, completed_at=launch + dt.timedelta(seconds=7)
    )
    changed(model, launch + dt.timedelta(seconds=1), 2, 4, START)

    limits = history(proxy_run_progress(run=run, now=now), model)

    assert limits.current == 4 and limits.ended_at == launch + dt.timedelta(seconds=7)
    # The run is shorter than two buckets: one rate, over the whole of it.
    assert limits.throughput == [ChartPoint(0, 1 / 7), ChartPoint(7, 1 / 7)]
