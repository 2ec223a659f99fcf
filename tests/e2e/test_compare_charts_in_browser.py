"""Issue 14 in a real browser: the Compare chart keeps same-named scenarios apart (item 1), and on a 390 px
phone the answer comes first and the charts keep the screen's width (item 5)."""

from __future__ import annotations

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.e2e.browser import TIMEOUT_MS, choose, idle, open_app, settle
from tests.e2e.conftest import ARTIFACTS

CHART = "[data-testid='stPlotlyChart']"
LORA = "7B · LoRA · b1 × 2,048 tok"


def _figure(page, index: int = 0) -> dict:
    """The x categories of every trace and the annotation texts of a chart, as plotly holds them."""
    return page.locator(f"{CHART} .js-plotly-plot").nth(index).evaluate(
        "gd => ({x: gd.data.map(t => t.x), annotations: gd.layout.annotations.map(a => [a.x, a.text]),"
        " ticks: Array.from(gd.querySelectorAll('.xtick text')).map(t => t.textContent)})")


def test_the_same_lora_row_added_twice_is_two_bars_named_as_in_the_table(page, app_url):
    open_app(page, f"{app_url}/?v=1&p=finetune")
    choose(page, "Row for GPU fit and comparison", "LoRA")
    add = page.get_by_role("button", name="Add to comparison")
    settle(page, add.click)
    expect(page.get_by_text("Added to the comparison (1 of 6)")).to_be_visible(timeout=20_000)
    settle(page, add.click)
    expect(page.get_by_text("Added to the comparison (2 of 6)")).to_be_visible(timeout=20_000)
    page.get_by_role("link", name="Compare").click()
    page.wait_for_selector("[data-testid='stDataFrame'] td", state="attached", timeout=30_000)
    expect(page.locator(f"{CHART} svg.main-svg").first).to_be_visible(timeout=20_000)
    idle(page)
    # every trace redrawn with both scenarios: under load Plotly and Streamlit may redraw more than once, so wait for
    # the state the test expects (a wrong chart never reaches it: the wait times out and the assert shows the data)
    expected = [LORA, f"{LORA} (2)"]
    try:
        page.wait_for_function("([sel, want]) => { const d = document.querySelector(sel)?.data; return d?.length > 0 "
                               "&& d.every(t => JSON.stringify(Array.from(t.x || [])) === JSON.stringify(want)); }",
                               arg=[f"{CHART} .js-plotly-plot", expected], timeout=20_000)
    except PlaywrightTimeout:
        pass
    figure = _figure(page)
    assert all(x == expected for x in figure["x"]), figure["x"]  # one bar per scenario, not one of twice the size
    assert page.locator(f"{CHART} .xtick").count() == 2
    assert [t.replace(" ", "") for t in figure["ticks"]] == ["7B·LoRAb1×2,048tok", "7B·LoRAb1×2,048tok(2)"]
    totals = [(x, text) for x, text in figure["annotations"] if text.endswith(" GB") and "usable" not in text]
    assert totals == [(LORA, "18.1 GB"), (f"{LORA} (2)", "18.1 GB")]
    bars = page.locator(f"{CHART} .barlayer .trace").first.locator(".point")
    assert bars.count() == 2
    first, second = (bars.nth(i).bounding_box() for i in range(2))
    assert second["x"] >= first["x"] + first["width"]  # side by side, not stacked


def test_on_a_phone_the_answer_is_on_the_first_screen_and_charts_use_the_width(browser, app_url):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        open_app(page, f"{app_url}/?v=1&p=finetune")
        headline = page.locator("[class*='st-key-headline-finetune'] [data-testid='stMetricValue']")
        expect(headline).to_have_text("87.4 GB", timeout=20_000)
        box = headline.bounding_box()
        assert box is not None and box["y"] + box["height"] < 844  # above the form, on the first screen
        chart = page.locator(f"{CHART} .js-plotly-plot").first
        chart.scroll_into_view_if_needed()
        plot = page.locator(f"{CHART} .nsewdrag").first.bounding_box()  # the plot area
        assert plot["width"] >= 0.7 * chart.bounding_box()["width"]  # was under half, beside a 105 px label margin
        ticks = _figure(page)["ticks"]
        assert "LoRA" in ticks and not any("..." in t or "…" in t for t in ticks)
        labels = page.locator(f"{CHART} .annotation-text").all_text_contents()
        assert "RTX 4090 (25.4 GB usable)" in labels  # CUDA's total for the card, 25,386,352,640 bytes (gpus.json)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "phone_finetune.png"), full_page=True)
    finally:
        context.close()
    wide = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = wide.new_page()
        open_app(page, f"{app_url}/?v=1&p=finetune")
        # beside the form already: hidden by the page's st.html style; on a loaded machine (a CI run, and 3 of 5
        # runs right after it) the headline stayed visible past the default 5 s before the style applied
        expect(page.locator("[class*='st-key-headline-finetune']")).to_be_hidden(timeout=TIMEOUT_MS)
    finally:
        wide.close()
