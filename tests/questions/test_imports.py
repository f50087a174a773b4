"""Importing candidate posts: a good file is imported whole, any problem refuses it whole,
naming the file, the line and the field, and leaves the pool as it was."""

import codecs
import csv
import json
from pathlib import Path

import pytest

from apps.accounts.roles import Role
from apps.console.uploads import UTF16_HINT
from apps.questions.models import ImportBatch, ImportStatus, SourcePost, SourcePostTopic, Topic
from apps.questions.pool import ImportRefused
from apps.questions.services import posts_import
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[2] / "apps/demo/data/candidate-posts-300.csv"
COLUMNS = ["external_id", "subreddit", "title", "body", "created_utc", "topics"]


def post(n: int, **fields) -> dict:
    return {
        "external_id": f"t3_test{n:04d}",
        "subreddit": "privacy",
        "title": f"Help {n}",
        "body": f"Someone got into my account {n}. What do I do?",
        "created_utc": "2023-05-01T10:00:00+00:00",
        "topics": "accounts",
        **fields,
    }


def csv_file(tmp_path, rows, *, name="posts.csv", columns=COLUMNS) -> Path:
    path = tmp_path / name
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([row.get(c, "") for c in columns] if isinstance(row, dict) else row)
    return path


def jsonl_file(tmp_path, records, *, name="posts.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def pool_state() -> tuple[int, int]:
    return SourcePost.objects.count(), SourcePostTopic.objects.count()


def refused(path: Path) -> str:
    before = pool_state()
    with pytest.raises(ImportRefused) as caught:
        posts_import(path=path)
    assert pool_state() == before, "a refused file stored posts"
    message = str(caught.value)
    assert message.startswith(f"{path.name} was not imported (nothing was changed): ")
    batch = ImportBatch.objects.order_by("-pk").first()
    assert batch.status == ImportStatus.REFUSED and batch.problems
    return message


def test_the_fixture_csv_is_imported_with_its_lines_topics_and_counts():
    batch = posts_import(path=FIXTURE)
    assert batch.status == ImportStatus.DONE and batch.rows == 300
    assert SourcePost.objects.filter(batch=batch).count() == 300
    first = SourcePost.objects.get(external_id="t3_00000000")
    assert first.line == 2 and first.subreddit == "techsupport"
    assert first.topic_ids == [Topic.objects.get(name="security tools").pk]
    assert first.body_chars == len(first.body)
    assert first.created_utc.isoformat() == "2021-07-12T07:40:17+00:00"
    two = SourcePost.objects.get(external_id="t3_00000003")  # "compromise;scams"
    names = SourcePostTopic.objects.filter(post=two).values_list("topic__name", flat=True)
    assert sorted(names) == ["compromise", "scams"]
    with FIXTURE.open(newline="") as f:
        rows = list(csv.DictReader(f))
    labels = [name for row in rows for name in row["topics"].split(";")]
    assert SourcePostTopic.objects.count() == len(labels)
    assert batch.topic_counts == {name: labels.count(name) for name in batch.topic_counts}
    assert sum(batch.topic_counts.values()) == len(labels)
    assert len(batch.sha256) == 64 and batch.size_bytes == FIXTURE.stat().st_size


def test_the_fixture_as_json_lines_is_imported_the_same(tmp_path):
    with FIXTURE.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows[:5]:  # topics may be a list in JSON Lines; dates epoch seconds
        row["topics"] = row["topics"].split(";")
    rows[5]["created_utc"] = 1625000000
    batch = posts_import(path=jsonl_file(tmp_path, rows))
    assert batch.file_format == "jsonl" and batch.rows == 300
    assert SourcePost.objects.get(external_id=rows[10]["external_id"]).line == 11
    assert SourcePost.objects.get(external_id=rows[5]["external_id"]).created_utc.year == 2021
    assert SourcePostTopic.objects.count() == sum(
        len(r["topics"] if isinstance(r["topics"], list) else r["topics"].split(";")) for r in rows
    )


def test_a_body_with_tabs_newlines_and_backslashes_is_stored_exactly(tmp_path):
    body = 'Line one\twith a tab\r\nline two \\ with "quotes"\nand é ü 漢字'
    posts_import(path=csv_file(tmp_path, [post(1, body=body)]))
    assert SourcePost.objects.get().body == body


def test_the_importer_is_recorded(tmp_path):
    user = user_with_role(Role.RESEARCHER, username="rahul")
    batch = posts_import(path=csv_file(tmp_path, [post(1)]), user=user)
    assert batch.imported_by == user


def test_the_same_file_twice_is_refused_naming_the_earlier_import(tmp_path):
    user = user_with_role(Role.RESEARCHER, first_name="Rahul", last_name="Researcher")
    path = csv_file(tmp_path, [post(1), post(2)])
    first = posts_import(path=path, user=user)
    message = refused(path)
    assert "was imported already" in message and "Rahul Researcher" in message
    assert f"import {first.pk}" in message
    assert f"{first.finished_at:%Y-%m-%d}" in message


def test_a_file_that_is_not_utf8_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(
        (",".join(COLUMNS) + "\n").encode()
        + b"t3_a,privacy,Caf\xe9,body here,2023-05-01T10:00:00+00:00,accounts\n"
    )
    message = refused(path)
    assert "not UTF-8" in message and "line 2" in message and "0xe9" in message


def test_a_utf16_file_is_refused_as_utf16(tmp_path):
    path = tmp_path / "excel.csv"
    text = ",".join(COLUMNS) + "\nt3_a,privacy,t,b,2023-05-01T10:00:00+00:00,accounts\n"
    path.write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    assert UTF16_HINT in refused(path)


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (COLUMNS[:-1], 'line 1 (the header): column "topics" is missing'),
        ([*COLUMNS, "score"], "line 1 (the header): unknown column 'score'"),
        ([*COLUMNS, "body"], 'line 1 (the header): column "body" appears twice'),
    ],
)
def test_a_bad_header_is_refused(tmp_path, columns, expected):
    assert expected in refused(csv_file(tmp_path, [post(1)], columns=columns))


