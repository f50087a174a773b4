"""What the API's read endpoints serve: what is stored, filtered as asked, in cursor pages
that see every row once, pseudonymised, and, for the long lists, the same rows as their
streamed CSV exports and as their documented schema."""

import csv
import datetime as dt
import gc
import io
import json
import math
import re

import httpx
import jsonschema
import psycopg
import pytest
from django.db import connection
from django.db.models import Q
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator

from apps.console.api_pages import LONG_MAX_PAGE_SIZE, LongPage
from apps.console.csv_export import spreadsheet_safe
from apps.grading.api import JudgmentViewSet, ScoreViewSet
from apps.grading.models import Judgment, ResponseScore
from apps.llm.models import ModelConfig
from apps.questions.models import Topic
from apps.rubrics.models import Rubric
from apps.runs.api import ResponseViewSet
from apps.runs.models import Response
from apps.surveys.api import AnswerViewSet
from apps.surveys.models import Answer, Participant
from apps.surveys.pseudonyms import pseudonym
from tests.api.builders import HOSTILE

LONG_LISTS = {
    "responses": ResponseViewSet,
    "judgments": JudgmentViewSet,
    "scores": ScoreViewSet,
    "answers": AnswerViewSet,
}
ISO_DATETIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def walk(client, url: str) -> tuple[list[dict], int]:
    """Every row of a list, following `next`; and how many pages it took."""
    rows, pages = [], 0
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content[:300]
        body = response.json()
        assert set(body) == {"next", "previous", "results"}
        rows.extend(body["results"])
        url, pages = body["next"], pages + 1
    return rows, pages


def csv_of(response) -> list[dict]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def same_value(json_value, cell: str) -> bool:
    """Whether a CSV cell holds what the JSON list has (as the export writes each type)."""
    if json_value is None:
        return cell == ""
    if isinstance(json_value, bool):
        return cell == ("true" if json_value else "false")
    if isinstance(json_value, int | float):
        return math.isclose(float(cell), json_value)
    if isinstance(json_value, dict | list):
        return json.loads(cell) == json_value
    if ISO_DATETIME.match(json_value):
        return dt.datetime.fromisoformat(cell) == dt.datetime.fromisoformat(json_value)
    return cell == spreadsheet_safe(json_value)


def same_row(a: dict, b: dict) -> bool:
    """Two JSON rows equal, timestamps compared as instants (the fast path writes them as
    PostgreSQL does, DRF as Python does)."""
    if set(a) != set(b):
        return False
    for key, value in a.items():
        other = b[key]
        if isinstance(value, str) and ISO_DATETIME.match(value) and isinstance(other, str):
            if dt.datetime.fromisoformat(value) != dt.datetime.fromisoformat(other):
                return False
        elif isinstance(value, float) or isinstance(other, float):
            if not math.isclose(value, other):
                return False
        elif value != other:
            return False
    return True


# --- what is stored ------------------------------------------------------------------------


def test_each_list_serves_the_stored_rows_in_id_order(api, world):
    expected = {
        "topics": list(Topic.objects.order_by("pk").values_list("pk", flat=True)),
        "rubrics": list(Rubric.objects.order_by("pk").values_list("pk", flat=True)),
        "responses": list(world.sampling_run.responses.order_by("pk").values_list("pk", flat=True)),
        "judgments": list(world.grading_run.judgments.order_by("pk").values_list("pk", flat=True)),
        "scores": list(world.grading_run.scores.order_by("pk").values_list("pk", flat=True)),
        "participants": list(world.study.participants.order_by("pk").values_list("pk", flat=True)),
        "answers": list(
            Answer.objects.filter(assignment__participant__study=world.study)
            .order_by("pk")
            .values_list("pk", flat=True)
        ),
        "sampling-runs": [world.sampling_run.pk],
        "grading-runs": [world.grading_run.pk],
        "calibrations": list(world.grading_run.calibrations.values_list("pk", flat=True)),
        "studies": [world.study.pk],
    }
    for path, ids in expected.items():
        rows, _pages = walk(api, f"/api/v1/{path}/?page_size=7")
        assert [row["id"] for row in rows] == ids, path
        assert ids, path


