"""200 participants arrive at once (threads, real HTTP against the live server) on 40
scenarios with k = 5: every scenario ends with exactly 5 completed ratings, nobody sees a
scenario twice, and everyone else is told the study is full. The same for a study of
answers, whose units are answers and pairs of answers, each page asking its own items."""

import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.test import override_settings

from apps.surveys import selectors
from apps.surveys.models import (
    Answer,
    Assignment,
    AssignmentStatus,
    Participant,
    ParticipantStatus,
    UnitKind,
)
from tests.factories import answer_study_make, new_pid
from tests.surveys.flow import completed_per_scenario

PARTICIPANTS = 200
# The live server runs a thread, with a database connection, per HTTP connection: keep
# in-flight requests (and so connections) under PostgreSQL's limit. All 200 still contend for
# the same rows.
IN_FLIGHT = 32
ANSWERS = {
    "H1": "yes",
    "H2": "4",
    "H3": "4",
    "P1": "3",
    "P2": "2",
    "P3": "5",
    "P4": "5",
}


def take_part(
    base: str,
    study,
    gate: threading.Semaphore,
    start: threading.Barrier,
    transport,
    answers: dict[str, str] = ANSWERS,
) -> str:
    pid = new_pid()
    ids = {"PROLIFIC_PID": pid, "STUDY_ID": "b" * 24, "SESSION_ID": "c" * 24}
    # Each participant its own client (its own cookies) over one shared pool of connections:
    # a client of its own would cost 20 ms of CPU to make, in the process that also serves.
    http = httpx.Client(base_url=base, timeout=60, transport=transport)

    def send(method, url, **kwargs):
        with gate:
            token = http.cookies.get("csrftoken", "")
            response = http.request(method, url, headers={"X-CSRFToken": token}, **kwargs)
        assert response.status_code in (200, 302), (url, response.status_code)
        return response

    start.wait()
    send("GET", f"/s/{study.slug}/", params=ids)
    after = send("POST", f"/s/{study.slug}/consent/", data={**ids, "decision": "agree"})
    if after.headers["location"].endswith("/done/"):
        return "full"
    # Each step's redirect names the next one, as a browser would follow it.
    nxt = send("POST", f"/s/{study.slug}/instructions/").headers["location"]
    while re.search(r"/scenario/(\d+)/$", nxt):
        data = {}
        for code, value in answers.items():  # a page reads its own items' answers only
            data[f"value_{code}"] = value
            data[f"explanation_{code}"] = f"My reason for {code}, in a sentence."
        nxt = send("POST", nxt, data=data).headers["location"]
    assert nxt == f"/s/{study.slug}/about-you/", nxt
    demographics = {
        "age": "no_say",
        "gender": "no_say",
        "education": "no_say",
        "income": "no_say",
    }
    done = send("POST", f"/s/{study.slug}/about-you/", data=demographics)
    assert done.headers["location"].endswith("/done/"), re.findall(
        r'class="message[^>]*>([^<]*)<', send("GET", done.headers["location"]).text
    )
    return "finished"


def arrive_at_once(base: str, study, answers: dict[str, str] = ANSWERS) -> Counter:
    """PARTICIPANTS take part at once; how many finished and how many found it full."""
    gate, start = threading.Semaphore(IN_FLIGHT), threading.Barrier(PARTICIPANTS)
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    with (
        httpx.HTTPTransport(limits=limits) as transport,
        ThreadPoolExecutor(max_workers=PARTICIPANTS) as pool,
    ):
        futures = [
            pool.submit(take_part, base, study, gate, start, transport, answers)
            for _ in range(PARTICIPANTS)
        ]
        return Counter(f.result() for f in futures)


def assert_everyone_accounted_for(study, outcomes: Counter) -> int:
    """Nobody was given a unit twice, every rating handed out was completed, and everyone
    either finished or was told the study is full. How many finished."""
    per_person = Counter(
        Assignment.objects.filter(participant__study=study).values_list(
            "participant_id", "study_scenario_id"
        )
    )
    assert max(per_person.values()) == 1, "nobody is given a scenario twice"
    assert (
        not Assignment.objects.filter(participant__study=study)
        .exclude(status=AssignmentStatus.COMPLETED)
        .exists()
    )
    finished = Participant.objects.filter(study=study, status=ParticipantStatus.FINISHED).count()
    full = Participant.objects.filter(study=study, status=ParticipantStatus.FULL).count()
    assert outcomes == {"finished": finished, "full": full}
    assert finished + full == PARTICIPANTS
    return finished


@pytest.mark.django_db(transaction=True)
@override_settings(SURVEY_RATE_LIMIT_PER_MINUTE=100_000)
def test_200_arrivals_at_once_leave_exactly_k_ratings_per_scenario(
    live_server, transactional_db, make_study
):
    study = make_study(count=40, ratings_per_scenario=5, scenarios_per_participant=5)
    outcomes = arrive_at_once(live_server.url, study)

    counts = completed_per_scenario(study)
    assert len(counts) == 40 and set(counts.values()) == {5}
    finished = assert_everyone_accounted_for(study, outcomes)
    assert finished >= 40, "200 ratings in bundles of at most five"


@pytest.mark.django_db(transaction=True)
@override_settings(SURVEY_RATE_LIMIT_PER_MINUTE=100_000)
def test_200_arrivals_at_once_leave_exactly_k_ratings_per_answer_and_per_pair(
    live_server, transactional_db
):
    # 40 units x k = 3 is 120 ratings, in bundles of two: about 60 finish, 140 find it full.
    study = answer_study_make(
        answers=30, pairs=10, ratings_per_scenario=3, scenarios_per_participant=2
    )
    outcomes = arrive_at_once(live_server.url, study, answers={"AH": "4", "AU": "no", "PP": "b"})

    units = selectors.study_scenarios_with_counts(study=study)
    counts = Counter((unit.kind, unit.completed) for unit in units)
    assert counts == {(UnitKind.ANSWER, 3): 30, (UnitKind.PAIR, 3): 10}
    finished = assert_everyone_accounted_for(study, outcomes)
    assert finished >= 60, "120 ratings in bundles of at most two"
    given = Answer.objects.filter(assignment__participant__study=study)
    assert Counter(given.values_list("assignment__study_scenario__kind", "item__code")) == {
        (UnitKind.ANSWER, "AH"): 90,
        (UnitKind.ANSWER, "AU"): 90,
        (UnitKind.PAIR, "PP"): 30,
    }