def test_an_empty_file_and_a_header_alone_are_refused(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert "the file is empty" in refused(empty)
    assert "the file holds no posts" in refused(csv_file(tmp_path, [], name="header.csv"))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"title": ""}, 'line 3, field "title": empty'),
        ({"body": "   "}, 'line 3, field "body": empty'),
        ({"topics": "accounts;gardening"}, "line 3, field \"topics\": unknown topic 'gardening'"),
        (
            {"created_utc": "yesterday"},
            "line 3, field \"created_utc\": found 'yesterday', not a date",
        ),
        ({"created_utc": "2023-05-01 10:00:00"}, "a date without a timezone"),
        ({"body": "x" * 40_001}, 'line 3, field "body": 40,001 characters, more than the 40,000'),
        ({"external_id": "t3_" + "x" * 98}, 'line 3, field "external_id": 101 characters'),
        ({"subreddit": "s" * 101}, 'line 3, field "subreddit": 101 characters'),
        ({"body": "a NUL \x00 here"}, 'line 3, field "body": a NUL character'),
    ],
)
def test_a_bad_field_is_refused_naming_the_line_and_field(tmp_path, fields, expected):
    assert expected in refused(csv_file(tmp_path, [post(1), post(2, **fields), post(3)]))


def test_epoch_seconds_and_other_timezones_are_accepted(tmp_path):
    posts_import(
        path=csv_file(
            tmp_path,
            [
                post(1, created_utc="1625000000"),
                post(2, created_utc="2023-05-01T12:00:00+02:00"),
                post(3, created_utc="2023-05-01T10:00:00Z"),
            ],
        )
    )
    times = dict(SourcePost.objects.values_list("external_id", "created_utc"))
    assert times["t3_test0001"].timestamp() == 1625000000
    assert times["t3_test0002"] == times["t3_test0003"]


