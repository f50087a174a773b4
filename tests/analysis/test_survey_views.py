"""The survey report's pages: who may see them, what they show, and that each download is
the table it says it is."""

import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.accounts.roles import Role
from apps.analysis import services
from apps.analysis.models import BootstrapStatus, SurveyBootstrap
from apps.analysis.survey import survey_report
from apps.analysis.survey_data import survey_data, survey_fingerprint
from apps.surveys.models import Answer, StudySimulation
from tests.analysis.builders import person, proxy, rate
from tests.conftest import ROLES
from tests.factories import ModelConfigFactory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning"),
]
HX = {"HTTP_HX_REQUEST": "true"}


def urls(study) -> list[tuple[str, str]]:
    """(method, url) for every URL of apps/analysis/urls.py."""
    pk = study.pk
    return [
        ("get", reverse("analysis:index")),
        ("get", reverse("analysis:survey_report", args=[pk])),
        ("get", reverse("analysis:survey_table_csv", args=[pk, "alpha"])),
        ("get", reverse("analysis:survey_figure_svg", args=[pk, "ranges"])),
        ("post", reverse("analysis:survey_bootstrap", args=[pk])),
        ("get", reverse("analysis:survey_disagreements", args=[pk])),
    ]


def test_every_url_of_the_analysis_app_is_listed_here(hand_study):
    from apps.analysis.urls import urlpatterns

    # The benchmark report's are listed in tests/analysis/test_benchmark_views.py, the answer
    # study report's in tests/analysis/test_answer_study_views.py.
    others = ("benchmark_", "answer_study_")
    mine = [p for p in urlpatterns if not p.name.startswith(others)]
    assert len(urls(hand_study.study)) == len(mine)


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_only_researchers_see_the_report(role_client, role, hand_study):
    client = role_client(role)
    for method, url in urls(hand_study.study):
        response = getattr(client, method)(url)
        if role == Role.RESEARCHER:
            expected = 302 if method == "post" else 200
            assert response.status_code == expected, url
        else:
            assert response.status_code == 403, url
    # Only the researcher asked for the intervals.
    asked = SurveyBootstrap.objects.filter(study=hand_study.study).count()
    assert asked == (1 if role == Role.RESEARCHER else 0)


def test_anonymous_visitors_are_sent_to_login(client, hand_study):
    for method, url in urls(hand_study.study):
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url
    assert not SurveyBootstrap.objects.exists()


# --- the report page --------------------------------------------------------------------------


@pytest.fixture
def researcher_client(role_client):
    return role_client(Role.RESEARCHER)


def report_url(study) -> str:
    return reverse("analysis:survey_report", args=[study.pk])


def test_the_report_shows_its_tables_figures_and_what_they_rest_on(researcher_client, hand_study):
    study = hand_study.study
    response = researcher_client.get(report_url(study))

    assert response.status_code == 200
    html = response.content.decode()
    report = response.context["report"]
    for name in ("alpha", "rho", "demographics"):
        assert f'data-table="{name}"' in html
        assert f"Based on {report.tables[name].n}." in html
    for name in report.figures:
        assert f'data-figure="{name}"' in html
        assert reverse("analysis:survey_figure_svg", args=[study.pk, name]) in html
        assert reverse("analysis:survey_table_csv", args=[study.pk, name]) in html
    # 3 people kept, 2 scenarios; 18 of their answers and 4 of the proxy's.
    assert "Based on 2 scenarios, 3 people, 18 answers; 1 proxy model in 2 runs, 4 answers." in html
    assert "Left out: 1 rejected in review; 1 failed an attention check." in html
    assert "AC1" not in html
    assert "offline demo models" in html
    assert 'data-testid="simulated"' not in html


