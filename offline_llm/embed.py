"""Offline embeddings: a hashed bag of stemmed words, deterministic per (model, text).

Each content word of a text (offline_llm/words.py: lowercased, stopwords dropped, stemmed)
is hashed with the model's name to one of `dimensions` positions and a sign, weighted
1 + log(count), and the vector is scaled to length 1. So texts that share words have a
higher cosine than texts that do not (unrelated texts land near 0, with a little noise
from collisions), and two models give different vectors for one text. It is a demo of the
shape of embeddings, not of their meaning: synonyms do not meet.

Values are rounded to float32, so that the "float" and "base64" encodings (OpenAI's SDK
asks for base64 unless told otherwise) carry the same numbers.
"""

import base64
import hashlib
import math
import struct
from collections import Counter

from .words import content_words, stem, words

DEFAULT_DIMENSIONS = 256
MAX_DIMENSIONS = 4096
MAX_INPUTS = 2048  # OpenAI's limit per request
EMBEDDING_MODELS = ("offline-embed",)


def _short_name(model: str) -> str:
    # litellm strips "openai/" before sending, but a direct caller may not.
    return model.rsplit("/", 1)[-1]


def _tokens(text: str) -> list[str]:
    """What the vector is made of: the stems of the content words, else every word (a text
    of stopwords), else the text itself (punctuation only), so no vector is all zeros."""
    found = [stem(word) for word in content_words(text)]
    if not found:
        found = [word.lower() for word in words(text)]
    return found or [text.strip() or text]


def _slot(model: str, token: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(f"{model}\x00{token}".encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "big")
    return value % dimensions, 1.0 if (value >> 63) & 1 else -1.0


def vector(model: str, text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The embedding of `text` by `model`: unit length, float32 values."""
    name = _short_name(model)
    values = [0.0] * dimensions
    for token, count in Counter(_tokens(text)).items():
        index, sign = _slot(name, token, dimensions)
        values[index] += sign * (1.0 + math.log(count))
    norm = math.sqrt(math.fsum(v * v for v in values))
    if norm == 0.0:  # every token cancelled out: a collision with opposite signs
        index, _sign = _slot(name, "\x00" + text, dimensions)
        values[index], norm = 1.0, 1.0
    packed = struct.pack(f"<{dimensions}f", *(v / norm for v in values))
    return list(struct.unpack(f"<{dimensions}f", packed))


def encoded(values: list[float], encoding_format: str) -> list[float] | str:
    """The vector as OpenAI sends it: a list of floats, or base64 of little-endian float32."""
    if encoding_format == "base64":
        return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")
    return values
