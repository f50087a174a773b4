"""Embeddings of texts, kept: a text is sent to an embedding model once, and every later
need of its vector (a recomputation, another measure) reads the stored one.

Vectors are stored by model config, its litellm model string and the text's SHA-256
(models.Embedding); the calls go through the gateway (`gateway.embed`: shared limits,
retries, the ledger), EMBED_BATCH texts to a call. Whoever owns the texts keeps them and
refers to the stored vectors; this module knows nothing of what the texts are.
"""

from collections.abc import Sequence

from . import gateway
from .models import Embedding, ModelConfig, text_digest
from .selectors import embeddings_stored
from .services import embeddings_store

# Texts per embeddings call: well within every provider's limit on inputs per request
# (OpenAI's is 2,048) and on tokens per request for texts of up to a few thousand characters.
EMBED_BATCH = 64


def texts_embed(
    *,
    model: ModelConfig,
    texts: Sequence[str],
    caller: str = "",
    policy: gateway.RetryPolicy = gateway.DEFAULT_POLICY,
) -> list[Embedding]:
    """The stored embedding of each of `texts` by `model`, in their order: those stored
    already are read, the others embedded (each distinct text once) and stored. A call that
    fails raises the gateway's LLMError; the batches stored before it stay stored."""
    digests = [text_digest(text) for text in texts]
    stored = embeddings_stored(model=model, digests=digests)
    missing: dict[str, str] = {}
    for digest, text in zip(digests, texts, strict=True):
        if digest not in stored:
            missing.setdefault(digest, text)
    pending = list(missing.items())
    for start in range(0, len(pending), EMBED_BATCH):
        batch = pending[start : start + EMBED_BATCH]
        embedded = gateway.embed(
            model=model, texts=[text for _digest, text in batch], caller=caller, policy=policy
        )
        made = dict(zip((digest for digest, _text in batch), embedded.vectors, strict=True))
        stored |= embeddings_store(model=model, vectors=made)
    return [stored[digest] for digest in digests]
