"""An answer study's report in the API: its tables listed, each as JSON and as the page's own
CSV; a study of scenarios has none. Who may read it: tests/api/test_permissions.py, which
takes every operation from the schema."""

import csv
import io
import math

import pytest
from django.urls import reverse

from apps.accounts.roles import Role
from tests.analysis.answer_study_builders import hand_study_make

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


@pytest.fixture
def built():
    return hand_study_make()


def base(study) -> str:
    return f"/api/v1/reports/studies/{study.pk}/answers/"


def test_the_answer_study_report_lists_its_tables(api, built):
    body = api.get(base(built.study)).json()

    assert body["study"] == built.study.pk
    assert body["grading_run"] == built.grading.pk
    assert body["sampling_run"] == built.grading.sampling_run_id
    names = [t["name"] for t in body["tables"]]
    assert "method" in names
    assert any(t["figure"] for t in body["tables"])
    assert all(set(t) == {"name", "title", "n", "figure"} for t in body["tables"])


def test_each_table_is_the_pages_table_with_missing_values_as_null(api, role_client, built):
    study = built.study
    names = [t["name"] for t in api.get(base(study)).json()["tables"]]
    page = role_client(Role.RESEARCHER)
    for name in names:
        table = api.get(f"{base(study)}tables/{name}/").json()
        assert table["name"] == name
        assert set(table) == {"name", "title", "n", "notes", "columns", "rows"}
        keys = [c["key"] for c in table["columns"]]
        assert all(list(row) == keys for row in table["rows"]), name
        assert not any(
            isinstance(v, float) and math.isnan(v) for row in table["rows"] for v in row.values()
        ), name
        api_csv = b"".join(api.get(f"{base(study)}tables/{name}.csv").streaming_content)
        page_csv = page.get(reverse("analysis:answer_study_table_csv", args=[study.pk, name]))
        assert api_csv == b"".join(page_csv.streaming_content), name
        assert len(list(csv.reader(io.StringIO(api_csv.decode())))) == len(table["rows"]) + 1


def test_a_study_of_scenarios_or_an_unknown_table_is_a_404(api, built, make_study):
    scenarios = make_study(live=False, count=1)
    for url in (
        base(scenarios),
        f"{base(scenarios)}tables/method/",
        f"{base(built.study)}tables/nothing/",
        f"{base(built.study)}tables/nothing.csv",
        "/api/v1/reports/studies/999999/answers/",
    ):
        response = api.get(url)
        assert response.status_code == 404, url
        assert response.json()["error"]["code"] == "not_found"


def test_an_answer_studys_answers_are_listed_with_no_scenario(api, built):
    body = api.get("/api/v1/answers/", {"study": built.study.pk, "page_size": 1000}).json()

    assert body["results"]
    assert all(answer["scenario"] is None for answer in body["results"])
    schema = api.get("/api/schema/?format=json").json()
    scenario = schema["components"]["schemas"]["Answer"]["properties"]["scenario"]
    assert scenario["nullable"] is True
