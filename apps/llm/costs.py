"""What a call will cost, before it is made: for the estimate a researcher reads before
launching a run, and for the reservation the engine holds against a run's budget.

Prices are the model's own (its configured price per million tokens) or else litellm's
price table; a model with neither is unpriced (None), and an estimate says so rather than
calling it free. Tokens in are estimated from the prompt's characters (four to a token,
litellm's own rule of thumb for unknown tokenizers); tokens out are the model's recent
average for the purpose, from the ledger, or a default until it has answered.
"""

from decimal import Decimal

from django.db.models import Avg, Count, Max

from .models import CallStatus, LLMCall, ModelConfig, Purpose

CHARS_PER_TOKEN = 4
RECENT_CALLS = 200
# Fewer answers than this say too little about a model's longest: a reservation takes the
# default until then.
MIN_HISTORY = 20
# Tokens out before a model has answered for a purpose (a reply, a verdict, a checklist).
DEFAULT_OUTPUT_TOKENS = {
    Purpose.SAMPLE: 600,
    Purpose.GRADE_CRITERION: 80,
    Purpose.GRADE_CHECKLIST: 900,
    Purpose.SCENARIO_RESPONSE: 300,
    Purpose.SURVEY_PROXY: 400,
    Purpose.RUBRIC_DRAFT: 700,
    Purpose.REWRITE: 400,
}
MILLION = Decimal(1_000_000)


def tokens_in(text_chars: int) -> int:
    return max(1, text_chars // CHARS_PER_TOKEN)


def price_per_mtok(model: ModelConfig) -> tuple[Decimal, Decimal] | None:
    """(input, output) USD per million tokens, or None when nobody knows the price."""
    if model.input_price_per_mtok is not None or model.output_price_per_mtok is not None:
        return (model.input_price_per_mtok or Decimal(0), model.output_price_per_mtok or Decimal(0))
    from .gateway import litellm_module, litellm_priced_by_us

    if litellm_priced_by_us(model.litellm_model):
        return None  # litellm has it only from another model's own prices
    try:
        prompt_cost, completion_cost = litellm_module().cost_per_token(
            model=model.litellm_model, prompt_tokens=1_000_000, completion_tokens=1_000_000
        )
    except Exception:
        return None  # litellm does not know this model
    return Decimal(str(prompt_cost)), Decimal(str(completion_cost))


def typical_output_tokens(model: ModelConfig, purpose: str, *, ceiling: bool = False) -> int:
    """The model's average tokens out over its recent successful calls for `purpose`, or,
    with `ceiling`, the most it gave: what a budget reserves, so that a run stops before
    its budget rather than after it."""
    recent = LLMCall.objects.filter(model=model, purpose=purpose, status=CallStatus.OK).order_by(
        "-created_at"
    )[:RECENT_CALLS]
    found = LLMCall.objects.filter(pk__in=recent.values("pk")).aggregate(
        avg=Avg("output_tokens"), max=Max("output_tokens"), n=Count("pk")
    )
    default = DEFAULT_OUTPUT_TOKENS.get(purpose, 500)
    if not found["n"]:
        return default
    if ceiling:
        return max(found["max"], default) if found["n"] < MIN_HISTORY else found["max"]
    return round(found["avg"])


def batch_cost(model: ModelConfig, cost: Decimal | None) -> Decimal | None:
    """What calls that cost `cost` at the list price cost through the model's batch API, at
    its batch price; None when they are unpriced or the model has no batch API."""
    if cost is None or not model.batch_api:
        return None
    return (cost * model.batch_discount).quantize(Decimal("0.000001"))


def call_cost(prices: tuple[Decimal, Decimal] | None, *, tokens_in: int, tokens_out: int):
    """USD for one call at `prices`, or None when unpriced."""
    if prices is None:
        return None
    per_in, per_out = prices
    return ((per_in * tokens_in + per_out * tokens_out) / MILLION).quantize(Decimal("0.000001"))
