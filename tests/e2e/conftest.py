"""Browser tests: a real Streamlit server and Debian's Chromium driven by Playwright.

The session starts `streamlit run app.py` on a free loopback port, waits for `/_stcore/health`, and stops
the server at the end whatever happens. Without Chromium the tests skip with the command that installs it;
under CI (CI=true) a missing browser is a failure, because CI installs it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import replicas
from deploy.replicas import free_port  # noqa: F401  (the browser tests and benchmarks take it from here)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
INSTALL_HINT = "install Chromium to run the browser tests: apt-get update && apt-get install -y chromium"


def chromium_path() -> str | None:
    return next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)


def wait_healthy(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    replicas.wait_healthy(url, [process], timeout)


def start_server(port: int, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The app on 127.0.0.1:`port`, with this process's environment or `env`."""
    return subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="session")
def browser_path() -> str:
    path = chromium_path()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Chromium is missing in CI; {INSTALL_HINT}")
        pytest.skip(INSTALL_HINT)
    return path


@contextlib.contextmanager
def running_app(env: dict[str, str] | None = None) -> Iterator[str]:
    """The app's URL while it runs on a free port (with `env` as its environment when given)."""
    port = free_port()
    process = start_server(port, env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    finally:
        stop_server(process)


@pytest.fixture(scope="session")
def app_url(browser_path) -> str:
    with running_app() as url:
        yield url


@pytest.fixture(scope="session")
def browser(browser_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=browser_path, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, request):
    """A fresh browser context per test; a full-page screenshot is saved after every test, pass or fail."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    finally:
        context.close()
