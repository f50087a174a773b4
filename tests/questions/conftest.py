from tests.rubrics.conftest import (
    expert,
    fast_password_hashing,
    offline_provider,
    offline_provider_url,
    researcher,
    reviewer,
)

__all__ = [
    "expert", "fast_password_hashing", "offline_provider", "offline_provider_url",
    "researcher", "reviewer",
]  # fmt: skip
