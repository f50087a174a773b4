import copy
import csv
import io
from pathlib import Path

import numpy as np
import pytest
from django.template.loader import render_to_string

from apps.analysis.tables import Column, Table, table_csv_response
from apps.console.csv_export import spreadsheet_safe

ANALYSIS_TEMPLATES = Path(__file__).resolve().parents[2] / "apps" / "analysis" / "templates"
HOSTILE = '<script>alert(1)</script> & "x"'
FORMULAS = ['=HYPERLINK("http://evil.example","click")', "+1", "-2", "@x"]


def agreement_table(**overrides) -> Table:
    kwargs = {
        "name": "agreement",
        "title": "Agreement with people, by proxy",
        "columns": [
            Column("model", "Rater"),
            Column("answers", "Answers", kind="int"),
            Column("mean", "Mean rating", kind="float", digits=2),
            Column("exact", "Exact agreement", kind="percent", digits=1),
        ],
        "rows": [
            {"model": "People (n=94)", "answers": 3150, "mean": 3.456789, "exact": 100 / 3},
            {"model": "offline-terse", "answers": 90, "mean": None, "exact": float("nan")},
        ],
        "notes": ["Proxies answered each scenario three times."],
        "n": "90 scenarios, 94 people, 3,150 answers",
    }
    return Table(**kwargs | overrides)


def download(table: Table, filename="agreement.csv"):
    response = table_csv_response(table, filename=filename)
    assert response.streaming, "the CSV is streamed, not built in memory"
    body = b"".join(response.streaming_content).decode("utf-8")
    return response, list(csv.reader(io.StringIO(body)))


@pytest.fixture
def analysis_templates(settings):
    # The partials are rendered by the site's own engine; naming their folder keeps these
    # tests independent of the analysis app's place in INSTALLED_APPS.
    templates = copy.deepcopy(settings.TEMPLATES)
    templates[0]["DIRS"] = [*templates[0]["DIRS"], ANALYSIS_TEMPLATES]
    settings.TEMPLATES = templates


def test_formatted_rows_round_for_reading_and_show_missing_values_as_a_dash():
    assert agreement_table().formatted_rows() == [
        ["People (n=94)", "3,150", "3.46", "33.3%"],
        ["offline-terse", "90", "\u2014", "\u2014"],
    ]


def test_float_columns_show_three_decimals_unless_told_otherwise():
    table = agreement_table(
        columns=[Column("model", "Rater"), Column("mean", "Mean", kind="float")]
    )
    assert table.formatted_rows()[0] == ["People (n=94)", "3.457"]


def test_a_bounded_p_too_small_to_show_reads_as_a_bound_and_keeps_its_value_in_the_csv():
    p = Column("p", "p", kind="float", digits=4, bounded=True)
    assert [p.format(v) for v in (0.0, 4.9e-5, 5e-5, 0.0312, None)] == [
        "< 0.0001",
        "< 0.0001",
        "0.0001",
        "0.0312",
        "\u2014",
    ]
    assert Column("p", "p", kind="float", digits=4).format(0.0) == "0.0000"  # unbounded
    table = agreement_table(columns=[Column("model", "Rater"), p], rows=[{"model": "m", "p": 1e-9}])
    assert table.formatted_rows() == [["m", "< 0.0001"]]
    _response, rows = download(table)
    assert rows[1] == ["m", "1e-09"]


def test_numpy_numbers_format_like_python_ones():
    table = agreement_table(
        rows=[
            {
                "model": "m",
                "answers": np.int64(1200),
                "mean": np.float32(2.5),
                "exact": np.float64("nan"),
            }
        ]
    )
    assert table.formatted_rows() == [["m", "1,200", "2.50", "\u2014"]]


def test_csv_has_one_header_row_of_labels_and_the_raw_values_at_full_precision():
    response, rows = download(agreement_table())
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="agreement.csv"'
    assert rows[0] == ["Rater", "Answers", "Mean rating", "Exact agreement"]
    people, proxy = rows[1:]
    assert people[:2] == ["People (n=94)", "3150"]
    assert float(people[2]) == 3.456789
    assert float(people[3]) == 100 / 3  # not the 33.3 the page shows
    assert proxy == ["offline-terse", "90", "", ""]  # None and NaN: empty cells
    assert len(rows) == 3


