"""The benchmark report's pages: who may see them, what they show, that each download is
the table it says it is, sorting and the choice of pairs, and hostile names kept inert."""

import csv
import html as html_lib
import io
import itertools
import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from apps.analysis.benchmark import benchmark_report_for
from apps.analysis.benchmark_compare import benchmark_comparison_for
from apps.grading.models import GradingRun
from apps.questions.models import Topic
from tests.analysis.benchmark_builders import (
    ERROR,
    FAILED,
    UNGRADED,
    Q,
    bench_committed,
    bench_make,
    grading_add,
)
from tests.conftest import ROLES

pytestmark = pytest.mark.django_db
SCRIPT = '<script>alert("model")</script>'
FORMULA = '=HYPERLINK("http://example.org","x")'
MODELS = {"Plain 1": "Plain", "Plain 2": "Plain", SCRIPT: "Hostile", FORMULA: "Hostile"}
# Shown on the report page, with a CSV link each; the long lists and the rubric versions
# are linked from it.
ON_PAGE = [
    "method",
    "table-1",
    "table-3",
    "table-4",
    "below-65",
    "wilcoxon",
    "kruskal",
    "ks-prior",
    "ks-sensemaking",
    "ks-guidance",
    "spearman",
    "spearman-topics",
    "skewness",
    "kurtosis",
    "missing",
    "errors",
]


def world():
    questions = [
        Q(
            f"v{i}",
            topic=("accounts", "scams", "harassment")[i % 3],
            prior=i % 2 == 0,
            sensemaking=i % 3 != 1,
            guidance=i % 2 == 1,
        )
        for i in range(6)
    ]
    answers = {}
    for m, model in enumerate(MODELS):
        for i, q in enumerate(questions):
            answers[(model, q.key)] = [((5 + 3 * m + 2 * i + s) % 21) / 20 for s in range(2)]
    answers[("Plain 2", "v0")] = [ERROR, 0.5]
    answers[("Plain 2", "v1")] = [FAILED]
    answers[("Plain 1", "v5")] = [UNGRADED, 0.3]
    bench = bench_make(models=MODELS, questions=questions, answers=answers, name="Views")
    regraded = {key: values for key, values in answers.items() if key[0] != FORMULA}
    grading_add(bench, answers=regraded, name="Views, second grader")
    return bench


@pytest.fixture(scope="module")
def bench(django_db_setup, django_db_blocker):
    with bench_committed(django_db_blocker, build=world) as made:
        yield made


@pytest.fixture
def other(bench):
    return bench.sampling.grading_runs.exclude(pk=bench.grading.pk).get()


@pytest.fixture
def researcher_client(role_client):
    return role_client(Role.RESEARCHER)


def urls(run, other) -> list[str]:
    """Every URL of the benchmark report (all GET)."""
    pk = run.pk
    return [
        reverse("analysis:benchmark_report", args=[pk]),
        reverse("analysis:benchmark_table_csv", args=[pk, "table-3"]),
        reverse("analysis:benchmark_figure_svg", args=[pk, "figure-3"]),
        reverse("analysis:benchmark_low_responses", args=[pk]),
        reverse("analysis:benchmark_low_questions", args=[pk]),
        reverse("analysis:benchmark_compare_choose", args=[pk]) + f"?with={other.pk}",
        reverse("analysis:benchmark_compare", args=[pk, other.pk]),
        reverse("analysis:benchmark_compare_csv", args=[pk, other.pk, "overall"]),
    ]


def test_every_benchmark_url_is_listed_here(bench, other):
    from apps.analysis.urls import urlpatterns

    mine = [p for p in urlpatterns if p.name.startswith("benchmark_")]
    assert len(urls(bench.grading, other)) == len(mine)


@pytest.mark.parametrize("role", ROLES, ids=lambda r: str(r or "no-role"))
def test_only_researchers_see_the_benchmark_pages(role_client, role, bench, other):
    client = role_client(role)
    for url in urls(bench.grading, other):
        response = client.get(url)
        if role == Role.RESEARCHER:
            expected = 302 if "/compare/?" in url else 200
            assert response.status_code == expected, url
        else:
            assert response.status_code == 403, url
        assert client.post(url).status_code in (403, 405), url


