"""The study page's progress refreshes itself: the page polls its progress fragment (the
study's page with HX-Request) while something can change, and the fragment follows
ratings as they move between states through the real services (reserved, completed,
returned, timed out, rejected), and responses as the engine makes them."""

import datetime as dt
import re

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.accounts.roles import Role
from apps.llm import engine
from apps.surveys import selectors, services
from apps.surveys.forms import DEFAULT_TEXTS
from apps.surveys.models import AssignmentStatus, Participant, RejectionCategory, StudyStatus
from tests.conftest import ROLES
from tests.factories import CODES, offline_model
from tests.surveys.flow import consent, finish

HX = {"HTTP_HX_REQUEST": "true"}
REASON = (
    "The explanations repeat the same sentence on every page and do not address the "
    "scenario they were asked about, which the instructions required."
)


def fragment(client, study, **params):
    response = client.get(f"/studies/{study.pk}/", params, **HX)
    assert response.status_code == 200
    return response.content.decode()


def counted(html: str) -> dict[str, int]:
    """The fragment's rating counts, by their test ids."""
    names = ("completed", "reserved", "returned", "timed-out", "rejected", "complete", "full")
    return {name: int(re.search(rf'data-testid="{name}">(\d+)<', html).group(1)) for name in names}


def poll_url(html: str) -> str:
    """The poll's url (hx-get of the poll link), or "" when the fragment does not poll."""
    found = re.search(r'<a class="poll"[^>]* hx-get="([^"]+)"', html)
    return found.group(1).replace("&amp;", "&") if found else ""


def poll(client, html: str) -> str:
    """What the page's next poll brings: the fragment asked with the poll's own url."""
    url = poll_url(html)
    assert url, "the fragment no longer polls"
    response = client.get(url, **HX)
    assert response.status_code == 200
    return response.content.decode()


def scenario_cells(html: str) -> dict[str, str]:
    """Scenario name -> its completed cell, in the page of scenarios shown."""
    rows = re.findall(
        r'<th scope="row">([^<]+)</th>\s*<td class="num" data-testid="scenario-completed">'
        r"([^<]+)</td>",
        html,
    )
    return dict(rows)


def test_the_progress_is_for_researchers_only_and_is_a_fragment(role_client, make_study):
    study = make_study(count=3, scenarios_per_participant=1)
    for role in ROLES:
        response = role_client(role).get(f"/studies/{study.pk}/", **HX)
        if role == Role.RESEARCHER:
            html = response.content.decode()
            assert response.status_code == 200
            assert html.lstrip().startswith('<div id="study-progress"')
            assert "<html" not in html and "<h1" not in html and "Link for Prolific" not in html
        else:
            assert response.status_code == 403, role
    # Without HX-Request it is the whole page, the progress inside it.
    page = role_client(Role.RESEARCHER).get(f"/studies/{study.pk}/").content.decode()
    assert "<h1" in page and 'id="study-progress"' in page and "Link for Prolific" in page


