"""Form fields every app's pages share."""

from django import forms

# The largest whole number PostgreSQL's bigint holds: a primary key's, a seed's.
BIGINT_MAX = 2**63 - 1


class IdField(forms.IntegerField):
    """A row's id in a query or a form: a whole number a primary key can hold. Anything
    else ('abc', '²', 31 digits) is the form's error, never a 500 from the database."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", BIGINT_MAX)
        super().__init__(**kwargs)