def test_a_judgment_is_served_as_stored(api, world):
    judgment = world.grading_run.judgments.exclude(explanation="").first()
    row = api.get(f"/api/v1/judgments/{judgment.pk}/").json()
    assert row["grading_run"] == world.grading_run.pk
    assert (row["response"], row["criterion"], row["rubric"]) == (
        judgment.response_id,
        judgment.criterion_id,
        judgment.rubric_id,
    )
    assert (row["status"], row["met"], row["explanation"]) == (
        judgment.status,
        judgment.met,
        judgment.explanation,
    )


def test_a_score_is_served_as_stored_with_its_answers_model(api, world):
    score = world.grading_run.scores.select_related("response").first()
    row = api.get(f"/api/v1/scores/{score.pk}/").json()
    assert row["score"] == pytest.approx(score.score)
    assert (row["earned_points"], row["max_points"]) == (score.earned_points, score.max_points)
    assert row["model"] == score.response.model_id
    assert row["breakdown"] == score.breakdown


def test_a_rubric_comes_with_its_criteria_in_order(api, world):
    rubric = Rubric.objects.filter(question__in=world.sampling_run.questions.all()).first()
    row = api.get(f"/api/v1/rubrics/{rubric.pk}/").json()
    assert (row["version"], row["state"], row["question"]) == (
        rubric.version,
        rubric.state,
        rubric.question_id,
    )
    stored = list(rubric.criteria.order_by("order", "pk").values_list("pk", "text", "points"))
    assert [(c["id"], c["text"], c["points"]) for c in row["criteria"]] == stored


def test_a_sampling_run_says_its_models_and_questions(api, world):
    row = api.get(f"/api/v1/sampling-runs/{world.sampling_run.pk}/").json()
    assert sorted(row["models"]) == sorted(
        world.sampling_run.model_configs.values_list("pk", flat=True)
    )
    assert row["questions_count"] == 2
    assert row["status"] == "finished"


def test_unknown_ids_are_404_in_the_error_shape(api, world):
    for path in ("judgments", "scores", "studies", "grading-runs", "participants"):
        response = api.get(f"/api/v1/{path}/999999/")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


# --- filters -------------------------------------------------------------------------------


def test_filters_narrow_each_long_list(api, world):
    response = world.sampling_run.responses.order_by("pk").first()
    judgment = world.grading_run.judgments.order_by("pk").first()
    participant = world.people[0]
    cases = {
        f"responses/?run={world.sampling_run.pk}&model={response.model_id}": (
            Response.objects.filter(run=world.sampling_run, model_id=response.model_id)
        ),
        f"responses/?question={response.question_id}&status=done": Response.objects.filter(
            question_id=response.question_id, status="done"
        ),
        f"judgments/?grading_run={world.grading_run.pk}&met=true": Judgment.objects.filter(
            grading_run=world.grading_run, met=True
        ),
        f"judgments/?response={judgment.response_id}&criterion={judgment.criterion_id}": (
            Judgment.objects.filter(pk=judgment.pk)
        ),
        "judgments/?status=error": Judgment.objects.filter(status="error"),
        f"scores/?grading_run={world.grading_run.pk}&model={response.model_id}": (
            ResponseScore.objects.filter(
                grading_run=world.grading_run, response__model_id=response.model_id
            )
        ),
        f"scores/?question={response.question_id}": ResponseScore.objects.filter(
            response__question_id=response.question_id
        ),
        f"answers/?participant={participant.pk}": Answer.objects.filter(
            assignment__participant=participant
        ),
        f"answers/?study={world.study.pk}&item_code=H2": Answer.objects.filter(
            assignment__participant__study=world.study, item__code="H2"
        ),
        f"participants/?study={world.study.pk}&kind=proxy": Participant.objects.filter(
            study=world.study, kind="proxy"
        ),
    }
    for query, expected in cases.items():
        rows, _ = walk(api, f"/api/v1/{query}")
        ids = list(expected.order_by("pk").values_list("pk", flat=True))
        assert [row["id"] for row in rows] == ids, query
    # Each filter narrows: the met=true judgments are neither none nor all.
    met = Judgment.objects.filter(grading_run=world.grading_run, met=True).count()
    assert 0 < met < world.grading_run.judgments.count()