def test_a_row_with_the_wrong_number_of_fields_is_refused(tmp_path):
    path = csv_file(tmp_path, [post(1), ["t3_b", "privacy", "title"]])
    assert "line 3: 3 fields, but the header has 6" in refused(path)


def test_an_id_twice_in_the_file_is_refused_naming_both_lines(tmp_path):
    path = csv_file(tmp_path, [post(1), post(2), post(1, title="again")])
    assert "line 4, field \"external_id\": 't3_test0001' is also on line 2" in refused(path)


def test_an_id_stored_already_is_refused_naming_the_line_and_earlier_import(tmp_path):
    earlier = posts_import(path=csv_file(tmp_path, [post(1), post(2)], name="first.csv"))
    message = refused(csv_file(tmp_path, [post(3), post(2, title="new")], name="second.csv"))
    assert "line 3, field \"external_id\": 't3_test0002' is stored already" in message
    assert f"from first.csv (import {earlier.pk}" in message


def test_a_broken_json_line_and_a_missing_field_are_refused(tmp_path):
    path = tmp_path / "posts.jsonl"
    missing = post(2)
    del missing["body"]
    path.write_text(
        json.dumps(post(1)) + "\n" + '{"external_id": "t3_x", \n' + json.dumps(missing) + "\n"
    )
    message = refused(path)
    assert "line 2: not valid JSON" in message
    assert 'line 3, field "body": missing' in message


def test_a_json_line_with_an_unknown_field_or_a_nul_escape_is_refused(tmp_path):
    path = jsonl_file(tmp_path, [post(1, score=3), post(2, title="nul \u0000 here")])
    message = refused(path)
    assert "line 1: unknown field(s) 'score'" in message
    assert 'line 2, field "title": a NUL character' in message


def test_every_problem_is_found_and_the_first_twenty_shown(tmp_path):
    rows = [post(n, topics="nowhere") for n in range(25)]
    message = refused(csv_file(tmp_path, rows))
    assert message.count("unknown topic") == 20
    assert message.endswith("and 5 more problem(s)")
    batch = ImportBatch.objects.order_by("-pk").first()
    assert len(batch.problems) == 25


def test_a_renamed_topic_is_known_by_its_new_name(tmp_path):
    Topic.objects.filter(name="scams").update(name="fraud")
    posts_import(path=csv_file(tmp_path, [post(1, topics="fraud")]))
    assert SourcePost.objects.get().topic_ids == [Topic.objects.get(name="fraud").pk]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"body": "\ud800x"}, 'line 2, field "body": a lone surrogate (\\ud800)'),
        ({"title": "ok \udfff"}, 'line 2, field "title": a lone surrogate (\\udfff)'),
        ({"topics": ["accounts", "\udc00"]}, 'line 2, field "topics": a lone surrogate (\\udc00)'),
    ],
)
def test_a_json_line_with_a_lone_surrogate_is_refused_naming_the_line_and_field(
    tmp_path, fields, expected
):
    message = refused(jsonl_file(tmp_path, [post(1), post(2, **fields), post(3)]))
    assert expected in message


def test_a_surrogate_pair_written_as_two_escapes_is_one_character(tmp_path):
    posts_import(path=jsonl_file(tmp_path, [post(1, body="Locked out \U0001f600 help")]))
    assert SourcePost.objects.get().body == "Locked out \U0001f600 help"


def test_a_json_line_giving_a_field_twice_is_refused_naming_the_line_and_key(tmp_path):
    path = tmp_path / "posts.jsonl"
    twice = json.dumps(post(2))[:-1] + ', "external_id": "t3_other"}'
    path.write_text(json.dumps(post(1)) + "\n" + twice + "\n")
    message = refused(path)
    assert 'line 2: the key "external_id" appears twice' in message
