"""Pseudonyms for Prolific IDs: what every export and API answer shows in place of a
participant's PROLIFIC_PID, except the approvals CSV that Prolific itself needs.

A pseudonym is a keyed hash (HMAC-SHA256, RFC 2104) of the study's id and the Prolific ID:
stable within a study, so that a participant's rows join up across exports, and different
from one study to the next, so that two studies' exports cannot be joined on it. Without the
key (`PSEUDONYM_KEY`, or one derived from `SECRET_KEY`) it cannot be turned back into the ID.

The same value is computed in Python (`pseudonym`) and in SQL (`pseudonym_sql`), so that an
export streamed by PostgreSQL's COPY needs no pass through Python: HMAC is two SHA-256 of the
key padded two ways (computed here once) around the message, and PostgreSQL's built-in
`sha256()` does the rest. `tests/surveys/test_pseudonyms.py` holds the two equal.
"""

import functools
import hashlib
import hmac

from django.conf import settings
from django.db.models import BinaryField, CharField, Expression, F, Func, Value
from django.db.models.functions import Cast, Concat

PREFIX = "P-"
HEX_CHARS = 16  # 64 bits: no collision to fear among a study's few thousand participants
BLOCK = 64  # SHA-256's block size in bytes, which HMAC pads the key to


@functools.cache
def _key(secret_key: str, pseudonym_key: str) -> bytes:
    if pseudonym_key:
        return pseudonym_key.encode()
    # A key of its own, derived from SECRET_KEY: a pseudonym never reveals SECRET_KEY's hash.
    return hmac.new(secret_key.encode(), b"assay-participant-pseudonyms", hashlib.sha256).digest()


def _padded_keys() -> tuple[bytes, bytes]:
    key = _key(settings.SECRET_KEY, settings.PSEUDONYM_KEY)
    if len(key) > BLOCK:
        key = hashlib.sha256(key).digest()
    key = key.ljust(BLOCK, b"\0")
    inner = bytes(b ^ 0x36 for b in key)
    outer = bytes(b ^ 0x5C for b in key)
    return inner, outer


def _message(study_id: int, prolific_pid: str) -> bytes:
    return f"{study_id}:{prolific_pid}".encode()


def pseudonym(*, study_id: int, prolific_pid: str) -> str:
    """The participant's pseudonym in this study; empty for an empty ID (a proxy)."""
    if not prolific_pid:
        return ""
    inner, outer = _padded_keys()
    inner_digest = hashlib.sha256(inner + _message(study_id, prolific_pid)).digest()
    digest = hashlib.sha256(outer + inner_digest)
    return PREFIX + digest.hexdigest()[:HEX_CHARS]


class _Sha256(Func):
    function = "sha256"
    output_field = BinaryField()


class _ToUtf8(Func):
    function = "convert_to"
    template = "%(function)s(%(expressions)s, 'UTF8')"
    output_field = BinaryField()


class _Concat(Func):
    arg_joiner = " || "
    template = "(%(expressions)s)"
    output_field = BinaryField()


def pseudonym_sql(study_id: str | Expression, prolific_pid: str | Expression) -> Expression:
    """`pseudonym` as a query expression over two fields (names or expressions), for
    `annotate` and `values`: `pseudonym_sql("study_id", "prolific_pid")`."""
    study = F(study_id) if isinstance(study_id, str) else study_id
    pid = F(prolific_pid) if isinstance(prolific_pid, str) else prolific_pid
    inner, outer = _padded_keys()
    message = _ToUtf8(Concat(Cast(study, CharField()), Value(":"), pid, output_field=CharField()))
    digest = _Sha256(
        _Concat(Value(outer, BinaryField()), _Sha256(_Concat(Value(inner, BinaryField()), message)))
    )
    return _Pseudonym(pid, digest)


class _Pseudonym(Func):
    """Empty for an empty ID; otherwise the prefix and the digest's first hex characters."""

    output_field = CharField()

    def as_sql(self, compiler, connection, **extra_context):
        pid, digest = self.get_source_expressions()
        pid_sql, pid_params = compiler.compile(pid)
        digest_sql, digest_params = compiler.compile(digest)
        sql = (
            f"CASE WHEN COALESCE({pid_sql}, '') = '' THEN '' ELSE '{PREFIX}' || "
            f"substr(encode({digest_sql}, 'hex'), 1, {HEX_CHARS}) END"
        )
        return sql, (*pid_params, *digest_params)
