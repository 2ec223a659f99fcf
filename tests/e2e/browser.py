"""Small helpers to drive the Streamlit page the way a person does and read what is on screen."""

from __future__ import annotations

import time

from collections.abc import Callable

from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

TIMEOUT_MS = 20_000
# Every `expect` waits as long as the helpers do: with the test files in parallel (scripts/test.sh, one worker per
# core) two apps and two browsers share the machine, and a page can take more than Playwright's default 5 s to redraw
expect.set_options(timeout=TIMEOUT_MS)
SCENARIO_TABLE = "[data-testid='stMarkdownContainer'] table"  # the estimate pages' scenario table (Markdown)
IDLE_APP = "[data-testid='stApp'][data-test-script-state='notRunning']"  # no script run in flight
RERUN_START_MS = 3_000  # an input that changes nothing starts no run; one that does starts within ms
# Counts the script runs the page starts and finishes, from the state the frontend writes on its root
# (`data-test-script-state`, the attribute Streamlit's own browser tests read).
COUNT_RUNS = """if (window.__runs === undefined) {
  window.__runs = {started: 0, finished: 0};
  new MutationObserver(records => records.forEach(r => {
    const state = r.target.getAttribute('data-test-script-state');
    if (state === r.oldValue) return;
    if (state === 'running') window.__runs.started++;
    if (state === 'notRunning') window.__runs.finished++;
  })).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                         attributeFilter: ['data-test-script-state']});
}"""


def open_app(page: Page, url: str) -> None:
    """Load a URL and wait until the scenario table is on screen."""
    page.add_init_script(COUNT_RUNS)
    page.goto(url)
    page.wait_for_selector(f"{SCENARIO_TABLE} td", timeout=60_000)


def table(page: Page) -> list[list[str]]:
    """Rows of the scenario table, header first."""
    rows = page.locator(SCENARIO_TABLE).first.locator("tr")
    # all_inner_texts does not wait: a cell that vanishes while a rerun swaps the table (a page switch, Back)
    # would hold inner_text for its whole timeout, longer than the polls of wait_for_totals
    return [rows.nth(r).locator("td,th").all_inner_texts() for r in range(rows.count())]


def totals(page: Page) -> dict[str, str]:
    """Scenario name -> 'Required GPU Memory' cell of the scenario table."""
    header, *rows = table(page)
    column = next(i for i, name in enumerate(header) if name.startswith("Required GPU Memory"))
    return {row[0]: row[column] for row in rows}


def wait_for_totals(page: Page, expected: dict[str, str]) -> dict[str, str]:
    """Poll the table until it shows `expected` (the page reruns after each input)."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    seen = {}
    while time.monotonic() < deadline:
        try:
            seen = totals(page)
        except Exception:  # noqa: BLE001 - the grid is being replaced while the page reruns
            seen = {}
        if all(seen.get(k) == v for k, v in expected.items()):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"table shows {seen}, expected {expected}")


def wait_for_change(page: Page, before: dict[str, str]) -> dict[str, str]:
    """Poll until the table's totals differ from `before`."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        try:
            now = totals(page)
        except Exception:  # noqa: BLE001
            now = before
        if now and now != before:
            idle(page)
            return totals(page)
        time.sleep(0.1)
    raise AssertionError(f"table did not change from {before}")


def idle(page: Page) -> None:
    """Wait until no script run is in flight."""
    page.wait_for_selector(IDLE_APP, state="attached", timeout=TIMEOUT_MS)


def settle(page: Page, action: Callable[[], None]) -> None:
    """Do `action` (an input change) and wait until the run it starts has finished. The frontend starts
    that run up to ~0.5 s after the keystroke, and the scenario table is drawn before the rest of the
    page, so neither "idle" nor "the table changed" alone says the page is ready for the next input: one
    typed while a run still sends its elements can be reset by them."""
    idle(page)
    started, finished = page.evaluate("[window.__runs.started, window.__runs.finished]")
    action()
    try:
        page.wait_for_function(f"() => window.__runs.started > {started}", timeout=RERUN_START_MS)
    except PlaywrightTimeout:
        return  # the input changed nothing, so nothing reran
    page.wait_for_function(f"() => window.__runs.finished > {finished}", timeout=TIMEOUT_MS)
    idle(page)


def set_number(page: Page, label: str, value: float | int) -> None:
    box = page.get_by_role("spinbutton", name=label, exact=True)

    def type_value() -> None:
        box.fill(str(value))
        box.press("Enter")
    settle(page, type_value)


def choose(page: Page, label: str, option_text: str) -> None:
    """Pick an option of a select box: open it, type its text (select boxes are searchable) and click the
    option. Typing only once the box has the focus: keys sent to a box that is still moving (an expander
    opening above it) would land in whatever widget the click hit instead."""
    combo = page.locator("[data-testid='stSelectbox']").filter(has=page.get_by_text(label, exact=True)) \
        .get_by_role("combobox")

    def pick() -> None:
        for attempt in range(3):  # a list that opened off screen or closed again is opened once more
            combo.scroll_into_view_if_needed()
            combo.click()
            expect(combo).to_be_focused(timeout=TIMEOUT_MS)
            page.keyboard.type(option_text)
            try:
                page.get_by_role("option").filter(has_text=option_text).first.click(timeout=5_000)
                return
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
                page.keyboard.press("Escape")
    settle(page, pick)


def radio(page: Page, name: str) -> None:
    settle(page, page.get_by_role("radio", name=name, exact=True).click)


def share_link(page: Page) -> str:
    page.locator("[data-testid='stPopoverButton']").filter(has_text="Share").click()
    code = page.locator("[data-testid='stPopoverBody'] code")
    expect(code).to_contain_text("?v=1", timeout=TIMEOUT_MS)
    link = code.inner_text().strip()
    page.keyboard.press("Escape")
    return link
