"""The engine's set-based writes against real PostgreSQL."""

import pytest
from django.db import DataError, transaction

from apps.llm import engine
from apps.llm.models import CallStatus, LLMCall, Purpose
from tests.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db


def test_rows_insert_stores_values_as_given_and_fills_the_rest_from_defaults():
    model = ModelConfigFactory()
    text = 'He said "no"; \\ then, in Ελληνικά, a tab\t, a newline\n and =1+1'
    inserted = engine.rows_insert(
        LLMCall,
        [
            {
                "model_id": model.pk,
                "attempt": 1,
                "status": CallStatus.OK,
                "error_message": text,
                "cost_usd": "0.000125",
                "prompt_template_id": None,
            },
            {
                "model_id": model.pk,
                "attempt": 2,
                "status": CallStatus.TIMEOUT,
                "error_message": "",
                "cost_usd": None,
                "prompt_template_id": None,
            },
        ],
        constants={"purpose": Purpose.SAMPLE, "latency_ms": 300},
    )
    assert inserted == 2
    first, second = LLMCall.objects.filter(model=model).order_by("attempt")
    assert (first.status, first.error_message, str(first.cost_usd)) == ("ok", text, "0.000125")
    assert (second.status, second.cost_usd) == ("timeout", None)
    for row in (first, second):
        assert (row.purpose, row.latency_ms) == (Purpose.SAMPLE, 300)  # constants
        assert (row.input_tokens, row.caller, row.error_class) == (0, "", "")  # defaults
        assert row.created_at is not None  # auto_now_add


def test_rows_insert_refuses_a_name_that_is_not_a_column():
    with pytest.raises(ValueError, match="no columns \\['model'\\]"):
        engine.rows_insert(LLMCall, [{"model": 1}])
    assert engine.rows_insert(LLMCall, []) == 0


def test_rows_insert_keeps_the_columns_limits():
    model = ModelConfigFactory()
    with pytest.raises(DataError), transaction.atomic():
        engine.rows_insert(
            LLMCall,
            [{"model_id": model.pk, "attempt": 1, "status": "x" * 21}],
            constants={"purpose": Purpose.SAMPLE},
        )
    assert not LLMCall.objects.filter(model=model).exists()
