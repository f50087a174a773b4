"""The answer-study report's pages: who may see them, what they show (its sections, the brief,
the labels of simulated people and offline models, the links to the answers), each download
and figure, the intervals asked for and followed, and a study of scenarios refused."""

import csv
import io
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import scipy.stats
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from apps.accounts.roles import Role
from apps.analysis import services
from apps.analysis.answer_study import answer_study_report
from apps.analysis.answer_study_data import answer_study_data, answer_study_fingerprint
from apps.analysis.models import BootstrapReport, BootstrapStatus, SurveyBootstrap
from apps.grading.models import CalibrationSample, CalibrationSet
from apps.llm.models import ModelConfig
from apps.rubrics.models import Rubric
from apps.runs.models import Response
from apps.surveys.models import Answer, Participant, ParticipantKind, Study, StudyKind
from tests.analysis.answer_study_builders import MODELS, hand_study_make
from tests.conftest import ROLES
from tests.factories import user_with_role

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def built():
    """The answer-study report's hand-built study (tests/analysis/answer_study_builders.py),
    with one of the sampling run's models and the proxy served by the offline provider."""
    hand = hand_study_make()
    for model in (hand.models["Alpha"], hand.models["proxy"]):
        offline = f"openai/offline-{model.display_name.lower()}"
        ModelConfig.objects.filter(pk=model.pk).update(litellm_model=offline)
    return hand


def answers_study(name: str = "Not drawn yet") -> Study:
    return Study.objects.create(name=name, kind=StudyKind.ANSWERS)


@pytest.fixture
def researcher_client(role_client):
    return role_client(Role.RESEARCHER)


def report_url(study) -> str:
    return reverse("analysis:answer_study_report", args=[study.pk])


def first_table(study) -> str:
    report = answer_study_report(answer_study_data(study=study))
    return next(name for name in report.tables if name != "method")


def first_figure(study) -> str:
    report = answer_study_report(answer_study_data(study=study))
    return next(iter(report.figures))


def urls(study) -> list[tuple[str, str]]:
    """(method, url) for every URL of the answer-study report."""
    pk = study.pk
    return [
        ("get", report_url(study)),
        ("get", reverse("analysis:answer_study_table_csv", args=[pk, first_table(study)])),
        ("get", reverse("analysis:answer_study_figure_svg", args=[pk, first_figure(study)])),
        ("post", reverse("analysis:answer_study_bootstrap", args=[pk])),
    ]


def test_every_url_of_the_answer_study_report_is_listed_here(built):
    from apps.analysis.urls import urlpatterns

    mine = [p for p in urlpatterns if p.name.startswith("answer_study_")]
    assert len(urls(built.study)) == len(mine)


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_only_researchers_see_the_report(role_client, role, built):
    client = role_client(role)
    for method, url in urls(built.study):
        response = getattr(client, method)(url)
        if role == Role.RESEARCHER:
            assert response.status_code == (302 if method == "post" else 200), url
        else:
            assert response.status_code == 403, url
    asked = SurveyBootstrap.objects.filter(study=built.study).count()
    assert asked == (1 if role == Role.RESEARCHER else 0)


def test_anonymous_visitors_are_sent_to_login(client, built):
    for method, url in urls(built.study):
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url
    assert not SurveyBootstrap.objects.exists()


# --- the report page --------------------------------------------------------------------------


def test_the_report_shows_the_brief_contents_and_every_section(researcher_client, built):
    study = built.study
    response = researcher_client.get(report_url(study))

    assert response.status_code == 200
    html = response.content.decode()
    report = response.context["report"]
    assert f"Based on {report.data_n}." in html
    assert 'data-testid="headline"' in html
    for key in ("people", "proxies", "answers", "pairs"):
        assert f'data-headline="{key}"' in html, key
    contents = html[html.index('data-testid="contents"') :]
    assert report.sections
    for slug, heading, names in report.sections:
        assert f'<a href="#{slug}">{escape(heading)}</a>' in contents
        if names == ["method"]:  # the method panel, in its place
            assert '<section class="panel" id="method"' in html
            continue
        assert f'<section class="panel report-section" id="{slug}"' in html
        for name in names:
            if name in report.figures:
                assert f'data-figure="{name}"' in html, name
                svg = reverse("analysis:answer_study_figure_svg", args=[study.pk, name])
                assert svg in html
            else:
                assert f'data-table="{name}"' in html, name
            if name != "method":
                csv_url = reverse("analysis:answer_study_table_csv", args=[study.pk, name])
                assert csv_url in html, name
    assert 'data-testid="method-panel"' in html
    # The proxy model is offline: said once at the top, and badged where it is named.
    assert 'data-testid="offline-notice"' in html
    assert '<span class="badge offline">' in html
    assert 'data-testid="simulated"' not in html
    # The person rejected in review is left out, and the page says so.
    assert "Left out: 1 rejected in review." in html