def test_questions_carry_and_filter_by_each_need(api, world):
    from tests.factories import questions_by_need

    made = {key: question.pk for key, question in questions_by_need().items()}
    rows, _ = walk(api, "/api/v1/questions/?needs_sensemaking=true&needs_guidance=true")
    assert [row["id"] for row in rows] == [made["both"]]
    assert (rows[0]["needs_sensemaking"], rows[0]["needs_guidance"]) == (True, True)
    assert "need_type" not in rows[0]
    rows, _ = walk(api, "/api/v1/questions/?needs_sensemaking=true")
    assert [row["id"] for row in rows] == [made["both"], made["sense"]]
    rows, _ = walk(api, "/api/v1/questions/?needs_guidance=false")
    assert [row["id"] for row in rows] == [made["sense"], made["neither"]]  # not "unlabelled"


def test_a_filter_value_that_is_not_one_is_a_400_naming_the_field(api, world):
    for query, field in (
        ("judgments/?grading_run=abc", "grading_run"),
        ("judgments/?status=maybe", "status"),
        ("responses/?run=0", "run"),
    ):
        response = api.get(f"/api/v1/{query}")
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "invalid"
        assert field in error["fields"]


# --- cursor pages --------------------------------------------------------------------------


def test_a_walk_along_next_sees_every_row_once(api, world):
    ids = list(world.grading_run.judgments.order_by("pk").values_list("pk", flat=True))
    rows, pages = walk(api, f"/api/v1/judgments/?grading_run={world.grading_run.pk}&page_size=4")
    assert [row["id"] for row in rows] == ids
    assert pages == math.ceil(len(ids) / 4)


def test_rows_added_during_a_walk_are_not_seen_twice(api, world):
    first = api.get("/api/v1/topics/?page_size=3").json()
    Topic.objects.create(slug="added-late", name="added late", order=0)
    rows, _ = walk(api, first["next"])
    seen = [row["id"] for row in first["results"] + rows]
    assert len(seen) == len(set(seen)) == Topic.objects.count()


def test_previous_leads_back_to_the_page_before(api, world):
    first = api.get("/api/v1/judgments/?page_size=3").json()
    second = api.get(first["next"]).json()
    back = api.get(second["previous"]).json()
    assert [r["id"] for r in back["results"]] == [r["id"] for r in first["results"]]


@pytest.mark.parametrize("path", LONG_LISTS)
def test_the_fast_paths_json_is_postgresqls_row_to_json_of_the_same_columns(world, path):
    """Each row's JSON, joined from its values' JSON, is the text row_to_json writes."""
    viewset = LONG_LISTS[path]()
    queryset = viewset.get_queryset().order_by("pk")
    rows, columns = viewset.columns.annotated(queryset)
    aliases = [alias for _key, alias in columns]
    with connection.cursor() as cursor:
        sql, params = rows.values_list(*aliases).query.sql_with_params()
        keyed = ", ".join(
            f"{connection.ops.quote_name(a)} AS {connection.ops.quote_name(k)}"
            for (k, a) in columns
        )
        # Django's SQL, and the list's own names, quoted.
        statement = f"SELECT row_to_json(t)::text FROM (SELECT {keyed} FROM ({sql}) AS s) t"  # noqa: S608
        cursor.execute(statement, params)
        expected = [row for (row,) in cursor.fetchall()]
    found = list(queryset.values_list(viewset.columns.json(), flat=True))
    assert len(found) == len(expected) > 0
    assert found == expected
    assert [json.loads(row) for row in found]  # and it parses