def test_anonymous_visitors_are_sent_to_login(client, bench, other):
    for url in urls(bench.grading, other):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_a_grading_run_that_does_not_exist_is_404(researcher_client, bench):
    missing = bench.grading.pk + 10**6
    assert (
        researcher_client.get(reverse("analysis:benchmark_report", args=[missing])).status_code
        == 404
    )
    for name in ("nothing", "low-questions"):
        url = reverse("analysis:benchmark_figure_svg", args=[bench.grading.pk, name])
        assert researcher_client.get(url).status_code == 404
    url = reverse("analysis:benchmark_table_csv", args=[bench.grading.pk, "nothing"])
    assert researcher_client.get(url).status_code == 404
    same = reverse("analysis:benchmark_compare", args=[bench.grading.pk, bench.grading.pk])
    assert researcher_client.get(same).status_code == 404


# --- the report page ------------------------------------------------------------------------


def test_the_report_shows_its_tables_figures_provenance_and_links(researcher_client, bench):
    run = bench.grading
    response = researcher_client.get(reverse("analysis:benchmark_report", args=[run.pk]))
    html = response.content.decode()
    report = response.context["report"]
    for name in ON_PAGE:
        assert f'data-table="{name}"' in html, name
        assert reverse("analysis:benchmark_table_csv", args=[run.pk, name]) in html, name
    for name in report.figures:
        assert f'data-figure="{name}"' in html
        assert reverse("analysis:benchmark_figure_svg", args=[run.pk, name]) in html
    assert f"Based on {report.n}." in html
    assert "grade a checklist prompt version 2" in report.n.lower()
    assert "version 1 for 6 questions" in html
    assert "55.8%" in html  # the worked example, with the scoring rule
    assert "ddof=1" in html
    assert reverse("analysis:benchmark_low_responses", args=[run.pk]) in html
    assert reverse("analysis:benchmark_low_questions", args=[run.pk]) in html
    assert f"{reverse('grading:judgments', args=[run.pk])}?status=error" in html
    assert 'data-testid="no-calibration"' in html
    assert reverse("grading:calibration_sets") in html
    assert "1 of them with an errored judgment" in html
    # Headings in order: one h1, then h2s.
    levels = [int(level) for level in re.findall(r"<h([1-6])[ >]", html)]
    assert levels[0] == 1 and levels.count(1) == 1
    assert all(b - a <= 1 for a, b in itertools.pairwise(levels))
    assert html.count("<caption>") >= len(ON_PAGE)


def cells_of(html: str, table: str) -> list[list[str]]:
    """The cells of `table`'s body as the page shows them, row by row, in column order."""
    body = re.search(rf'data-table="{table}">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [
        re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]


def viewer_count(client, cell: str) -> int:
    href = html_lib.unescape(re.fullmatch(r'<a href="([^"]+)" data-answers>.*</a>', cell).group(1))
    page = client.get(href).content.decode()
    found = re.search(r'data-testid="answer-count">([\d,]+) answer', page).group(1)
    return int(found.replace(",", ""))


@pytest.mark.parametrize(
    "table,column",
    [
        ("table-3", "answers"),
        ("below-65", "below"),
        ("figure-3", "count"),
        ("skewness", "n"),
    ],
)
def test_each_count_of_answers_in_the_report_opens_exactly_those_answers(
    researcher_client, bench, table, column
):
    """Every non-zero count of answers is a link to the answer viewer, which finds as many:
    a model's scored answers, its answers below 65% (and all models'), a histogram's bin."""
    run = bench.grading
    html = researcher_client.get(reverse("analysis:benchmark_report", args=[run.pk])).text
    report = benchmark_report_for(run=run)
    shape = report.tables[table] if table in report.tables else report.figures[table].table
    at = [c.key for c in shape.columns].index(column)
    followed = 0
    for row in cells_of(html, table):
        shown = re.sub(r"<[^>]+>", "", row[at])
        if shown in ("0", ""):
            assert "data-answers" not in row[at] or shown == "0"
            continue
        assert viewer_count(researcher_client, row[at]) == int(shown.replace(",", "")), row[0]
        followed += 1
    assert followed >= 3


