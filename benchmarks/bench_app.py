"""How fast the app feels, in a real browser (issue 4): cold start, rerun latency, opening a shared link,
and AppTest rerun time per page.

    .venv/bin/python benchmarks/bench_app.py [--changes 25] [--opens 20] [--colds 10]

Needs Debian's Chromium (apt-get install -y chromium) and Playwright (requirements-dev.txt). Loopback only.
Targets: rerun median < 300 ms and p95 < 600 ms; cold start < 5 s. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

import estimator as est  # noqa: E402
from tests.e2e.browser import IDLE_APP  # noqa: E402
from tests.e2e.conftest import (CHROMIUM_FLAGS, chromium_path, free_port, start_server, stop_server,  # noqa: E402
                                wait_healthy)

TOTAL_CELL = "[data-testid='stMarkdownContainer'] td"  # the scenario table's cells (one is the first row's total)
SHOWS = ("(text) => [...document.querySelectorAll(\"" + TOTAL_CELL.replace('"', '\\"')
         + "\")].some(c => c.innerText === text)")


def shown(total_bytes: int) -> str:
    """A total as the scenario table shows it: GB to 0.1."""
    return f"{total_bytes / 1e9:,.1f}"


def quick_total(seq_len: int, concurrency: int = 1) -> str:
    """The 16-bit row's total the page shows for the default 7 B model."""
    s = est.InferenceScenario(est.ParamCount.from_billions(7), seq_len=seq_len, concurrency=concurrency)
    return shown(est.inference_table(s)[0].total)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cold_start(playwright, path: str) -> float:
    """Seconds from `streamlit run` to the first number on screen, in a browser launched just before (empty
    caches, like a first visit)."""
    browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    server = start_server(port)
    try:
        page = browser.new_page()
        while True:
            try:
                page.goto(url, timeout=1000)
                break
            except Exception:  # noqa: BLE001 - the server is not listening yet
                if time.perf_counter() - started > 60:
                    raise
                time.sleep(0.05)
        page.wait_for_function(SHOWS, arg=quick_total(2048), timeout=60_000, polling=10)
        return time.perf_counter() - started
    finally:
        stop_server(server)
        browser.close()


def rerun_latencies(browser, url: str, changes: int) -> list[float]:
    """Milliseconds from committing a new sequence length to its total on screen."""
    page = browser.new_page()
    page.goto(url)
    page.wait_for_function(SHOWS, arg=quick_total(2048), timeout=60_000)
    box = page.get_by_role("spinbutton", name="Sequence length", exact=True)
    out = []
    for i in range(changes):
        seq = 4096 + 1024 * i
        box.fill(str(seq))
        start = time.perf_counter()
        box.press("Enter")
        page.wait_for_function(SHOWS, arg=quick_total(seq), timeout=20_000, polling=10)
        out.append(1000 * (time.perf_counter() - start))
        page.wait_for_selector(IDLE_APP, state="attached")  # the rest of the page, before the next change
    page.close()
    return out


def shared_link_opens(browser, url: str, opens: int) -> list[float]:
    """Milliseconds from opening a shared link in a fresh browser context to its numbers on screen."""
    out = []
    for i in range(opens):
        seq = 8192 + 512 * i
        context = browser.new_context()
        page = context.new_page()
        start = time.perf_counter()
        page.goto(f"{url}/?v=1&p=inference&seq={seq}&conc=2")
        page.wait_for_function(SHOWS, arg=quick_total(seq, concurrency=2), timeout=30_000, polling=10)
        out.append(1000 * (time.perf_counter() - start))
        context.close()
    return out


def apptest_reruns(runs: int = 10) -> dict[str, float]:
    """Median milliseconds of an AppTest rerun per page (script time without a browser)."""
    from streamlit.testing.v1 import AppTest

    out = {}
    for page in ("inference", "finetune", "compare", "methodology"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params["p"] = page
        at.run()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            at.run()
            times.append(1000 * (time.perf_counter() - start))
        out[page] = statistics.median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=25)
    parser.add_argument("--opens", type=int, default=20)
    parser.add_argument("--colds", type=int, default=10, help="cold starts, each with a new server and browser")
    args = parser.parse_args()
    path = chromium_path()
    if path is None:
        sys.exit("Chromium is missing: apt-get update && apt-get install -y chromium")
    with sync_playwright() as playwright:
        colds = [cold_start(playwright, path) for _ in range(args.colds)]
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = start_server(port)
        try:
            wait_healthy(url, server)
            reruns = rerun_latencies(browser, url, args.changes)
            opens = shared_link_opens(browser, url, args.opens)
        finally:
            stop_server(server)
            browser.close()
    scripts = apptest_reruns()
    command = f"python benchmarks/bench_app.py --changes {args.changes} --opens {args.opens} --colds {args.colds}"
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}, "
          f"Chromium headless, `{command}`\n")
    print("| measure | median | p95 | target |")
    print("|---|---|---|---|")
    print(f"| cold start: `streamlit run` to first number on screen ({len(colds)} starts, new browser each) | "
          f"{statistics.median(colds):.2f} s | {percentile(colds, 0.95):.2f} s (max {max(colds):.2f} s) | < 5 s |")
    print(f"| rerun after an input change ({len(reruns)} changes) | {statistics.median(reruns):.0f} ms | "
          f"{percentile(reruns, 0.95):.0f} ms | median < 300 ms, p95 < 600 ms |")
    print(f"| shared link in a fresh browser context to numbers ({len(opens)} opens) | "
          f"{statistics.median(opens):.0f} ms | {percentile(opens, 0.95):.0f} ms | - |")
    for page, ms in scripts.items():
        print(f"| AppTest rerun, {page} page | {ms:.0f} ms | - | - |")


if __name__ == "__main__":
    main()
