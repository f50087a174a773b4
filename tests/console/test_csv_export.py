import csv
import io

import pytest
from django.urls import reverse

from apps.accounts.models import User
from apps.accounts.roles import Role
from apps.console.csv_export import spreadsheet_safe

HOSTILE = {
    "username": '=HYPERLINK("http://x")',
    "first_name": "+SUM(1,2)",
    "last_name": "-2+3",
    "email": "@evil.example",
}


def export(client, ids):
    response = client.post(
        reverse("admin:accounts_user_changelist"),
        {"action": "export_as_csv", "_selected_action": [str(i) for i in ids]},
    )
    assert response.status_code == 200, response.content[:500]
    assert response.streaming, "the export must stream, not build the file in memory"
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    body = b"".join(response.streaming_content).decode("utf-8")
    return list(csv.DictReader(io.StringIO(body)))


@pytest.mark.parametrize("lead", ["=", "+", "-", "@", "\t", "\r", "\n"])
def test_text_cells_that_a_spreadsheet_would_run_are_neutralised(role_client, make_user, lead):
    client = role_client(Role.RESEARCHER)
    victim = make_user(Role.EXPERT, username=f"u{ord(lead)}", last_name=f"{lead}cmd|' /C calc'!A0")
    rows = export(client, [victim.pk])
    assert rows[0]["last_name"] == f"'{lead}cmd|' /C calc'!A0"


def test_export_keeps_numbers_and_utf8_and_neutralises_every_hostile_field(role_client, make_user):
    client = role_client(Role.RESEARCHER)
    victim = make_user(Role.EXPERT, **HOSTILE)
    friend = make_user(Role.EXPERT, username="zoë", first_name="Zoë Ünal")

    rows = {row["id"]: row for row in export(client, [victim.pk, friend.pk])}

    hostile = rows[str(victim.pk)]
    for field, value in HOSTILE.items():
        assert hostile[field] == "'" + value
    assert rows[str(friend.pk)]["first_name"] == "Zoë Ünal"
    assert rows[str(friend.pk)]["username"] == "zoë"
    assert str(victim.pk) in rows  # ids are plain numbers, not quoted


def test_export_of_all_rows_across_pages(role_client, make_user):
    client = role_client(Role.RESEARCHER)
    for i in range(5):
        make_user(Role.EXPERT, username=f"bulk{i}")
    response = client.post(
        reverse("admin:accounts_user_changelist"),
        {"action": "export_as_csv", "select_across": "1", "_selected_action": ["0"]},
    )
    body = b"".join(response.streaming_content).decode()
    assert len(list(csv.DictReader(io.StringIO(body)))) == User.objects.count()


def test_non_researchers_cannot_export(role_client, make_user):
    victim = make_user(Role.EXPERT)
    client = role_client(Role.EXPERT)
    response = client.post(
        reverse("admin:accounts_user_changelist"),
        {"action": "export_as_csv", "_selected_action": [str(victim.pk)]},
    )
    assert response.status_code == 302
    assert "text/csv" not in response.get("Content-Type", "")


@pytest.mark.parametrize(
    "value,expected",
    [(3, 3), (2.5, 2.5), (-4, -4), ("-4", "'-4"), (None, ""), (True, "true"), ("plain", "plain")],
)
def test_spreadsheet_safe_leaves_numbers_alone(value, expected):
    assert spreadsheet_safe(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        " =1+1",
        "  +SUM(A1:A9)",
        "\u00a0-2+3",  # no-break space
        "\u3000@SUM(A1)",  # ideographic space
        "\u200b=cmd|' /C calc'!A0",  # zero-width space
        "\ufeff=1+1",  # byte-order mark
        '\uff1dHYPERLINK("http://x")',  # full-width =
        "\uff0bSUM(1,2)",  # full-width +
        "\uff0d2+3",  # full-width -
        "\uff20SUM(A1)",  # full-width @
        " \uff1d1+1",
        "\ufe661+1",  # small =
    ],
)
def test_formulas_behind_whitespace_or_in_full_width_are_neutralised(value):
    assert spreadsheet_safe(value) == "'" + value


@pytest.mark.parametrize("value", ["a = b", " plain", "e-mail", "50% + tax", "x\uff1d1"])
def test_text_with_formula_characters_inside_is_left_alone(value):
    assert spreadsheet_safe(value) == value


def test_export_neutralises_a_padded_and_a_full_width_formula(role_client, make_user):
    client = role_client(Role.RESEARCHER)
    victim = make_user(
        Role.EXPERT, username="padded", first_name="  =1+1", last_name='\uff1dHYPERLINK("x")'
    )
    row = export(client, [victim.pk])[0]
    assert row["first_name"] == "'  =1+1"
    assert row["last_name"] == '\'\uff1dHYPERLINK("x")'