def test_a_topics_mean_and_a_criterion_kinds_rate_open_their_answers(researcher_client, bench):
    run = bench.grading
    html = researcher_client.get(reverse("analysis:benchmark_report", args=[run.pk])).text
    topic = Topic.objects.get(name="scams")
    links = re.findall(r'href="([^"]+)" data-answers', html)
    viewer = reverse("grading:answers", args=[run.pk])
    assert links and all(link.startswith(viewer + "?") for link in links)
    assert any(f"topic={topic.slug}" in link for link in links)
    met = [html_lib.unescape(link) for link in links if "verdict=met" in link]
    assert met and all("polarity=" in link and "kind=" in link for link in met)
    page = researcher_client.get(met[0])
    assert page.status_code == 200 and 'data-testid="answer-count"' in page.text


def test_the_grading_run_page_and_the_reports_page_link_to_the_report(researcher_client, bench):
    url = reverse("analysis:benchmark_report", args=[bench.grading.pk])
    run_page = researcher_client.get(reverse("grading:run_detail", args=[bench.grading.pk]))
    assert f'href="{url}"' in run_page.content.decode()
    index = researcher_client.get(reverse("analysis:index")).content.decode()
    assert f'<a href="{url}">Views</a>' in index
    assert 'data-testid="benchmark-reports"' in index


def body_rows(response) -> list[list[str]]:
    body = b"".join(response.streaming_content).decode("utf-8")
    return list(csv.reader(io.StringIO(body)))


def as_written(value) -> str:
    return "" if value is None else str(value)


def test_every_table_and_figure_downloads_as_its_data(researcher_client, bench):
    run = bench.grading
    report = benchmark_report_for(run=run)
    tables = {**report.tables, **{name: f.table for name, f in report.figures.items()}}
    assert len(tables) == 20 + 4 + 1  # the tables, the figures, the method panel
    for name, table in tables.items():
        response = researcher_client.get(
            reverse("analysis:benchmark_table_csv", args=[run.pk, name])
        )
        assert response.status_code == 200, name
        assert response["Content-Type"] == "text/csv; charset=utf-8"
        assert f'filename="grading-{run.pk}-{name}.csv"' in response["Content-Disposition"]
        header, *rows = body_rows(response)
        assert header == [column.label for column in table.columns], name
        expected = [[as_written(v) for v in row] for row in table.raw_rows()]
        neutral = [[cell.removeprefix("'") for cell in row] for row in rows]
        assert neutral == expected, name


def test_every_figure_is_served_as_svg_that_parses(researcher_client, bench):
    run = bench.grading
    for name in benchmark_report_for(run=run).figures:
        response = researcher_client.get(
            reverse("analysis:benchmark_figure_svg", args=[run.pk, name])
        )
        assert response.status_code == 200, name
        assert response["Content-Type"].startswith("image/svg+xml")
        assert "default-src 'none'" in response["Content-Security-Policy"]
        root = ET.fromstring(response.content)  # noqa: S314 (our own SVG)
        assert root.tag == "{http://www.w3.org/2000/svg}svg", name


# --- sorting and pairs ------------------------------------------------------------------------


def table3_models(html: str) -> list[str]:
    body = html.split('data-table="table-3"', 1)[1].split("</tbody>", 1)[0]
    # A model's name is a link to its answers: the name is the link's text.
    return [
        re.sub(r"<[^>]+>", "", name) for name in re.findall(r'<th scope="row">(.*?)</th>', body)
    ]


def test_table_3_sorts_on_the_server_and_its_csv_keeps_the_order(researcher_client, bench):
    run = bench.grading
    url = reverse("analysis:benchmark_report", args=[run.pk])
    report = benchmark_report_for(run=run)
    means = {r["model"]: r["mean"] for r in report.tables["table-3"].rows[:-1]}
    # The All models row stays last either way.
    rising = [name for name, _ in sorted(means.items(), key=lambda kv: (kv[1], kv[0]))]
    rising, falling = [*rising, "All models"], [*rising[::-1], "All models"]

    html = researcher_client.get(url, {"sort": "mean", "dir": "asc"}).content.decode()
    assert [html_lib.unescape(m) for m in table3_models(html)] == rising
    assert re.search(
        r'<th scope="col" class="num" aria-sort="ascending"><a href="\?sort=mean&amp;dir=desc"',
        html,
    )
    assert html.count("aria-sort=") == 1
    csv_url = (
        reverse("analysis:benchmark_table_csv", args=[run.pk, "table-3"]) + "?sort=mean&amp;dir=asc"
    )
    assert csv_url in html
    _header, *rows = body_rows(researcher_client.get(csv_url.replace("&amp;", "&")))
    assert [row[0].removeprefix("'") for row in rows] == rising

    down = researcher_client.get(url, {"sort": "mean", "dir": "desc"}).content.decode()
    assert [html_lib.unescape(m) for m in table3_models(down)] == falling
    assert 'aria-sort="descending"' in down
    # An unknown column leaves the table in its own order (models by name), unsorted.
    plain = researcher_client.get(url, {"sort": "</th><script>", "dir": "up"}).content.decode()
    assert "aria-sort=" not in plain
    assert [html_lib.unescape(m) for m in table3_models(plain)] == [
        r["model"] for r in report.tables["table-3"].rows
    ]
    assert "</th><script>" not in plain