def test_csv_neutralises_formulas_in_text_cells_and_labels_as_the_console_does():
    table = Table(
        name="hostile",
        title="Hostile",
        columns=[Column("model", "=cmd|' /C calc'!A0"), Column("score", "Score", kind="float")],
        rows=[{"model": formula, "score": -2.5} for formula in FORMULAS],
    )
    _, rows = download(table)
    assert rows[0][0] == spreadsheet_safe("=cmd|' /C calc'!A0") == "'=cmd|' /C calc'!A0"
    assert [row[0] for row in rows[1:]] == ["'" + formula for formula in FORMULAS]
    assert [row[0] for row in rows[1:]] == [spreadsheet_safe(formula) for formula in FORMULAS]
    assert {row[1] for row in rows[1:]} == {"-2.5"}, "a negative number stays a number"


def test_csv_writes_numpy_numbers_as_numbers():
    table = Table(
        name="np",
        title="NumPy",
        columns=[Column("a", "A", kind="int"), Column("b", "B", kind="float")],
        rows=[{"a": np.int64(-2), "b": np.float64(0.1) + np.float64(0.2)}],
    )
    _, rows = download(table)
    assert rows[1][0] == "-2"
    assert rows[1][1] == "0.30000000000000004"


def test_csv_filename_cannot_break_the_header():
    response, _ = download(agreement_table(), filename='a"b\r\nSet-Cookie: x.csv')
    assert response["Content-Disposition"] == 'attachment; filename="a-b-Set-Cookie-x.csv"'


def test_table_partial_is_an_accessible_table_with_its_basis_notes_and_download(analysis_templates):
    html = render_to_string(
        "analysis/_table.html", {"table": agreement_table(), "csv_url": "/reports/1/agreement.csv"}
    )
    region = 'tabindex="0" role="region" aria-label="Agreement with people, by proxy"'
    assert f'<div class="table-scroll" {region}>' in html
    assert "<caption>Agreement with people, by proxy</caption>" in html
    # Numbers are set right, their headers with them; the row headers' column is text.
    assert html.count('<th scope="col">') == 1 and html.count('<th scope="col" class="num">') == 3
    assert '<th scope="row">People (n=94)</th>' in html
    numbers = ("3.46", "33.3%", "\u2014")
    assert all(f'<td class="num">{n}</td>' in html for n in numbers)
    assert "Based on 90 scenarios, 94 people, 3,150 answers." in html
    assert "<li>Proxies answered each scenario three times.</li>" in html
    assert '<a href="/reports/1/agreement.csv" download>Download CSV' in html


def test_table_partial_without_a_csv_url_offers_no_download(analysis_templates):
    html = render_to_string("analysis/_table.html", {"table": agreement_table()})
    assert "Download" not in html


def test_table_partial_says_so_when_there_are_no_rows(analysis_templates):
    html = render_to_string("analysis/_table.html", {"table": agreement_table(rows=[])})
    assert '<td colspan="4">No data.</td>' in html


def test_partials_escape_a_hostile_title_labels_and_cells(analysis_templates):
    table = agreement_table(
        title=HOSTILE,
        columns=[Column("model", HOSTILE), Column("answers", "Answers", kind="int")],
        rows=[{"model": HOSTILE, "answers": 1}],
        notes=[HOSTILE],
        n=HOSTILE,
    )
    context = {"table": table, "csv_url": "/x.csv", "svg_url": "/x.svg"}
    for template in ["analysis/_table.html", "analysis/_figure.html"]:
        html = render_to_string(template, context)
        assert "<script" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;" in html


def test_figure_partial_shows_the_plot_as_an_image_with_caption_download_and_data_table(
    analysis_templates,
):
    html = render_to_string(
        "analysis/_figure.html",
        {
            "table": agreement_table(),
            "svg_url": "/reports/1/agreement.svg",
            "csv_url": "/reports/1/agreement.csv",
        },
    )
    assert (
        '<img src="/reports/1/agreement.svg" alt="Chart: Agreement with people, by proxy.' in html
    )
    assert "<figcaption>Agreement with people, by proxy" in html
    assert '<a href="/reports/1/agreement.csv" download>Download data (CSV)' in html
    assert "<summary>Show the data as a table</summary>" in html
    details = html[html.index("<details>") : html.index("</details>")]
    assert '<th scope="row">People (n=94)</th>' in details
    # Said once, beside the figure, not again under its table.
    assert html.count("Based on 90 scenarios") == 1
    assert html.count("Proxies answered each scenario three times.") == 1
    assert "Download CSV" not in html
