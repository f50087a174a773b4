"""Model names as the provider reads them: what a name fixes about a model is hashed from it."""

import hashlib
from functools import lru_cache


@lru_cache(maxsize=256)
def name_hash(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=4).digest(), "big")


def short_name(model: str) -> str:
    # litellm strips "openai/" before sending, but a direct caller may not.
    return model.rsplit("/", 1)[-1]