def test_the_page_says_figures_4_and_5_are_per_item_and_whose_choice_the_sd_is(
    researcher_client, hand_study
):
    response = researcher_client.get(report_url(hand_study.study))

    html = response.content.decode()
    spread = html[html.index('id="spread-heading"') :]
    # Figures 4 and 5 per item first, then the pooled views, labelled as Assay's addition.
    order = [
        spread.index(f'data-figure="{name}"')
        for name in ("ranges", "sd-cdf", "ranges-pooled", "sd-cdf-pooled")
    ]
    assert order == sorted(order)
    addition = spread.index("Assay's addition: the scale items pooled")
    assert order[1] < addition < order[2]
    assert "population SDs (ddof=0), Assay's choice" in spread


def body_rows(response) -> list[list[str]]:
    body = b"".join(response.streaming_content).decode("utf-8")
    return list(csv.reader(io.StringIO(body)))


def as_written(value) -> str:
    """A raw table value as the CSV writes it: numbers in full, nothing for a missing one."""
    return "" if value is None else str(value)


def test_every_table_and_figure_downloads_as_its_data(researcher_client, hand_study):
    study = hand_study.study
    report = survey_report(survey_data(study=study))
    tables = {**report.tables, **{name: f.table for name, f in report.figures.items()}}
    # alpha, rho, proxies, demographics; 7 items; ranges and SD curves per item, and both pooled
    assert len(tables) == 4 + 7 + 4 + 1  # the method panel too

    for name, table in tables.items():
        response = researcher_client.get(
            reverse("analysis:survey_table_csv", args=[study.pk, name])
        )
        assert response.status_code == 200, name
        assert response["Content-Type"] == "text/csv; charset=utf-8"
        assert f'filename="study-{study.pk}-{name}.csv"' in response["Content-Disposition"]
        header, *rows = body_rows(response)
        assert header == [column.label for column in table.columns], name
        assert rows == [[as_written(v) for v in row] for row in table.raw_rows()], name
        assert rows, name


def test_a_table_that_does_not_exist_is_404(researcher_client, hand_study):
    study = hand_study.study
    assert (
        researcher_client.get(
            reverse("analysis:survey_table_csv", args=[study.pk, "nothing"])
        ).status_code
        == 404
    )
    assert (
        researcher_client.get(
            reverse("analysis:survey_figure_svg", args=[study.pk, "alpha"])
        ).status_code
        == 404
    )


def test_every_figure_is_served_as_svg_that_parses(researcher_client, hand_study):
    study = hand_study.study
    report = survey_report(survey_data(study=study))

    for name in report.figures:
        response = researcher_client.get(
            reverse("analysis:survey_figure_svg", args=[study.pk, name])
        )
        assert response.status_code == 200, name
        assert response["Content-Type"].startswith("image/svg+xml")
        assert "default-src 'none'" in response["Content-Security-Policy"]
        root = ET.fromstring(response.content)  # noqa: S314 (our own SVG)
        assert root.tag == "{http://www.w3.org/2000/svg}svg", name


def test_an_htmx_request_gets_only_the_intervals_panel(researcher_client, hand_study):
    response = researcher_client.get(report_url(hand_study.study), **HX)

    html = response.content.decode()
    assert html.strip().startswith('<section id="bootstrap"')
    assert html.count("<section") == 1
    assert "data-table" not in html and "<h1>" not in html


# --- the intervals ----------------------------------------------------------------------------


def test_asking_for_the_intervals_queues_one_bootstrap(
    researcher_client, hand_study, django_capture_on_commit_callbacks
):
    study = hand_study.study
    url = reverse("analysis:survey_bootstrap", args=[study.pk])

    with django_capture_on_commit_callbacks() as queued:
        response = researcher_client.post(url)

    assert response.status_code == 302
    assert response["Location"] == report_url(study)
    bootstrap = SurveyBootstrap.objects.get(study=study)
    assert bootstrap.status == BootstrapStatus.QUEUED
    assert bootstrap.fingerprint == survey_fingerprint(study=study)
    assert len(queued) == 1

    with django_capture_on_commit_callbacks() as queued_again:
        researcher_client.post(url)
    assert SurveyBootstrap.objects.filter(study=study).count() == 1
    assert queued_again == []

    page = researcher_client.get(report_url(study), **HX).content.decode()
    assert "Waiting for a worker" in page
    assert 'hx-trigger="every 1s"' in page