def test_the_brief_names_the_top_models_and_the_correlation(researcher_client, built):
    response = researcher_client.get(report_url(built.study))

    brief = {item["key"]: item for item in response.context["brief"]}
    report = response.context["report"]
    assert brief["people"]["shown"] == f"{report.people:,}"
    assert brief["proxies"]["shown"] == f"{report.proxies:,}"
    assert brief["answers"]["shown"] == f"{report.answers:,}"
    assert brief["pairs"]["shown"] == f"{report.pairs:,}"
    # The rubric's top model: the highest mean score over the whole run (one answer per
    # question, so the mean of its scores).
    means = {name: np.mean(scores) for name, scores in built.scores.items()}
    best = max(means.values())
    assert [str(name) for name in brief["rubric"]["names"]] == [
        name + (" (offline)" if name == "Alpha" else "") for name in MODELS if means[name] == best
    ]
    ranking = report.tables["ranking"]
    assert brief["pairs-top"]["names"] == [r["model"] for r in ranking.rows if r["rank"] == 1]
    assert brief["pairs-top"]["names"]
    # Rho per answer: people's mean HELP on each answer against its rubric score.
    people = {key for key, _unit in built.help}
    helpfulness = [
        np.mean([built.help[(key, a["index"])] for key in people]) for a in built.answers
    ]
    expected = scipy.stats.spearmanr(helpfulness, [a["score"] for a in built.answers])
    assert brief["rho"]["shown"] == f"{expected.statistic:,.3f}"
    assert brief["rho"]["which"] == f"over {len(built.answers)} answers"
    html = response.content.decode()
    assert '<span class="headline-value" data-testid="headline-rubric">' in html


def body_rows(response) -> list[list[str]]:
    body = b"".join(response.streaming_content).decode("utf-8")
    return list(csv.reader(io.StringIO(body)))


def as_written(value) -> str:
    return "" if value is None else str(value)


def test_every_table_and_figure_downloads_as_its_data(researcher_client, built):
    study = built.study
    report = answer_study_report(answer_study_data(study=study))
    tables = {**report.tables, **{name: f.table for name, f in report.figures.items()}}
    assert tables

    for name, table in tables.items():
        response = researcher_client.get(
            reverse("analysis:answer_study_table_csv", args=[study.pk, name])
        )
        assert response.status_code == 200, name
        assert response["Content-Type"] == "text/csv; charset=utf-8"
        assert f'filename="answer-study-{study.pk}-{name}.csv"' in response["Content-Disposition"]
        header, *rows = body_rows(response)
        assert header == [column.label for column in table.columns], name
        assert rows == [[as_written(v) for v in row] for row in table.raw_rows()], name


def test_every_figure_is_served_as_svg_that_parses(researcher_client, built):
    study = built.study
    report = answer_study_report(answer_study_data(study=study))
    assert report.figures

    for name in report.figures:
        url = reverse("analysis:answer_study_figure_svg", args=[study.pk, name])
        response = researcher_client.get(url)
        assert response.status_code == 200, name
        assert response["Content-Type"].startswith("image/svg+xml")
        assert "default-src 'none'" in response["Content-Security-Policy"]
        root = ET.fromstring(response.content)  # noqa: S314 (our own SVG)
        assert root.tag == "{http://www.w3.org/2000/svg}svg", name


def test_a_table_or_figure_that_does_not_exist_is_404(researcher_client, built):
    study = built.study
    for url in (
        reverse("analysis:answer_study_table_csv", args=[study.pk, "nothing"]),
        reverse("analysis:answer_study_figure_svg", args=[study.pk, "nothing"]),
    ):
        assert researcher_client.get(url).status_code == 404, url


