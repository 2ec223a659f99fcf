"""Small helpers to drive the Streamlit page the way a person does and read what is on screen."""

from __future__ import annotations

import time

from playwright.sync_api import Page, expect

TIMEOUT_MS = 20_000


SCENARIO_TABLE = "[data-testid='stTable']"  # the estimate pages' scenario table (a static HTML table)


def open_app(page: Page, url: str) -> None:
    """Load a URL and wait until the scenario table is on screen."""
    page.goto(url)
    page.wait_for_selector(f"{SCENARIO_TABLE} td", timeout=60_000)


def table(page: Page) -> list[list[str]]:
    """Rows of the scenario table, header first."""
    rows = page.locator(SCENARIO_TABLE).first.locator("tr")
    return [[cell.inner_text() for cell in rows.nth(r).locator("td,th").all()] for r in range(rows.count())]


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
            time.sleep(0.3)  # let the rerun finish writing every cell
            return totals(page)
        time.sleep(0.1)
    raise AssertionError(f"table did not change from {before}")


def idle(page: Page) -> None:
    """Wait until the script is not running (Streamlit shows its status widget while it runs)."""
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stStatusWidget']\")",
                           timeout=TIMEOUT_MS)


def set_number(page: Page, label: str, value: float | int) -> None:
    idle(page)
    box = page.get_by_role("spinbutton", name=label, exact=True)
    box.fill(str(value))
    box.press("Enter")


def choose(page: Page, label: str, option_text: str) -> None:
    """Pick an option of a select box by typing its text (select boxes are searchable) and pressing Enter."""
    idle(page)
    page.locator("[data-testid='stSelectbox']").filter(has=page.get_by_text(label, exact=True)).click()
    page.keyboard.type(option_text)
    expect(page.get_by_role("option").filter(has_text=option_text).first).to_be_visible(timeout=TIMEOUT_MS)
    page.keyboard.press("Enter")


def radio(page: Page, name: str) -> None:
    idle(page)
    page.get_by_role("radio", name=name, exact=True).click()


def share_link(page: Page) -> str:
    page.locator("[data-testid='stPopoverButton']").filter(has_text="Share").click()
    code = page.locator("[data-testid='stPopoverBody'] code")
    expect(code).to_contain_text("?v=1", timeout=TIMEOUT_MS)
    link = code.inner_text().strip()
    page.keyboard.press("Escape")
    return link