def test_a_long_list_pages_up_to_its_own_cap_of_10000_rows(api, world, monkeypatch):
    # The long lists' pages stop at LongPage's cap, not at the other lists' 1,000.
    monkeypatch.setattr(LongPage, "max_page_size", 3)
    url = f"/api/v1/judgments/?grading_run={world.grading_run.pk}&page_size=20000"
    assert len(api.get(url).json()["results"]) == 3
    monkeypatch.setattr(LongPage, "max_page_size", LONG_MAX_PAGE_SIZE)
    assert len(api.get(url).json()["results"]) == world.grading_run.judgments.count() > 3
    schema = api.get("/api/schema/?format=json").json()
    described = [
        p["description"]
        for p in schema["paths"]["/api/v1/judgments/"]["get"]["parameters"]
        if p["name"] == "page_size"
    ]
    assert described == ["Rows per page: 100 unless given, at most 10000."]


def test_page_size_defaults_to_100_and_stops_at_1000(api, db):
    Topic.objects.bulk_create(
        Topic(slug=f"topic-{i}", name=f"Topic {i}", order=i) for i in range(1100)
    )
    assert len(api.get("/api/v1/topics/").json()["results"]) == 100
    page = api.get("/api/v1/topics/?page_size=5000").json()
    assert len(page["results"]) == 1000
    assert page["next"]


