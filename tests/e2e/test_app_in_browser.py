"""The app in a real browser: what a person types, clicks and reads (issue 4's seven scenarios)."""

from __future__ import annotations

import csv
import io
import json

from playwright.sync_api import expect

from estimator.cli import main as cli_main
from tests.e2e.browser import (choose, open_app, radio, set_number, settle, share_link, table, totals, wait_for_change,
                               wait_for_totals)

REFERENCE_INFERENCE = {"Inference (16-bit)": "18.8", "Inference (8-bit)": "11.8", "Inference (4-bit)": "8.3"}
DETAILED_INFERENCE = ("Inference (16-bit, BF16)", "Inference (8-bit, FP8)", "Inference (4-bit, AWQ)")  # named formats
REFERENCE_FINETUNE = {"Full-parameter": "87.4", "LoRA": "18.1", "QLoRA (8-bit)": "11.1", "QLoRA (4-bit)": "7.6"}


def test_inference_form_shows_the_reference_table(page, app_url):
    open_app(page, app_url)
    set_number(page, "Total parameters (B)", 13)
    wait_for_totals(page, {"Inference (16-bit)": "33.2"})
    set_number(page, "Total parameters (B)", 7)
    set_number(page, "Inference concurrency", 1)
    set_number(page, "Sequence length", 2048)
    assert wait_for_totals(page, REFERENCE_INFERENCE) == REFERENCE_INFERENCE


def test_finetune_form_shows_the_reference_table(page, app_url):
    open_app(page, f"{app_url}/?v=1&p=finetune")
    set_number(page, "Batch size", 2)
    wait_for_change(page, REFERENCE_FINETUNE)
    set_number(page, "Total parameters (B)", 7)
    choose(page, "Optimizer", "Adam / AdamW")
    set_number(page, "Batch size", 1)
    set_number(page, "Sequence length", 2048)
    assert wait_for_totals(page, REFERENCE_FINETUNE) == REFERENCE_FINETUNE


def _cli_totals(capsys, *argv) -> list[str]:
    capsys.readouterr()
    assert cli_main(["inference", *argv, "--json"]) == 0
    return [f"{row['total_bytes'] / 1e9:.1f}" for row in json.loads(capsys.readouterr().out)["rows"]]


def test_catalog_model_numbers_follow_context_and_kv_dtype_and_equal_the_cli(page, app_url, capsys):
    open_app(page, app_url)
    radio(page, "Catalog")
    choose(page, "Catalog model", "meta-llama/Llama-3.1-8B")
    cli = _cli_totals(capsys, "--model", "meta-llama/Llama-3.1-8B")
    first = wait_for_totals(page, dict(zip(DETAILED_INFERENCE, cli)))
    set_number(page, "Sequence length", 32768)
    second = wait_for_change(page, first)
    page.get_by_text("Advanced", exact=True).click()
    choose(page, "KV-cache dtype", "FP8")
    third = wait_for_change(page, second)
    expected = _cli_totals(capsys, "--model", "meta-llama/Llama-3.1-8B", "--seq-len", "32768", "--kv-dtype", "fp8")
    assert list(third.values()) == expected
    assert first != second != third


def test_a_share_link_reproduces_inputs_and_numbers_in_a_new_browser(page, app_url, browser, capsys):
    open_app(page, app_url)
    radio(page, "Catalog")
    choose(page, "Catalog model", "Qwen/Qwen3-8B")
    wait_for_change(page, REFERENCE_INFERENCE)
    set_number(page, "Inference concurrency", 16)
    set_number(page, "Sequence length", 8192)
    # both inputs applied (a change of the totals alone can be the first of the two reruns)
    cli = _cli_totals(capsys, "--model", "Qwen/Qwen3-8B", "--concurrency", "16", "--seq-len", "8192")
    shown = wait_for_totals(page, dict(zip(DETAILED_INFERENCE, cli)))
    link = share_link(page)
    assert "conc=16" in link and "seq=8192" in link
    fresh = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        other = fresh.new_page()
        open_app(other, link)
        assert wait_for_totals(other, shown) == shown
        expect(other.get_by_role("spinbutton", name="Inference concurrency")).to_have_value("16")
        expect(other.get_by_role("spinbutton", name="Sequence length")).to_have_value("8192")
    finally:
        fresh.close()


