"""The offline provider as a pytest fixture: a real server in a subprocess, real HTTP.

`offline_provider(**knobs)` starts one with those knobs (`latency_ms=300`, `rate_429=0.2`,
`hang_seconds=2`, `fault_seed=7`, ... the flags of `python -m offline_llm` with
underscores) on a free loopback port and returns its base URL, ending in /v1 (what litellm
takes as api_base). Every provider a test starts is stopped when the test ends.

Fixtures are defined here, not in a conftest, so that any conftest can import them.
"""

import contextlib
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
ANNOUNCED_URL = re.compile(r"http://\S+/v1")
MODULE = (sys.executable, "-m", "offline_llm")
START_TIMEOUT = 20.0


@contextlib.contextmanager
def running_offline_provider(**knobs: object) -> Iterator[str]:
    args = [*MODULE, "--port", "0"]
    for name, value in knobs.items():
        args += ["--" + name.replace("_", "-"), str(value)]
    # A developer's OFFLINE_LLM_* variables must not change what a test gets.
    env = {key: value for key, value in os.environ.items() if not key.startswith("OFFLINE_LLM_")}
    process = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        base_url = announced_url(process)
        _wait_until_answering(base_url)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


def announced_url(process: subprocess.Popen) -> str:
    # With --port 0 the server picks the port, so the line it prints is the only source.
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"The offline provider exited with status {process.returncode}.")
        readable, _, _ = select.select([process.stdout], [], [], 0.1)
        if readable:
            found = ANNOUNCED_URL.search(process.stdout.readline())
            if found:
                return found.group(0)
    raise RuntimeError("The offline provider did not announce its URL in time.")


def _wait_until_answering(base_url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


@pytest.fixture
def offline_provider() -> Iterator[Callable[..., str]]:
    """`offline_provider(**knobs) -> base_url`; each call starts another provider."""
    with contextlib.ExitStack() as stack:
        yield lambda **knobs: stack.enter_context(running_offline_provider(**knobs))


@pytest.fixture(scope="session")
def offline_provider_url() -> Iterator[str]:
    """One provider with default knobs for the whole session: for tests that only need
    answers (its stats are shared, so tests of stats start their own)."""
    with running_offline_provider() as base_url:
        yield base_url
