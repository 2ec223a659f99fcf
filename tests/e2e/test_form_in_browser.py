"""The form in a real browser (issue 14): out-of-range numbers are named with their range instead of being
dropped silently (item 6), and LoRA targets come as presets (item 3)."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from estimator.cli import main as cli_main
from tests.e2e.browser import SCENARIO_TABLE, TIMEOUT_MS, open_app, set_number, settle, wait_for_totals

LLAMA = "meta-llama/Llama-3.1-8B"


def test_an_out_of_range_parameter_count_is_named_with_its_range_and_kept(page, app_url):
    """Typing 70000, 0, -3 or 0.0001 used to turn the field red with 'Press Enter to apply' while Enter did
    nothing and the table kept the old value. Now the value is applied, the field and its range are named under
    it, no stale numbers are shown, and a valid value brings the table back."""
    open_app(page, app_url)
    box = page.get_by_role("spinbutton", name="Total parameters (B)", exact=True)
    for typed, shown in ((70000, "70,000"), (0, "0"), (-3, "-3"), (0.0001, "0.0001")):
        set_number(page, "Total parameters (B)", typed)
        message = f"Total parameters (B) must be between 0.001 and 20,000, got {shown}"
        expect(page.get_by_text(message, exact=True)).to_be_visible(timeout=TIMEOUT_MS)
        expect(page.locator(f"{SCENARIO_TABLE} td")).to_have_count(0)  # no numbers for the previous value
        expect(page.get_by_text("No estimate until the field marked in red is in range.")).to_be_visible()
        expect(page.get_by_text(message, exact=False)).to_have_count(1)  # said once, under the field
        assert float(box.input_value()) == float(f"{typed:.2f}")  # what was typed stays in the field
    set_number(page, "Total parameters (B)", 13)
    wait_for_totals(page, {"Inference (16-bit)": "33.2"})
    expect(page.get_by_text("must be between 0.001 and 20,000")).to_have_count(0)


def _cli_totals(capsys, *argv) -> dict[str, str]:
    capsys.readouterr()
    assert cli_main(["finetune", "--model", LLAMA, *argv, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    return {"LoRA": f"{next(r for r in rows if r['scenario'] == 'lora')['total_bytes'] / 1e9:.1f}"}


def _pick(page, group, name: str) -> None:
    """Click a preset until it is the checked one: a click that lands while the page is still drawing the
    Advanced section (just opened) can be lost on a loaded machine."""
    radio = group.get_by_role("radio", name=name, exact=True)
    for _ in range(3):
        settle(page, radio.click)
        if radio.is_checked():
            return
    expect(radio).to_be_checked()


def test_lora_target_presets_replace_adding_tags_one_by_one(page, app_url, capsys):
    """All linear is one click (the same numbers as the CLI's --lora-targets all-linear); Custom starts from the
    preset's projections, without MoE-only roles for a dense model."""
    open_app(page, f"{app_url}/?v=1&p=finetune&model={LLAMA}")
    wait_for_totals(page, _cli_totals(capsys))
    page.get_by_text("Advanced", exact=True).click()
    presets = page.locator("[data-testid='stButtonGroup']").filter(has_text="All linear")
    _pick(page, presets, "All linear")
    wait_for_totals(page, _cli_totals(capsys, "--lora-targets", "all-linear"))
    _pick(page, presets, "Custom")
    chosen = page.locator("[data-testid='stMultiSelect']").filter(has_text="Projections")
    for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        expect(chosen).to_contain_text(name, timeout=TIMEOUT_MS)
    assert "experts" not in chosen.inner_text() and "router" not in chosen.inner_text()  # Llama has neither
    wait_for_totals(page, _cli_totals(capsys, "--lora-targets", "all-linear"))  # the same projections, for Llama