def test_ratings_are_counted_as_they_move_between_states(role_client, make_study, researcher):
    study = make_study(count=4, scenarios_per_participant=2, ratings_per_scenario=2)
    client = role_client(Role.RESEARCHER)
    html = fragment(client, study)
    zero = dict.fromkeys(("completed", "reserved", "returned", "timed-out", "rejected"), 0)
    assert counted(html) == zero | {"complete": 0, "full": 0}
    page = client.get(f"/studies/{study.pk}/").content.decode()
    summary = "0 of 8 ratings completed, 0 in progress; 0 of 4 scenarios complete."
    assert f'role="status" data-testid="progress-summary"><p>{summary}</p></div>' in page
    assert "hx-swap-oob" not in html  # a first fragment has no summary to change
    assert poll_url(html)  # live and short of ratings

    # Reserved: a participant consents and is handed two scenarios.
    pid, _ = consent(Client(), study)
    returner = Participant.objects.get(study=study, prolific_pid=pid)
    html = poll(client, html)
    assert counted(html) == zero | {"reserved": 2, "complete": 0, "full": 0}
    # The summary changed, so the poll brings it, out of band, for the live region.
    assert '<div id="progress-summary" hx-swap-oob="innerHTML">' in html
    assert "0 of 8 ratings completed, 2 in progress" in html

    # Completed: another participant rates their two and finishes.
    finisher = finish(Client(), study)
    done = set(finisher.assignments.values_list("study_scenario__scenario__name", flat=True))
    html = poll(client, html)
    assert counted(html) == zero | {"reserved": 2, "completed": 2, "complete": 0, "full": 0}
    cells = scenario_cells(html)
    assert len(cells) == 4
    assert {name for name, cell in cells.items() if cell == "1 / 2"} == done

    # Returned: the first participant returns their submission; their scenarios reopen.
    services.participant_mark_returned(participant=returner)
    html = poll(client, html)
    assert counted(html) == zero | {"returned": 2, "completed": 2, "complete": 0, "full": 0}

    # Timed out: a third participant's reservations run out and beat frees them.
    consent(Client(), study)
    later = timezone.now() + dt.timedelta(minutes=study.reservation_minutes + 1)
    assert services.assignment_expire_overdue(now=later) == 2
    html = poll(client, html)
    assert counted(html) == zero | {
        "returned": 2,
        "completed": 2,
        "timed-out": 2,
        "complete": 0,
        "full": 0,
    }

    # Rejected: the finished participant's ratings leave the count.
    services.participant_reject(
        participant=finisher,
        user=researcher,
        category=RejectionCategory.LOW_EFFORT,
        message=REASON,
    )
    html = poll(client, html)
    assert counted(html) == zero | {
        "returned": 2,
        "timed-out": 2,
        "rejected": 2,
        "complete": 0,
        "full": 0,
    }
    assert set(scenario_cells(html).values()) == {"0 / 2"}


def test_the_summary_is_sent_again_only_when_its_words_change(role_client, make_study):
    study = make_study(count=3, scenarios_per_participant=1)
    client = role_client(Role.RESEARCHER)
    first = fragment(client, study)
    again = poll(client, first)
    assert "hx-swap-oob" not in again  # nothing happened: the live region is left alone
    assert poll_url(again) == poll_url(first)
    consent(Client(), study)
    moved = poll(client, again)
    assert moved.count("hx-swap-oob") == 1 and 'id="progress-summary"' in moved
    assert "hx-swap-oob" not in poll(client, moved)


def test_the_poll_stops_when_nothing_is_left_to_change(role_client, make_study):
    client = role_client(Role.RESEARCHER)
    # Complete: every scenario has its ratings, nobody holds a reservation.
    study = make_study(count=2, scenarios_per_participant=2, ratings_per_scenario=1)
    html = fragment(client, study)
    assert 'hx-trigger="every 5s, visible-again"' in html and "data-poll-visible" in html
    finish(Client(), study)
    html = poll(client, html)
    assert (counted(html)["complete"], counted(html)["full"]) == (2, 2)
    assert poll_url(html) == "" and 'data-testid="not-polling"' in html

    # Closed, with a participant still rating: it polls until their reservation is over.
    study = make_study(count=3, scenarios_per_participant=1, name="Closed")
    consent(Client(), study)
    services.study_set_status(study=study, status=StudyStatus.CLOSED)
    html = fragment(client, study)
    assert poll_url(html)
    later = timezone.now() + dt.timedelta(minutes=study.reservation_minutes + 1)
    services.assignment_expire_overdue(now=later)
    assert poll_url(poll(client, html)) == ""

    # A draft with nothing generating does not poll.
    draft = make_study(count=1, live=False, name="Draft", scenarios_per_participant=1)
    assert poll_url(fragment(client, draft)) == ""