def test_chosen_pairs_are_tested_and_invalid_ones_refused_with_a_reason(researcher_client, bench):
    run = bench.grading
    url = reverse("analysis:benchmark_report", args=[run.pk])
    plain1, script = bench.models["Plain 1"], bench.models[SCRIPT]
    default = researcher_client.get(url)
    rows = default.context["report"].tables["wilcoxon"].rows
    assert [r["pair"] for r in rows] == [f"{SCRIPT} vs {FORMULA}", "Plain 1 vs Plain 2"]
    html = default.content.decode()
    assert html.count('type="checkbox" name="pair"') == 6  # every pair of the 4 models
    assert html.count(" checked>") == 2

    chosen = researcher_client.get(url, {"pair": f"{plain1.pk}-{script.pk}"})
    (row,) = chosen.context["report"].tables["wilcoxon"].rows
    assert row["pair"] == f"Plain 1 vs {SCRIPT}"
    assert 'data-testid="refused-pairs"' not in chosen.content.decode()
    csv_url = reverse("analysis:benchmark_table_csv", args=[run.pk, "wilcoxon"])
    _header, *csv_rows = body_rows(
        researcher_client.get(csv_url, {"pair": f"{plain1.pk}-{script.pk}"})
    )
    assert len(csv_rows) == 1 and csv_rows[0][0] == row["pair"]

    refused = researcher_client.get(
        url, {"pair": ["x-1", f"{plain1.pk}-{plain1.pk}", "1-999999999"]}
    )
    assert refused.status_code == 200
    page = refused.content.decode()
    assert 'data-testid="refused-pairs"' in page
    assert "is not a pair" in page and "with itself" in page and "no answers in this" in page
    assert "the default pairs are shown instead" in page
    assert [r["pair"] for r in refused.context["report"].tables["wilcoxon"].rows] == [
        r["pair"] for r in rows
    ]
    # One good pair among bad ones: the good one is tested, the others named.
    mixed = researcher_client.get(url, {"pair": ["nonsense", f"{plain1.pk}-{script.pk}"]})
    assert [r["pair"] for r in mixed.context["report"].tables["wilcoxon"].rows] == [row["pair"]]
    assert "“nonsense” is not a pair" in mixed.content.decode()


# --- the headline and Table 1 ------------------------------------------------------------------


def test_the_headline_opens_the_report_with_each_figures_n(researcher_client, bench):
    run = bench.grading
    response = researcher_client.get(reverse("analysis:benchmark_report", args=[run.pk]))
    html = response.content.decode()
    headline = html.index('data-testid="headline"')
    assert headline < html.index('id="provenance-heading"') < html.index('id="table3-heading"')
    rows = {r["figure"]: r for r in response.context["report"].tables["headline"].rows}
    everyone = rows["Mean over all models"]
    shown = html[headline:].split("</dl>", 1)[0]
    item = shown.split('data-headline="mean"', 1)[1].split("</div>", 1)[0]
    assert "<dt>Mean over all models</dt>" in item
    assert f'data-testid="headline-mean">{everyone["value"]:.1f}%</span>' in item
    assert f"4 models, 6 questions, {everyone['answers']} scored answers" in item
    worst = rows["Worst topic"]
    item = shown.split('data-headline="worst-topic"', 1)[1].split("</div>", 1)[0]
    assert f">{worst['value']:.1f}%</span>" in item and f">{worst['which']}</span>" in item
    below = rows["Answers below 65%"]
    item = shown.split('data-headline="below"', 1)[1].split("</div>", 1)[0]
    assert f">{below['value']:.1f}%</span>" in item and f">{below['which']}</span>" in item
    # No calibration yet: the auto-rater's agreement is said not to be measured.
    item = shown.split('data-headline="rater"', 1)[1].split("</div>", 1)[0]
    assert ">Not yet measured</span>" in item
    csv_url = reverse("analysis:benchmark_table_csv", args=[run.pk, "headline"])
    assert csv_url in html