def test_two_scenarios_in_compare_download_as_csv(page, app_url):
    open_app(page, app_url)
    add = page.get_by_role("button", name="Add to comparison")
    settle(page, add.click)
    set_number(page, "Sequence length", 8192)
    wait_for_change(page, REFERENCE_INFERENCE)
    settle(page, add.click)
    page.get_by_role("link", name="Compare").click()
    page.wait_for_selector("[data-testid='stDataFrame'] td", state="attached", timeout=30_000)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download CSV").click()
    rows = list(csv.reader(io.StringIO(download.value.path().read_text())))
    header, *body = rows
    assert len(header) == 3  # the component column + two scenarios
    by_name = {row[0]: row[1:] for row in body}
    total_row = next(values for name, values in by_name.items() if name.startswith("Total per GPU"))
    assert [round(float(v), 1) for v in total_row] == [18.8, round(14 + 5.6 + 5.6 + 2, 1)]


def test_a_broken_config_shows_a_readable_error_and_the_page_still_works(page, app_url):
    open_app(page, app_url)
    radio(page, "config.json")
    box = page.get_by_label("...or paste it here")
    box.fill('{"model_type": "llama", "hidden_size": 4096}')
    settle(page, lambda: box.press("Control+Enter"))
    expect(page.get_by_text("config.json is missing num_attention_heads").first).to_be_visible(timeout=20_000)
    assert page.locator("[data-testid='stException']").count() == 0
    radio(page, "Parameters")
    assert wait_for_totals(page, REFERENCE_INFERENCE) == REFERENCE_INFERENCE


def test_the_stacked_bar_chart_has_one_bar_per_row_and_component(page, app_url):
    open_app(page, app_url)
    chart = page.locator("[data-testid='stPlotlyChart']").first
    expect(chart.locator("svg.main-svg").first).to_be_visible(timeout=20_000)
    header = table(page)[0]
    components = len(header) - 2  # scenario and total columns
    assert chart.locator(".barlayer .trace").count() == components
    assert chart.locator(".barlayer .trace .point").count() == 3 * components
    assert totals(page) == REFERENCE_INFERENCE


def test_one_back_press_returns_to_the_previous_page_with_its_link(page, app_url):
    """Issue 14 item 10: Streamlit's own navigation opened a page without its link and writing the link added a
    second history entry, so Back needed two presses. The pages' links carry each page's link now."""
    open_app(page, f"{app_url}/?v=1&p=inference&params=13")
    wait_for_totals(page, {"Inference (16-bit)": "33.2"})
    page.get_by_role("link", name="Fine-tuning").click()
    wait_for_totals(page, {"Full-parameter": REFERENCE_FINETUNE["Full-parameter"]})  # its own inputs: 7B
    assert "p=finetune" in page.url
    page.go_back()
    wait_for_totals(page, {"Inference (16-bit)": "33.2"})
    assert "p=inference" in page.url and "params=13" in page.url


def test_the_first_request_of_a_fresh_server_opens_a_page_path_without_page_not_found(page):
    """The page files live in views/: with a pages/ folder next to app.py, Streamlit runs the first request of a
    fresh server in its old multipage mode, which does not know the app's URL paths and shows "Page not found" over
    the page (the first visitor after every start-up saw it)."""
    from tests.e2e.conftest import ROOT, running_app

    assert not (ROOT / "pages").exists()
    with running_app() as url:
        page.goto(f"{url}/how-it-works")
        expect(page.get_by_role("heading", name="Methodology", exact=True)).to_be_visible(timeout=30_000)
        page.wait_for_timeout(1500)  # the dialog would come with the first run's messages
        expect(page.get_by_text("Page not found")).to_have_count(0)