def interval_cells(response) -> list:
    report = response.context["report"]
    return [
        (row["low"], row["high"]) for name in ("alpha", "rho") for row in report.tables[name].rows
    ]


def test_intervals_show_until_the_data_changes(researcher_client, rated_study):
    study = rated_study.study
    bootstrap, _queue = services.survey_bootstrap_request(study=study)
    services.survey_bootstrap_compute(bootstrap_id=bootstrap.pk)

    response = researcher_client.get(report_url(study))
    cells = interval_cells(response)
    assert cells and all(low is not None and high is not None for low, high in cells)
    assert "They are shown in the tables below." in response.content.decode()

    rate(person(study, 99), {0: {"H2": "3"}})

    response = researcher_client.get(report_url(study))
    assert all(cell == (None, None) for cell in interval_cells(response))
    assert "Compute the confidence intervals" in response.content.decode()


def test_a_failed_bootstrap_says_why_and_may_be_asked_again(researcher_client, hand_study):
    study = hand_study.study
    bootstrap, _queue = services.survey_bootstrap_request(study=study)
    SurveyBootstrap.objects.filter(pk=bootstrap.pk).update(
        status=BootstrapStatus.FAILED, error="The worker ran out of memory."
    )

    html = researcher_client.get(report_url(study)).content.decode()

    assert "The last computation failed: The worker ran out of memory." in html
    assert "Compute the confidence intervals" in html


# --- the disagreement browser -----------------------------------------------------------------


def disagreements_url(study) -> str:
    return reverse("analysis:survey_disagreements", args=[study.pk])


def test_disagreements_are_ranked_by_gap_with_both_sides_explanations(
    researcher_client, hand_study
):
    study = hand_study.study
    names = sorted(study.study_scenarios.values_list("scenario__name", flat=True))
    model = hand_study.models[0]

    html = researcher_client.get(disagreements_url(study)).content.decode()

    # Only H2 has both sides. On -1..1, scenario 0: people 1, 1, 1 -> -1, the proxy's runs
    # 2, 4 -> 0: gap 1. Scenario 1: people 4, 5, 4 -> 2/3, the proxy's 3, 3 -> 0: gap 2/3.
    first = html.index(f"1. {names[0]}: gap 1.00")
    second = html.index(f"2. {names[1]}: gap 0.67")
    assert first < second
    assert "(3 people)" in html and "(2 proxy runs)" in html
    for number in (1, 2, 3):
        assert f"Person {number} explains (H2)" in html
    for run in (0, 1):
        assert f"Proxy run {run} explains (H2)" in html
    assert f"{model.display_name} (offline demo model): mean" in html
    # The left-out people's answers are not among the explanations.
    assert "Person 10" not in html and "Person 11" not in html


def test_a_hostile_explanation_is_shown_as_text(researcher_client, hand_study):
    study = hand_study.study
    Answer.objects.filter(assignment__participant=hand_study.people[0], item__code="H2").update(
        explanation="<script>alert(1)</script>", saved_at=timezone.now()
    )

    html = researcher_client.get(disagreements_url(study)).content.decode()

    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# --- empty and simulated studies --------------------------------------------------------------


def test_a_study_without_answers_renders_its_empty_states(researcher_client, make_study):
    study = make_study(live=False, count=3)

    report = researcher_client.get(report_url(study))
    assert report.status_code == 200
    assert "No proxy has answered yet" in report.content.decode()
    assert "Based on 3 scenarios, 0 people, 0 answers." in report.content.decode()
    page = researcher_client.get(disagreements_url(study))
    assert page.status_code == 200
    assert "Nothing to compare yet" in page.content.decode()
    for name in ("alpha", "demographics", "distribution-H2", "ranges", "sd-cdf"):
        url = reverse("analysis:survey_table_csv", args=[study.pk, name])
        assert researcher_client.get(url).status_code == 200, name
    for name in ("distribution-H2", "ranges", "sd-cdf"):
        url = reverse("analysis:survey_figure_svg", args=[study.pk, name])
        ET.fromstring(researcher_client.get(url).content)  # noqa: S314 (our own SVG)