def test_table_1_is_chosen_on_the_page_and_its_csv_is_the_table_shown(researcher_client, bench):
    run = bench.grading
    url = reverse("analysis:benchmark_report", args=[run.pk])
    plain1, plain2 = bench.models["Plain 1"], bench.models["Plain 2"]
    default = researcher_client.get(url)
    rows = {r["family"]: r for r in default.context["report"].tables["table-1"].rows}
    # No release dates here: each family's model added last.
    assert (rows["Plain"]["model"], rows["Hostile"]["model"]) == ("Plain 2", FORMULA)
    html = default.content.decode()
    # A form that works without JavaScript: a select per family, its default first.
    assert html.count('name="table1"') == 2
    assert '<option value="">Default: Plain 2 (added last; no release dates)</option>' in html
    assert " selected>" not in html

    chosen = researcher_client.get(url, {"table1": ["", str(plain1.pk)], "sort": "mean"})
    report = chosen.context["report"]
    rows = {r["family"]: r for r in report.tables["table-1"].rows}
    assert rows["Plain"]["model"] == "Plain 1"
    assert rows["Plain"]["rule"] == "Chosen instead of the family's newest (Plain 2)"
    assert rows["Hostile"]["model"] == FORMULA
    page = chosen.content.decode()
    assert f'<option value="{plain1.pk}" selected>Plain 1</option>' in page
    assert "Chosen instead of" in page
    # The pairs' form keeps the choice; sorting Table 3 keeps it too.
    assert f'<input type="hidden" name="table1" value="{plain1.pk}">' in page
    assert f"table1={plain1.pk}" in page.split('data-table="table-3"', 1)[1].split("</thead>")[0]
    csv_url = reverse("analysis:benchmark_table_csv", args=[run.pk, "table-1"])
    assert f'{csv_url}?table1={plain1.pk}"' in page
    header, *csv_rows = body_rows(researcher_client.get(csv_url, {"table1": plain1.pk}))
    table = report.tables["table-1"]
    assert header == [c.label for c in table.columns]
    assert [[c.removeprefix("'") for c in r] for r in csv_rows] == [
        [as_written(v) for v in row] for row in table.raw_rows()
    ]
    assert csv_rows[1][1] == "Plain 1" and csv_rows[1][4].startswith("Chosen instead of")
    # Back to the defaults, keeping the sort.
    assert f"{url}?sort=mean#table1-heading" in page
    assert (
        researcher_client.get(url, {"table1": plain2.pk}).context["report"].tables["table-1"].rows
        == default.context["report"].tables["table-1"].rows
    )


def test_a_bad_table_1_choice_is_refused_on_the_page_with_its_reason(researcher_client, bench):
    run = bench.grading
    url = reverse("analysis:benchmark_report", args=[run.pk])
    plain1, plain2 = bench.models["Plain 1"], bench.models["Plain 2"]
    response = researcher_client.get(url, {"table1": ["x", str(plain1.pk), str(plain2.pk)]})
    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-testid="refused-table1"' in page
    assert "“x” is not a model id." in page
    assert "“Plain 2” and “Plain 1” are both of the family Plain" in page
    assert "the other families show their newest model" in page
    rows = {r["family"]: r for r in response.context["report"].tables["table-1"].rows}
    assert rows["Plain"]["model"] == "Plain 1"  # the first choice of the family stands
    alone = researcher_client.get(url, {"table1": "999999999"})
    html = alone.content.decode()
    assert "names no model that answered in this sampling run" in html
    assert "each family shows its newest model instead" in html
    csv_url = reverse("analysis:benchmark_table_csv", args=[run.pk, "table-1"])
    _header, *rows = body_rows(researcher_client.get(csv_url, {"table1": "999999999"}))
    assert [r[1] for r in rows] == ["'" + FORMULA, "Plain 2"]  # families by name