def test_a_cursor_the_api_did_not_give_out_is_a_404(api, db):
    for cursor in ("nonsense", "cD1hYmM=", "cD0tNQ=="):  # not base64 of p=..., p=abc, p=-5
        response = api.get(f"/api/v1/judgments/?cursor={cursor}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


# --- pseudonyms ----------------------------------------------------------------------------


def test_participants_and_answers_carry_pseudonyms_and_never_a_prolific_id(api, world):
    people = {p.pk: p for p in world.people}
    rows, _ = walk(api, f"/api/v1/participants/?study={world.study.pk}")
    for row in rows:
        if row["id"] in people:
            person = people[row["id"]]
            assert row["participant_pseudonym"] == pseudonym(
                study_id=world.study.pk, prolific_pid=person.prolific_pid
            )
            assert row["participant_pseudonym"].startswith("P-")
        else:
            assert row["kind"] == "proxy" and row["participant_pseudonym"] == ""
    answers, _ = walk(api, f"/api/v1/answers/?study={world.study.pk}")
    by_participant = {row["id"]: row["participant_pseudonym"] for row in rows}
    assert answers
    for row in answers:
        assert row["participant_pseudonym"] == by_participant[row["participant"]]

    secrets = [p.prolific_pid for p in world.people] + [p.prolific_session_id for p in world.people]
    assert all(secrets)
    bodies = [
        api.get(f"/api/v1/participants/?study={world.study.pk}").content,
        api.get(f"/api/v1/participants/{world.people[0].pk}/").content,
        api.get(f"/api/v1/answers/?study={world.study.pk}").content,
        api.get(f"/api/v1/answers/{answers[0]['id']}/").content,
        b"".join(api.get(f"/api/v1/answers/export/?study={world.study.pk}").streaming_content),
        api.get("/api/schema/").content,
    ]
    for body in bodies:
        text = body.decode()
        assert not any(secret in text for secret in secrets)
        assert "prolific_pid" not in text and "prolific_session_id" not in text


# --- the long lists: exports, schema, retrieve ---------------------------------------------


@pytest.mark.parametrize("path", sorted(LONG_LISTS))
def test_the_export_holds_the_lists_rows_in_its_order(api, world, path):
    rows, _ = walk(api, f"/api/v1/{path}/?page_size=5")
    exported = csv_of(api.get(f"/api/v1/{path}/export/"))
    assert rows
    assert [int(r["id"]) for r in exported] == [row["id"] for row in rows]
    assert list(exported[0]) == list(rows[0])  # the same columns, in the same order
    for row, line in zip(rows, exported, strict=True):
        for key, value in row.items():
            assert same_value(value, line[key]), (path, key, value, line[key])


def test_the_export_follows_the_lists_filters(api, world):
    query = f"grading_run={world.grading_run.pk}&met=false"
    rows, _ = walk(api, f"/api/v1/judgments/?{query}")
    exported = csv_of(api.get(f"/api/v1/judgments/export/?{query}"))
    assert [int(r["id"]) for r in exported] == [row["id"] for row in rows]
    assert 0 < len(rows) < world.grading_run.judgments.count()


def test_hostile_text_reaches_the_csv_neutralised_and_the_json_as_written(api, world):
    rows, _ = walk(api, f"/api/v1/answers/?study={world.study.pk}&participant={world.people[0].pk}")
    exported = csv_of(api.get(f"/api/v1/answers/export/?participant={world.people[0].pk}"))
    assert rows and all(row["explanation"].startswith(HOSTILE) for row in rows)
    assert all(line["explanation"].startswith("'" + HOSTILE) for line in exported)


def _json_schema(node):
    """OpenAPI 3.0's `nullable: true` as JSON Schema's null type, throughout."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _json_schema(v) for k, v in node.items()}
    if node.pop("nullable", False):
        node = {"anyOf": [node, {"type": "null"}]}
    return node


def _component(schema: dict, name: str) -> dict:
    """A component of the schema with its references resolvable, as jsonschema takes it."""
    return {
        "$ref": f"#/components/schemas/{name}",
        "components": _json_schema(schema["components"]),
    }


@pytest.mark.parametrize("path", sorted(LONG_LISTS))
def test_the_fast_path_serves_exactly_the_documented_schema(api, world, path):
    viewset = LONG_LISTS[path]
    schema = SchemaGenerator().get_schema(request=None, public=True)
    name = viewset.serializer_class.__name__.removesuffix("Serializer")
    component = schema["components"]["schemas"][name]
    fields = list(viewset.serializer_class().fields)
    assert viewset.columns.keys == fields  # the same keys, in the same order
    assert set(component["properties"]) == set(fields)
    rows, _ = walk(api, f"/api/v1/{path}/")
    assert rows
    for row in rows:
        assert list(row) == fields
        # Draft 4: OpenAPI 3.0's schema objects take its boolean exclusiveMinimum.
        jsonschema.Draft4Validator(_component(schema, name)).validate(row)
    # ...and each row equals what the serializer answers for it.
    for row in rows[:5]:
        assert same_row(row, api.get(f"/api/v1/{path}/{row['id']}/").json())


def test_a_page_of_judgments_is_two_small_reads_of_the_primary_key_and_a_copy_of_its_range(
    api, world, django_assert_num_queries, monkeypatch
):
    copies = []
    original = psycopg.Cursor.copy

    def recording(self, statement, *args, **kwargs):
        copies.append(str(statement))
        return original(self, statement, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "copy", recording)
    url = f"/api/v1/judgments/?grading_run={world.grading_run.pk}&page_size=3"
    api.get(url)
    copies.clear()
    # The token (with its user and their roles), the page's first row, its last and the
    # next page's first; then its rows, by COPY.
    with django_assert_num_queries(3) as captured:
        assert api.get(url).status_code == 200
    first, edge = (q["sql"] for q in captured.captured_queries[-2:])
    assert first.endswith("LIMIT 1") and edge.endswith("LIMIT 2 OFFSET 2")
    assert '{"id":' not in first + edge
    # The rows' JSON is built for the page's id range alone, not asked for id by id.
    (rows,) = copies
    assert rows.startswith("COPY (") and rows.count('{"id":') == 1
    assert '"grading_judgment"."id" >= ' in rows and '"grading_judgment"."id" <= ' in rows
    assert " IN (" not in rows


# --- the arrays layout, and the links in a header -----------------------------------------


def walk_arrays(client, url: str) -> tuple[list[str], list[list]]:
    """Every row of a list in the arrays layout, following `next`; and its columns."""
    columns, rows = None, []
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content[:300]
        body = response.json()
        assert set(body) == {"next", "previous", "columns", "rows"}
        assert columns in (None, body["columns"])  # the same on every page
        columns = body["columns"]
        rows.extend(body["rows"])
        url = body["next"]
    return columns, rows


@pytest.mark.parametrize("path", sorted(LONG_LISTS))
def test_the_arrays_layout_holds_the_objects_values_in_the_columns_order(api, world, path):
    objects, _ = walk(api, f"/api/v1/{path}/?page_size=4")
    columns, arrays = walk_arrays(api, f"/api/v1/{path}/?page_size=4&layout=arrays")
    assert columns == LONG_LISTS[path].columns.keys
    assert len(arrays) == len(objects) > 4
    for row, values in zip(objects, arrays, strict=True):
        assert dict(zip(columns, values, strict=True)) == row


def test_hostile_values_reach_both_layouts_as_stored(api, world):
    """Control characters (COPY's delimiter and quote among them), quotes, backslashes,
    COPY's end-of-data mark, the text `null`, astral characters, and a JSON null in a JSON
    column: each arrives as it was stored, in either layout."""
    text = 'a\x01b\x02c\nd\re\tf"g\\h \\. \u00e9 \U0001f600 ' + HOSTILE
    judgment = world.grading_run.judgments.order_by("pk").first()
    Judgment.objects.filter(pk=judgment.pk).update(explanation=text, error="null")
    score = world.grading_run.scores.order_by("pk").first()
    table = connection.ops.quote_name(ResponseScore._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET breakdown = 'null'::jsonb WHERE id = %s", [score.pk])  # noqa: S608
    for path, row_id, response_id, expected in (
        ("judgments", judgment.pk, judgment.response_id, {"explanation": text, "error": "null"}),
        ("scores", score.pk, score.response_id, {"breakdown": None}),
    ):
        url = f"/api/v1/{path}/?response={response_id}"
        (row,) = [r for r in api.get(url).json()["results"] if r["id"] == row_id]
        page = api.get(f"{url}&layout=arrays").json()
        (values,) = [v for v in page["rows"] if v[0] == row_id]
        assert {key: row[key] for key in expected} == expected
        assert dict(zip(page["columns"], values, strict=True)) == row
        assert same_row(row, api.get(f"/api/v1/{path}/{row_id}/").json())


@pytest.mark.parametrize("layout", ["objects", "arrays"])
def test_both_layouts_pages_are_the_documented_response(api, world, layout):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/judgments/"]["get"]
    (parameter,) = [p for p in operation["parameters"] if p["name"] == "layout"]
    assert sorted(parameter["schema"]["enum"]) == ["arrays", "objects"]
    page = operation["responses"]["200"]["content"]["application/json"]["schema"]
    validator = jsonschema.Draft4Validator(
        {**_json_schema(page), "components": _json_schema(schema["components"])}
    )
    absent = world.grading_run.pk + 1000
    for query in ("page_size=3", f"grading_run={absent}"):  # a page of rows; an empty one
        body = api.get(f"/api/v1/judgments/?{query}&layout={layout}").json()
        validator.validate(body)  # oneOf: exactly one of the two layouts


def test_a_layout_that_is_not_one_is_a_400_naming_it(api, world):
    response = api.get("/api/v1/judgments/?layout=columns")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert "objects, arrays" in error["fields"]["layout"][0]


@pytest.mark.parametrize("path", ["topics", "judgments"])
def test_a_pages_links_are_in_its_link_header_too(api, world, path):
    Topic.objects.bulk_create(Topic(slug=f"more-{i}", name=f"More {i}", order=i) for i in range(5))
    first = api.get(f"/api/v1/{path}/?page_size=2")
    body = first.json()
    assert first["Link"] == f'<{body["next"]}>; rel="next"'
    second = api.get(body["next"])
    body = second.json()
    links = httpx.Response(200, headers={"Link": second["Link"]}).links
    assert {rel: link["url"] for rel, link in links.items()} == {
        "next": body["next"],
        "prev": body["previous"],
    }
    whole = api.get(f"/api/v1/{path}/?page_size=1000")  # every row on one page: no links
    assert whole.json()["next"] is None and not whole.has_header("Link")


# --- the survey report's tables ------------------------------------------------------------


def test_the_survey_report_lists_its_tables(api, world):
    body = api.get(f"/api/v1/reports/studies/{world.study.pk}/survey/").json()
    assert body["study"] == world.study.pk
    names = [t["name"] for t in body["tables"]]
    assert {"alpha", "rho", "demographics"} <= set(names)
    assert any(t["figure"] for t in body["tables"])


def test_a_report_table_is_the_pages_table_with_missing_values_as_null(api, role_client, world):
    base = f"/api/v1/reports/studies/{world.study.pk}/survey/tables"
    for name in ("alpha", "rho", "demographics", "distribution-H2"):
        table = api.get(f"{base}/{name}/").json()
        assert table["name"] == name
        assert set(table) == {"name", "title", "n", "notes", "columns", "rows"}
        keys = [c["key"] for c in table["columns"]]
        assert all(list(row) == keys for row in table["rows"])
        assert all(
            not (isinstance(v, float) and math.isnan(v))
            for row in table["rows"]
            for v in row.values()
        )
        api_csv = b"".join(api.get(f"{base}/{name}.csv").streaming_content)
        page_csv = role_client("researcher").get(
            reverse("analysis:survey_table_csv", args=[world.study.pk, name])
        )
        assert api_csv == b"".join(page_csv.streaming_content)
        lines = list(csv.reader(io.StringIO(api_csv.decode())))
        assert len(lines) == len(table["rows"]) + 1
    # With two people and one proxy model some statistics cannot be computed: null, not NaN.
    alpha = api.get(f"{base}/alpha/").json()
    assert any(v is None for row in alpha["rows"] for v in row.values())


def test_a_grading_runs_report_tables_are_the_pages_tables(api, role_client, world):
    run = world.grading_run
    body = api.get(f"/api/v1/reports/grading-runs/{run.pk}/").json()
    assert body["grading_run"] == run.pk
    names = [t["name"] for t in body["tables"]]
    assert {"table-3", "table-4", "wilcoxon", "ks-prior", "ks-sensemaking", "ks-guidance"} <= set(
        names
    )
    assert "ks-need" not in names
    base = f"/api/v1/reports/grading-runs/{run.pk}/tables"
    for name in ("table-3", "table-4"):
        table = api.get(f"{base}/{name}/").json()
        keys = [c["key"] for c in table["columns"]]
        assert table["rows"] and all(list(row) == keys for row in table["rows"])
        api_csv = b"".join(api.get(f"{base}/{name}.csv").streaming_content)
        page_csv = role_client("researcher").get(
            reverse("analysis:benchmark_table_csv", args=[run.pk, name])
        )
        assert api_csv == b"".join(page_csv.streaming_content)
    # Table 3: a row per model of the run, each model's mean score as a number.
    table3 = api.get(f"{base}/table-3/").json()
    assert len(table3["rows"]) >= run.sampling_run.model_configs.count()
    for url in (f"{base}/nothing/", "/api/v1/reports/grading-runs/999999/"):
        assert api.get(url).status_code == 404


def test_table_1_in_the_api_takes_the_pages_choice_and_refuses_a_bad_one(api, role_client, world):
    run = world.grading_run
    models = list(run.sampling_run.model_configs.order_by("created_at", "pk"))
    ModelConfig.objects.filter(pk__in=[m.pk for m in models]).update(family="Offline")
    base = f"/api/v1/reports/grading-runs/{run.pk}/tables"
    (row,) = api.get(f"{base}/table-1/").json()["rows"]
    assert row["model_id"] == models[-1].pk  # the one added last: no release dates
    assert row["rule"].startswith("The newest added to Assay")
    chosen = api.get(f"{base}/table-1/", {"table1": models[0].pk}).json()
    (row,) = chosen["rows"]
    assert row["model_id"] == models[0].pk and row["rule"].startswith("Chosen instead of")
    api_csv = b"".join(api.get(f"{base}/table-1.csv", {"table1": models[0].pk}).streaming_content)
    page_csv = role_client("researcher").get(
        reverse("analysis:benchmark_table_csv", args=[run.pk, "table-1"]),
        {"table1": models[0].pk},
    )
    assert api_csv == b"".join(page_csv.streaming_content)
    for bad in ("x", "999999999", [models[0].pk, models[1].pk]):
        for path in (f"{base}/table-1/", f"{base}/table-1.csv"):
            response = api.get(path, {"table1": bad})
            assert response.status_code == 400, (path, bad)
            assert response.json()["error"]["fields"]["table1"], (path, bad)


def test_an_unknown_report_table_or_study_is_a_404(api, world):
    base = f"/api/v1/reports/studies/{world.study.pk}/survey/tables"
    for url in (
        f"{base}/nothing/",
        f"{base}/nothing.csv",
        "/api/v1/reports/studies/999999/survey/",
    ):
        response = api.get(url)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_no_stored_row_leaks_through_a_filter_on_another_study(api, world, make_study):
    other = make_study(count=1, live=False)
    rows, _ = walk(api, f"/api/v1/answers/?study={other.pk}")
    assert rows == []
    assert Answer.objects.filter(~Q(assignment__participant__study=other)).exists()


def test_a_page_of_a_long_list_is_freed_with_its_response(api, world):
    """DRF's request and view refer to each other, so that only a full collection frees them;
    a page's body (megabytes at 10,000 rows) must go when the server lets go of it."""
    url = f"/api/v1/judgments/?grading_run={world.grading_run.pk}&page_size=10000"
    api.get(url)
    gc.collect()
    gc.disable()
    try:
        response = api.get(url)
        assert response.status_code == 200
        response.json = None  # the test client's own cycle (response.json holds the response)
        del response
        # type(), not isinstance(): isinstance would evaluate the request's lazy objects.
        alive = [o for o in gc.get_objects() if type(o) is HttpResponse]
    finally:
        gc.enable()
    assert alive == []


def test_a_questions_cosines_say_their_method_and_model(api, api_researcher, offline_provider):
    """The TF-IDF cosine comes with its method, named as Assay's choice; each cosine of
    embeddings with its model and method, or its failure and no number."""
    from apps.questions.services import embedding_cosine_job_run, embedding_cosine_job_start
    from tests.questions.test_embedding_cosines import PAIRS, approved_bank, embedder

    [question] = approved_bank(api_researcher, PAIRS[:1])
    good, failing = (
        embedder(offline_provider()),
        embedder(offline_provider(rate_429=1.0, retry_after=0), name="offline-embed-failing"),
    )
    for model in (good, failing):
        embedding_cosine_job_run(job_id=embedding_cosine_job_start(model=model).pk)

    response = api.get(reverse("api:question-detail", args=[question.pk]))
    body = response.json()
    assert body["rewrite_cosine"] is not None
    assert body["rewrite_cosine_method"].startswith("cosine similarity of TF-IDF vectors")
    assert (
        "does not say how it computed it, so TF-IDF is Assay's choice"
        in (body["rewrite_cosine_method"])
    )
    by_model = {row["model"]: row for row in body["rewrite_embedding_cosines"]}
    done, failed = by_model[good.display_name], by_model[failing.display_name]
    assert done["litellm_model"] == "openai/offline-embed" and done["status"] == "done"
    assert done["cosine"] == question.embedding_cosines.get(model=good).cosine
    assert "embedding vectors" in done["method"] and "researcher's choice" in done["method"]
    assert failed["status"] == "failed" and failed["cosine"] is None
    assert "gave up after 6 attempts" in failed["error"]
    listed = api.get(reverse("api:question-list")).json()["results"]
    assert listed[0]["rewrite_embedding_cosines"] == body["rewrite_embedding_cosines"]