def test_responses_are_followed_as_the_engine_makes_them(
    role_client, scenarios, offline_provider_url
):
    model = offline_model(offline_provider_url, name="offline-thorough")
    study = services.study_create(scenarios=scenarios[:3], name="g", **DEFAULT_TEXTS, **CODES)
    client = role_client(Role.RESEARCHER)
    page = client.post(f"/studies/{study.pk}/responses/", {"model": model.pk}, follow=True)
    page = page.content.decode()
    assert "reload" not in page
    assert "the page shows them being made" in page
    generation = study.generations.get()

    # A draft polls while its responses are being made.
    html = fragment(client, study)
    assert "waiting for a worker (3 calls)" in html
    assert 'data-testid="generation-total">3<' in html
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert "<p>Generating responses: 0 of 3 made.</p>" in page
    assert re.search(r"responses=0\b", poll_url(html))

    engine.batch_run(work=services.SCENARIO_RESPONSE_WORK.name, scope=generation.pk, limit=1)
    html = poll(client, html)
    assert 'data-testid="generation-done">1<' in html
    assert 'data-testid="generation-pending">2<' in html
    assert 'id="responses"' not in html  # the texts come once, when the generation ends
    assert list(scenario_cells(html)) == [s.name for s in scenarios[:3]]
    assert html.count(">ready<") == 1

    while engine.batch_run(work=services.SCENARIO_RESPONSE_WORK.name, scope=generation.pk).claimed:
        pass
    generation.refresh_from_db()
    assert generation.status == "done"
    html = poll(client, html)
    assert 'data-testid="generation-done">3<' in html
    assert "Responses from " in html and ": done." in html
    # The generation has ended: its responses' texts come out of band, and the poll stops.
    assert '<section class="panel" id="responses"' in html and 'hx-swap-oob="true"' in html
    assert html.count(f"{model.display_name}, prompt scenario_response") == 3
    assert poll_url(html) == ""


def test_a_page_of_scenarios_at_a_time(role_client, make_study, monkeypatch):
    monkeypatch.setattr(selectors, "SCENARIOS_PER_PAGE", 4)
    study = make_study(count=10)
    names = list(study.study_scenarios.order_by("scenario__name").values_list("scenario__name"))
    names = [n for (n,) in names]
    client = role_client(Role.RESEARCHER)

    html = fragment(client, study, page="2")
    assert list(scenario_cells(html)) == names[4:8]
    assert "Ratings by scenario, 5 to 8 of 10" in html and "Page 2 of 3" in html
    assert f'href="/studies/{study.pk}/?page=1#study-progress"' in html
    assert f'href="/studies/{study.pk}/?page=3#study-progress"' in html
    assert "page=2&amp;seen=" in html  # the poll keeps the page
    assert list(scenario_cells(poll(client, html))) == names[4:8]
    # Past the end, the last page; nonsense, the first. Without JavaScript, the whole page.
    assert list(scenario_cells(fragment(client, study, page="99"))) == names[8:]
    assert list(scenario_cells(fragment(client, study, page="²"))) == names[:4]
    page = client.get(f"/studies/{study.pk}/", {"page": "3"}).content.decode()
    assert "<h1" in page and list(scenario_cells(page)) == names[8:]


def test_the_progress_takes_the_same_queries_for_40_scenarios_as_for_3(
    role_client, make_study, scenarios
):
    client = role_client(Role.RESEARCHER)
    small = make_study(count=3, name="Small", scenarios_per_participant=1)
    large = make_study(count=40, name="Large", scenarios_per_participant=5)
    for _ in range(3):
        finish(Client(), large)
    consent(Client(), large)
    assert large.study_scenarios.filter(assignments__status=AssignmentStatus.COMPLETED).exists()
    fragment(client, small)  # the session and the user, read once as every request does

    def queries(study):
        with CaptureQueriesContext(connection) as captured:
            fragment(client, study)
        return len(captured)

    assert queries(large) == queries(small) <= 9


def test_the_proxy_runs_table_refreshes_itself_while_a_run_runs(role_client, make_study):
    study = make_study(count=2, live=False, scenarios_per_participant=1)
    model = offline_model("http://127.0.0.1:9", name="offline-terse")
    run = services.proxy_run_create(study=study, models=[model], runs_per_model=1)
    url = f"/studies/{study.pk}/proxies/"
    for role in ROLES:
        response = role_client(role).get(url, **HX)
        assert response.status_code == (200 if role == Role.RESEARCHER else 403), role
    client = role_client(Role.RESEARCHER)
    html = client.get(url, **HX).content.decode()
    assert html.lstrip().startswith('<section id="proxy-runs"') and "<h1" not in html
    assert "Draft" in html and poll_url(html) == ""  # a draft changes only when launched

    services.proxy_run_launch(run=run)
    html = client.get(url, **HX).content.decode()
    assert "Running" in html and poll_url(html) == url
    assert 'hx-trigger="every 5s, visible-again"' in html
    page = client.get(url).content.decode()
    assert "<h1>Proxy participants</h1>" in page and f'href="{url}#proxy-runs"' in page