def test_an_answer_row_links_to_the_answer_in_the_grading_runs_viewer(researcher_client, built):
    response = researcher_client.get(report_url(built.study))

    html = response.content.decode()
    viewer = reverse("grading:answers", args=[built.grading.pk])
    rows = response.context["report"].tables["criteria-answers"].rows
    assert rows
    for row in rows:
        assert f'href="{viewer}?answer={row["response"]}" data-answers' in html, row["label"]


def test_simulated_people_are_labelled_as_simulated(researcher_client, built):
    Participant.objects.filter(study=built.study, kind=ParticipantKind.HUMAN).update(simulated=True)

    html = researcher_client.get(report_url(built.study)).content.decode()

    assert 'data-testid="simulated"' in html
    assert "simulated by the demo" in html


# --- studies without this report --------------------------------------------------------------


def test_a_study_of_scenarios_has_no_answer_study_report(researcher_client, make_study):
    study = make_study(live=False, count=2)
    for method, url in [
        ("get", report_url(study)),
        ("get", reverse("analysis:answer_study_table_csv", args=[study.pk, "method"])),
        ("get", reverse("analysis:answer_study_figure_svg", args=[study.pk, "any"])),
        ("post", reverse("analysis:answer_study_bootstrap", args=[study.pk])),
    ]:
        assert getattr(researcher_client, method)(url).status_code == 404, url
    assert not SurveyBootstrap.objects.exists()


def test_an_answer_study_not_drawn_yet_says_so(researcher_client):
    study = answers_study()

    response = researcher_client.get(report_url(study))

    assert response.status_code == 200
    assert 'data-testid="not-drawn"' in response.content.decode()
    url = reverse("analysis:answer_study_table_csv", args=[study.pk, "method"])
    assert researcher_client.get(url).status_code == 404


# --- the intervals ----------------------------------------------------------------------------


def test_an_htmx_request_gets_only_the_intervals_panel(researcher_client, built):
    response = researcher_client.get(report_url(built.study), **HX)

    html = response.content.decode()
    assert html.strip().startswith('<section id="bootstrap"')
    assert html.count("<section") == 1
    assert "data-table" not in html and "<h1>" not in html
    assert "Compute the confidence intervals" in html


def test_asking_for_the_intervals_queues_one_bootstrap_of_this_report(
    researcher_client, built, django_capture_on_commit_callbacks
):
    study = built.study
    url = reverse("analysis:answer_study_bootstrap", args=[study.pk])

    with django_capture_on_commit_callbacks() as queued:
        response = researcher_client.post(url)

    assert response.status_code == 302
    assert response["Location"] == report_url(study)
    bootstrap = SurveyBootstrap.objects.get(study=study)
    assert bootstrap.report == BootstrapReport.ANSWERS
    assert bootstrap.status == BootstrapStatus.QUEUED
    assert bootstrap.fingerprint == answer_study_fingerprint(study=study)
    assert len(queued) == 1

    with django_capture_on_commit_callbacks() as queued_again:
        researcher_client.post(url)
    assert SurveyBootstrap.objects.filter(study=study).count() == 1
    assert queued_again == []
    # The survey report's intervals are another bootstrap, not this one.
    survey_url = reverse("analysis:survey_report", args=[study.pk])
    assert "Compute the confidence intervals" in researcher_client.get(survey_url).text

    page = researcher_client.get(report_url(study), **HX).content.decode()
    assert "Waiting for a worker" in page
    assert 'hx-trigger="every 1s"' in page
    # Without htmx, the same progress in the whole page.
    page = researcher_client.get(report_url(study)).content.decode()
    assert "Waiting for a worker" in page and "<h1>" in page