def test_a_study_with_people_and_no_proxy_renders(researcher_client, make_study):
    study = make_study(live=False, count=2)
    for number in (1, 2):
        rate(person(study, number), {0: {"H1": "yes", "H2": "4"}, 1: {"H1": "no", "H2": "2"}})

    response = researcher_client.get(report_url(study))

    assert response.status_code == 200
    assert "No proxy has answered yet" in response.content.decode()
    assert response.context["report"].tables["rho"].rows == []
    assert (
        "Nothing to compare yet" in researcher_client.get(disagreements_url(study)).content.decode()
    )


def test_a_study_with_proxies_and_no_people_renders(researcher_client, make_study):
    study = make_study(live=False, count=2)
    model = ModelConfigFactory(name="offline-terse")
    for run in range(2):
        rate(proxy(study, model, run), {0: {"H2": "4"}, 1: {"H2": "2"}})

    response = researcher_client.get(report_url(study))

    assert response.status_code == 200
    rho = response.context["report"].tables["rho"].rows
    assert rho and all(row["pairs"] == 0 for row in rho)
    assert researcher_client.get(disagreements_url(study)).status_code == 200


def test_simulated_people_are_labelled_as_simulated(researcher_client, hand_study):
    study = hand_study.study
    for participant in hand_study.people:
        participant.simulated = True
        participant.save(update_fields=["simulated"])

    html = researcher_client.get(report_url(study)).content.decode()
    assert 'data-testid="simulated"' in html
    assert "People (simulated) (n=6)" in html
    assert "3 of these people are simulated by the demo" in html

    html = researcher_client.get(disagreements_url(study)).content.decode()
    assert "simulated by the demo" in html
    assert re.search(r"People \(simulated\): mean", html)


def test_the_reports_page_lists_every_study_with_who_answered(role_client, hand_study):
    from apps.accounts.roles import Role

    page = role_client(Role.RESEARCHER).get(reverse("analysis:index")).content.decode()
    url = reverse("analysis:survey_report", args=[hand_study.study.pk])
    assert f'<a href="{url}">{hand_study.study.name}</a>' in page
    # Five people answered (two of them are left out of the report), two proxy runs.
    assert '<td class="num">5</td><td class="num">2</td>' in page.replace("\n", "")
    for role in (Role.EXPERT, Role.REVIEWER):
        assert role_client(role).get(reverse("analysis:index")).status_code == 403


# --- the demo's record of what made its data ---------------------------------------------------

DEMO_RECORD = {
    "made_by": "the demo <b>loader</b>",
    "parts": [
        {
            "what": "People",
            "how": "Made up from these parameters.",
            "parameters": [
                {"name": "answer_noise", "value": 1.1, "about": '<script>alert("p")</script>'},
                {"name": "person_leaning", "value": 0.45, "about": "each person's leaning"},
            ],
        },
        {"what": "Responses", "how": "Written by an offline model.", "parameters": []},
    ],
}


def test_a_study_the_demo_made_states_what_made_it_with_its_parameters(
    researcher_client, hand_study
):
    study = hand_study.study
    assert 'data-testid="demo-notice"' not in researcher_client.get(report_url(study)).text
    StudySimulation.objects.create(study=study, record=DEMO_RECORD)

    html = researcher_client.get(report_url(study)).text

    start = html.index('data-testid="demo-notice"')
    notice = html[start : html.index("</section>", start)]
    assert "by construction of these parameters: it is not a finding" in notice
    assert "the demo &lt;b&gt;loader&lt;/b&gt;" in notice and "<b>" not in notice
    assert '<code>answer_noise</code></th><td class="num">1.1</td>' in notice
    assert '<code>person_leaning</code></th><td class="num">0.45</td>' in notice
    assert "&lt;script&gt;alert(&quot;p&quot;)&lt;/script&gt;" in notice
    assert "<script>alert" not in html
    assert notice.count('data-testid="demo-parameters"') == 1  # a part without any has no table
    assert "Written by an offline model." in notice
