"""ModelConfigs pointing at an offline provider started by a test."""

from decimal import Decimal

from apps.llm.models import ModelConfig


def api_base(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


def offline_model(base_url: str, name: str = "offline-terse", **fields) -> ModelConfig:
    defaults = {
        "display_name": f"{name} @ {base_url}",
        "family": "Offline",
        "litellm_model": f"openai/{name}",
        "api_base": api_base(base_url),
        "max_concurrent": 8,
        "timeout_seconds": 10,
        "input_price_per_mtok": Decimal("2.50"),
        "output_price_per_mtok": Decimal("10.00"),
    }
    defaults.update(fields)
    return ModelConfig.objects.create(**defaults)
