"""`manage.py import_posts FILE`: progress on stderr, a summary on stdout; a refusal is a
CommandError carrying the report."""

import csv
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.roles import Role
from apps.questions.models import ImportBatch, SourcePost
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[2] / "apps/demo/data/candidate-posts-300.csv"


def test_the_command_imports_a_file_and_prints_progress_and_a_summary(capsys):
    user = user_with_role(Role.RESEARCHER, username="rahul")
    out = StringIO()
    call_command("import_posts", str(FIXTURE), "--user", "rahul", stdout=out)
    assert "Imported 300 posts from candidate-posts-300.csv" in out.getvalue()
    assert "per topic: accounts" in out.getvalue()
    assert "300 posts read" in capsys.readouterr().err
    assert SourcePost.objects.count() == 300
    assert ImportBatch.objects.get().imported_by == user


def test_a_refused_file_is_a_command_error_with_the_report(tmp_path):
    path = tmp_path / "bad.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["external_id", "subreddit", "title", "body", "created_utc", "topics"])
        writer.writerow(["t3_a", "privacy", "t", "b", "not a date", "accounts"])
    with pytest.raises(CommandError) as caught:
        call_command("import_posts", str(path), stdout=StringIO())
    message = str(caught.value)
    assert message.startswith("bad.csv was not imported (nothing was changed)")
    assert 'line 2, field "created_utc"' in message
    assert SourcePost.objects.count() == 0


def test_the_same_file_twice_is_a_command_error():
    call_command("import_posts", str(FIXTURE), stdout=StringIO())
    with pytest.raises(CommandError, match="was imported already"):
        call_command("import_posts", str(FIXTURE), stdout=StringIO())
    assert SourcePost.objects.count() == 300


def test_an_unknown_user_or_a_missing_file_is_a_command_error(tmp_path):
    with pytest.raises(CommandError, match="no such user"):
        call_command("import_posts", str(FIXTURE), "--user", "nobody")
    with pytest.raises(CommandError, match="cannot be read"):
        call_command("import_posts", str(tmp_path / "missing.csv"))


def test_a_json_line_with_a_lone_surrogate_is_a_command_error_naming_line_and_field(tmp_path):
    path = tmp_path / "posts.jsonl"
    path.write_text(
        '{"external_id": "t3_a", "subreddit": "privacy", "title": "t", "body": "\\ud800x", '
        '"created_utc": "2023-05-01T10:00:00+00:00", "topics": "accounts"}\n'
    )
    with pytest.raises(CommandError) as caught:
        call_command("import_posts", str(path), stdout=StringIO())
    message = str(caught.value)
    assert message.startswith("posts.jsonl was not imported (nothing was changed)")
    assert 'line 1, field "body": a lone surrogate (\\ud800)' in message
    assert SourcePost.objects.count() == 0