def test_the_poll_that_finds_the_intervals_done_brings_the_sections_with_them(
    researcher_client, built
):
    study = built.study
    bootstrap, _started = services.answer_study_bootstrap_request(study=study)
    done = services.survey_bootstrap_compute(bootstrap_id=bootstrap.pk)
    assert done is not None and done.status == BootstrapStatus.DONE
    assert done.intervals

    html = researcher_client.get(report_url(study), **HX).content.decode()

    assert "They are shown in the tables below." in html
    assert "hx-trigger" not in html
    sections = answer_study_report(answer_study_data(study=study)).sections
    for slug, _heading, names in sections:
        oob = f'id="{slug}" aria-labelledby="{slug}-heading" data-section="{slug}" hx-swap-oob'
        # The method panel holds no interval: it stays as it is.
        assert (oob in html) == (names != ["method"]), slug
    # The ranking's people's strengths now have their intervals.
    ranking = [row for row in report_rows(researcher_client, study, "ranking")]
    assert ranking and all(row["low"] is not None for row in ranking if row["strength"] is not None)
    # The whole page shows them too, until the data changes.
    page = researcher_client.get(report_url(study))
    assert page.context["bootstrap"].pk == done.pk
    assert "They are shown in the tables below." in page.content.decode()

    answer = Answer.objects.filter(assignment__participant__study=study, item__code="HELP")[0]
    Answer.objects.filter(pk=answer.pk).update(value="1", saved_at=timezone.now())
    page = researcher_client.get(report_url(study)).content.decode()
    assert "Compute the confidence intervals" in page


def report_rows(client, study, name: str) -> list[dict]:
    return client.get(report_url(study)).context["report"].tables[name].rows


def test_a_failed_bootstrap_says_why_and_may_be_asked_again(researcher_client, built):
    study = built.study
    bootstrap, _started = services.answer_study_bootstrap_request(study=study)
    SurveyBootstrap.objects.filter(pk=bootstrap.pk).update(
        status=BootstrapStatus.FAILED, error="The worker ran out of memory."
    )

    html = researcher_client.get(report_url(study)).content.decode()

    assert "The last computation failed: The worker ran out of memory." in html
    assert "Compute the confidence intervals" in html


# --- the links to the report ------------------------------------------------------------------


def test_the_study_page_and_the_reports_page_link_an_answer_study_to_its_report(
    researcher_client, built, make_study
):
    scenarios = make_study(live=False, count=1, name="Scenario study")
    url = report_url(built.study)

    study_page = researcher_client.get(reverse("surveys:study_detail", args=[built.study.pk]))
    assert f'href="{url}"' in study_page.content.decode()
    other = researcher_client.get(reverse("surveys:study_detail", args=[scenarios.pk]))
    assert "Answer-study report" not in other.content.decode()

    index = researcher_client.get(reverse("analysis:index")).content.decode()
    assert f'href="{url}" data-testid="answer-study-report"' in index
    assert index.count('data-testid="answer-study-report"') == 1


def test_a_drawn_study_nobody_has_rated_yet_renders(researcher_client, built):
    Participant.objects.filter(study=built.study).delete()

    response = researcher_client.get(report_url(built.study))

    assert response.status_code == 200
    brief = {item["key"]: item for item in response.context["brief"]}
    assert brief["people"]["shown"] == "0"
    assert brief["pairs-top"]["names"] == []
    assert brief["pairs-top"]["shown"] == "Not yet measured"
    name = first_figure(built.study)
    url = reverse("analysis:answer_study_figure_svg", args=[built.study.pk, name])
    ET.fromstring(researcher_client.get(url).content)  # noqa: S314 (our own SVG)


def test_an_answer_the_viewer_still_grades_blind_is_left_out_of_the_answer_rows(client, built):
    researcher = user_with_role(Role.RESEARCHER)
    client.force_login(researcher)
    study = built.study
    rows = client.get(report_url(study)).context["report"].tables["criteria-answers"].rows
    blind = Response.objects.get(pk=rows[0]["response"])
    calibration = CalibrationSet.objects.create(
        name="Blind", sampling_run_id=built.grading.sampling_run_id, second_grader=researcher
    )
    CalibrationSample.objects.create(
        calibration_set=calibration,
        question=blind.question,
        response=blind,
        rubric=Rubric.objects.get(question=blind.question),
    )

    html = client.get(report_url(study)).content.decode()
    csv_url = reverse("analysis:answer_study_table_csv", args=[study.pk, "criteria-answers"])
    _header, *lines = body_rows(client.get(csv_url))

    viewer = reverse("grading:answers", args=[built.grading.pk])
    assert f'href="{viewer}?answer={blind.pk}"' not in html
    assert str(blind.pk) not in [line[-1] for line in lines]
    assert len(lines) == len([r for r in rows if r["response"] != blind.pk])
