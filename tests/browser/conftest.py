"""Headless Chromium through Playwright, driving the system's Chromium.

Without Chromium these tests skip with a loud notice, unless REQUIRE_BROWSER=1 (CI), when
they fail. Screenshots go to test-artifacts/.
"""

import os
import shutil
import warnings
from pathlib import Path

import pytest

from tests.conftest import ROOT

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> str | None:
    explicit = os.environ.get("CHROMIUM_PATH")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    if path is None:
        message = "Chromium not found (set CHROMIUM_PATH or install chromium): browser tests"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"{message} are required (REQUIRE_BROWSER=1)")
        warnings.warn(f"\n\n*** {message} SKIPPED ***\n", stacklevel=1)
        pytest.skip(f"{message} skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=path, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def new_context(browser, live_server):
    contexts = []

    def make(**kwargs):
        kwargs.setdefault("base_url", live_server.url)
        context = browser.new_context(**kwargs)
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_context):
    return new_context().new_page()


@pytest.fixture
def screenshot(request):
    ARTIFACTS.mkdir(exist_ok=True)

    def take(page, label: str):
        name = (
            f"{request.node.name}-{label}.png".replace("/", "_").replace("[", "-").replace("]", "")
        )
        page.screenshot(path=str(ARTIFACTS / name), full_page=True)

    return take


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
