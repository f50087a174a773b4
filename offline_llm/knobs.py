"""The offline provider's knobs: the flags of `python -m offline_llm`. Every flag can also
come from the environment as OFFLINE_LLM_<NAME> (OFFLINE_LLM_LATENCY_MS=300); a flag on the
command line wins.
"""

import argparse
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

ENV_PREFIX = "OFFLINE_LLM_"


@dataclass(frozen=True)
class Knobs:
    host: str = "127.0.0.1"
    port: int = 8089
    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_hang: float = 0.0
    rate_malformed: float = 0.0
    retry_after: float = 1.0
    hang_seconds: float = 600.0
    fault_seed: int | None = None
    limit_concurrent: int = 0
    limit_per_minute: int = 0
    batch_seconds: float = 2.0
    batch_rate_failed: float = 0.0
    batch_rate_expire: float = 0.0
    batch_cancel_seconds: float = 0.5
    batch_max_requests: int = 50_000
    batch_max_bytes: int = 200 * 1024 * 1024

    def __post_init__(self) -> None:
        if not is_loopback(self.host):
            # It accepts any API key and answers anyone: it must not be reachable off the machine.
            raise ValueError(f"The offline provider listens on loopback only, not {self.host!r}.")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"--port must be 0-65535 (0: any free port), not {self.port}.")
        for name in (
            "latency_ms",
            "jitter_ms",
            "retry_after",
            "hang_seconds",
            "batch_seconds",
            "batch_cancel_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name.replace('_', '-')} cannot be negative.")
        rates = [self.rate_429, self.rate_500, self.rate_hang, self.rate_malformed]
        if any(not 0 <= rate <= 1 for rate in rates) or sum(rates) > 1:
            raise ValueError("Fault rates must each be 0-1 and add up to at most 1.")
        for name in ("batch_rate_failed", "batch_rate_expire"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"--{name.replace('_', '-')} must be 0-1.")
        for name in ("limit_concurrent", "limit_per_minute"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name.replace('_', '-')} cannot be negative (0: none).")
        for name in ("batch_max_requests", "batch_max_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1.")

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> "Knobs":
        return cls(**{field.name: options[field.name] for field in fields(cls)})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


HELP = {
    "host": "address to listen on; loopback only",
    "port": "port to listen on; 0 picks a free one (the URL is printed)",
    "latency_ms": "added to every answer, without blocking other requests",
    "jitter_ms": "random extra latency, 0 to this many ms",
    "rate_429": "share of requests answered 429 with Retry-After",
    "rate_500": "share of requests answered 500",
    "rate_hang": "share of requests that hang for --hang-seconds, so that clients time out",
    "rate_malformed": "share of JSON-purpose answers returned as broken JSON",
    "retry_after": "seconds in the Retry-After header of a 429",
    "hang_seconds": "how long a hanging request hangs",
    "fault_seed": "seed for drawing faults (answers are deterministic regardless)",
    "limit_concurrent": "a hidden limit: requests above this many at once get a 429 (0: none)",
    "limit_per_minute": "a hidden limit: requests above this many a minute get a 429 (0: none)",
    "batch_seconds": "how long a batch takes from its creation to its end",
    "batch_rate_failed": "share of a batch's lines that fail (a 500 in its error file)",
    "batch_rate_expire": "share of batches that run out of their window with part undone",
    "batch_cancel_seconds": "how long a cancelled batch stays cancelling",
    "batch_max_requests": "the most requests a batch input file may hold",
    "batch_max_bytes": "the most bytes a batch input file may have",
}
TYPES = {
    "host": str,
    "port": int,
    "fault_seed": int,
    "limit_concurrent": int,
    "limit_per_minute": int,
    "batch_max_requests": int,
    "batch_max_bytes": int,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for field in fields(Knobs):
        env_name = ENV_PREFIX + field.name.upper()
        # argparse converts a string default with `type`, so a bad variable is reported like
        # a bad flag.
        default = os.environ.get(env_name) or field.default
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            type=TYPES.get(field.name, float),
            default=default,
            help=f"{HELP[field.name]} (env {env_name}; default {field.default})",
        )
