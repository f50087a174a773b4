"""The answer saves and page times are hand-written INSERT statements (services/answers.py),
one statement a request, and so is a first bundle (services/reservation.py). Django does not
see them: a NOT NULL column without a database default, added to `Answer`, `PageTime` or
`Assignment` and to a migration but not to these statements, would pass every ORM test and
make every autosave (or arrival) fail. This holds them to the models."""

import re

import pytest
from django.db.models import NOT_PROVIDED

from apps.surveys.models import Answer, Assignment, PageTime
from apps.surveys.services import answers, reservation

INSERT = re.compile(r"INSERT INTO (\w+)\s*\(([^)]*)\)")


def inserts_into(table: str) -> list[set[str]]:
    """The column lists of the modules' INSERT statements into `table`."""
    found = []
    for value in [*vars(answers).values(), *vars(reservation).values()]:
        if isinstance(value, str):
            for into, columns in INSERT.findall(value):
                if into == table:
                    found.append({c.strip() for c in columns.split(",")})
    return found


@pytest.mark.parametrize("model", [Answer, PageTime, Assignment], ids=lambda m: m.__name__)
def test_the_hand_written_inserts_name_every_column_the_database_needs(model):
    statements = inserts_into(model._meta.db_table)
    assert statements, f"services/answers.py has no INSERT into {model._meta.db_table}"
    needed = {
        field.column
        for field in model._meta.concrete_fields
        if not field.null and field.db_default is NOT_PROVIDED and not field.primary_key
    }
    known = {field.column for field in model._meta.concrete_fields}
    for columns in statements:
        assert needed <= columns, f"an INSERT leaves out {sorted(needed - columns)}"
        assert columns <= known, f"an INSERT names {sorted(columns - known)}, not in the model"