@pytest.mark.parametrize("value", ["²", "\u0661", "\x00", "9" * 30])  # isdigit() says yes to 3
def test_ids_that_are_not_ascii_digits_are_refused_with_a_reason(researcher_client, bench, value):
    run = bench.grading
    url = reverse("analysis:benchmark_report", args=[run.pk])
    page = researcher_client.get(url, {"pair": f"{value}-1", "table1": value})
    assert page.status_code == 200
    assert 'data-testid="refused-pairs"' in page.text
    assert 'data-testid="refused-table1"' in page.text
    csv_url = reverse("analysis:benchmark_table_csv", args=[run.pk, "wilcoxon"])
    assert researcher_client.get(csv_url, {"pair": f"1-{value}"}).status_code == 200
    choose = reverse("analysis:benchmark_compare_choose", args=[run.pk])
    assert researcher_client.get(choose, {"with": value})["Location"] == url


# --- hostile names ----------------------------------------------------------------------------


def test_hostile_names_are_escaped_in_html_and_neutralised_in_csv(researcher_client, bench, other):
    run = bench.grading
    Topic.objects.filter(name="scams").update(name='<img src=x onerror="alert(1)">')
    pages = [
        reverse("analysis:benchmark_report", args=[run.pk]),
        reverse("analysis:benchmark_low_responses", args=[run.pk]),
        reverse("analysis:benchmark_low_questions", args=[run.pk]),
        reverse("analysis:benchmark_compare", args=[run.pk, other.pk]),
    ]
    for url in pages:
        html = researcher_client.get(url).content.decode()
        assert SCRIPT not in html and "<img src=x onerror" not in html, url
    report_html = researcher_client.get(pages[0]).content.decode()
    assert "&lt;script&gt;alert(&quot;model&quot;)&lt;/script&gt;" in report_html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in report_html
    assert FORMULA.replace('"', "&quot;") in report_html

    for name in ("table-3", "below-65", "figure-5", "low-responses"):
        rows = body_rows(
            researcher_client.get(reverse("analysis:benchmark_table_csv", args=[run.pk, name]))
        )
        cells = [cell for row in rows for cell in row]
        assert "'" + FORMULA in cells, name
        assert FORMULA not in cells, name
    rows = body_rows(
        researcher_client.get(reverse("analysis:benchmark_table_csv", args=[run.pk, "figure-5"]))
    )
    assert '<img src=x onerror="alert(1)">' in [row[0] for row in rows]  # text, kept as it is
    svg = researcher_client.get(reverse("analysis:benchmark_figure_svg", args=[run.pk, "figure-3"]))
    ET.fromstring(svg.content)  # noqa: S314 (our own SVG): escaped, it still parses
    assert SCRIPT.encode() not in svg.content


# --- the long lists ---------------------------------------------------------------------------


def test_the_answers_below_65_link_to_their_judgments(researcher_client, bench):
    run = bench.grading
    report = benchmark_report_for(run=run)
    low = report.tables["low-responses"].rows
    assert low
    html = researcher_client.get(
        reverse("analysis:benchmark_low_responses", args=[run.pk])
    ).content.decode()
    assert html.count('data-testid="low-response"') == min(50, len(low))
    judgments = reverse("grading:judgments", args=[run.pk])
    assert f"{judgments}?response={low[0]['response']}" in html
    page = researcher_client.get(judgments, {"response": low[0]["response"]})
    shown = page.context["page"].object_list
    assert shown and {j.response_id for j in shown} == {low[0]["response"]}
    assert 'data-testid="judgments-focus"' in page.content.decode()
    assert f'name="response" value="{low[0]["response"]}"' in page.content.decode()


def test_the_questions_below_65_link_to_their_judgments(researcher_client, bench):
    run = bench.grading
    low = benchmark_report_for(run=run).tables["low-questions"].rows
    assert low
    html = researcher_client.get(
        reverse("analysis:benchmark_low_questions", args=[run.pk])
    ).content.decode()
    judgments = reverse("grading:judgments", args=[run.pk])
    for row in low:
        assert f"{judgments}?question={row['question_id']}" in html
    page = researcher_client.get(judgments, {"question": low[0]["question_id"]})
    questions = {j.response.question_id for j in page.context["page"].object_list}
    assert questions == {low[0]["question_id"]}
    assert f"question {low[0]['question']}" in page.content.decode()


def test_the_long_lists_are_paginated(researcher_client):
    questions = [Q(f"p{i:02d}") for i in range(60)]
    answers = {("Low", q.key): [0.1] for q in questions}
    made = bench_make(models={"Low": "L"}, questions=questions, answers=answers, name="Long")
    url = reverse("analysis:benchmark_low_questions", args=[made.grading.pk])
    first = researcher_client.get(url).content.decode()
    assert first.count('data-testid="low-question"') == 50
    assert "Page 1 of 2" in first and "?page=2" in first
    second = researcher_client.get(url, {"page": 2}).content.decode()
    assert second.count('data-testid="low-question"') == 10


# --- side by side, and an empty run -----------------------------------------------------------


def test_the_chooser_opens_two_runs_side_by_side(researcher_client, bench, other):
    run = bench.grading
    choose = reverse("analysis:benchmark_compare_choose", args=[run.pk])
    response = researcher_client.get(choose, {"with": other.pk})
    assert response["Location"] == reverse("analysis:benchmark_compare", args=[run.pk, other.pk])
    for bad in ("", "x", str(run.pk), str(run.pk + 10**6)):
        response = researcher_client.get(choose, {"with": bad})
        assert response["Location"] == reverse("analysis:benchmark_report", args=[run.pk]), bad
    page = researcher_client.get(
        reverse("analysis:benchmark_report", args=[run.pk])
    ).content.decode()
    assert f'<option value="{other.pk}">' in page and "same sampling run" in page

    compare = researcher_client.get(reverse("analysis:benchmark_compare", args=[run.pk, other.pk]))
    html = compare.content.decode()
    comparison = benchmark_comparison_for(run=run, other=other)
    for name, table in comparison.tables.items():
        assert f'data-table="{name}"' in html
        csv_url = reverse("analysis:benchmark_compare_csv", args=[run.pk, other.pk, name])
        assert csv_url in html
        header, *rows = body_rows(researcher_client.get(csv_url))
        assert header == [c.label for c in table.columns]
        assert [[c.removeprefix("'") for c in r] for r in rows] == [
            [as_written(v) for v in row] for row in table.raw_rows()
        ], name
    assert "offline-grader (Views, second grader)" in html


def test_an_empty_grading_run_renders_every_page(researcher_client):
    made = bench_make(
        models={"Nobody": "N"},
        questions=[Q("z1")],
        answers={("Nobody", "z1"): [UNGRADED]},
        name="Empty",
    )
    run = made.grading
    for url in (
        reverse("analysis:benchmark_report", args=[run.pk]),
        reverse("analysis:benchmark_low_responses", args=[run.pk]),
        reverse("analysis:benchmark_low_questions", args=[run.pk]),
    ):
        response = researcher_client.get(url)
        assert response.status_code == 200, url
    html = researcher_client.get(
        reverse("analysis:benchmark_report", args=[run.pk])
    ).content.decode()
    assert "0 scored answers of 1 (1 without a score)" in html
    assert "Not enough data" in html
    assert (
        "No scored answer is below 65%."
        in researcher_client.get(
            reverse("analysis:benchmark_low_responses", args=[run.pk])
        ).content.decode()
    )
    for name in ("figure-3", "figure-5"):
        svg = researcher_client.get(reverse("analysis:benchmark_figure_svg", args=[run.pk, name]))
        assert b"No data" in svg.content


def test_a_grading_run_the_demo_made_states_what_made_it_with_its_parameters(
    researcher_client, bench
):
    run = bench.grading
    url = reverse("analysis:benchmark_report", args=[run.pk])
    assert 'data-testid="demo-notice"' not in researcher_client.get(url).text
    record = {
        "made_by": "the demo",
        "parts": [
            {
                "what": "Grades",
                "how": "By an offline grader.",
                "parameters": [
                    {"name": "default_threshold", "value": 0.5, "about": SCRIPT},
                    {
                        "name": "Offline Expert A (demo): grading_threshold",
                        "value": 0.44,
                        "about": "its share of key terms",
                    },
                ],
            },
        ],
    }
    GradingRun.objects.filter(pk=run.pk).update(simulation=record)

    html = researcher_client.get(url).text

    start = html.index('data-testid="demo-notice"')
    notice = html[start : html.index("</section>", start)]
    assert "by construction of these parameters: it is not a finding" in notice
    assert '<code>default_threshold</code></th><td class="num">0.5</td>' in notice
    assert (
        '<code>Offline Expert A (demo): grading_threshold</code></th><td class="num">0.44' in notice
    )
    assert html_lib.escape(SCRIPT) in notice and SCRIPT not in html
    # Near the top: before the first of the report's tables.
    assert start < html.index('data-table="table-3"')
