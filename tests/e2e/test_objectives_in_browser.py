"""The post-training objective in a real browser (issue 15): choosing DPO adds the reference model to the table
with the CLI's numbers, and shows DPO's own input."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from estimator.cli import main as cli_main
from tests.e2e.browser import SCENARIO_TABLE, TIMEOUT_MS, choose, open_app, table, wait_for_totals

LLAMA = "meta-llama/Llama-3.1-8B"


def _cli_rows(capsys, *argv) -> dict[str, dict]:
    capsys.readouterr()
    assert cli_main(["finetune", "--model", LLAMA, *argv, "--json"]) == 0
    return {r["scenario"]: r for r in json.loads(capsys.readouterr().out)["rows"]}


def test_choosing_dpo_shows_the_reference_model(page, app_url, capsys):
    open_app(page, f"{app_url}/?v=1&p=finetune&model={LLAMA}")
    assert "Reference model" not in table(page)[0]  # SFT: no reference model
    choose(page, "Objective", "DPO")
    # a link without `gc` means checkpointing off (links made before 'auto'), so the CLI is told the same
    full = _cli_rows(capsys, "--objective", "dpo", "--no-grad-checkpointing")["full"]
    wait_for_totals(page, {"Full-parameter": f"{full['total_bytes'] / 1e9:.1f}"})
    header, *rows = table(page)
    column = header.index("Reference model")
    reference = {row[0]: row[column] for row in rows}
    # a second 16-bit copy for full fine-tuning (2 B x 8.03 B parameters); LoRA's reference is its base
    assert reference["Full-parameter"] == f"{full['components']['reference_model'] / 1e9:.2f}" == "16.06"
    assert reference["LoRA"] == "0.00"
    expect(page.get_by_text("Precompute reference log-probs", exact=True)).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(SCENARIO_TABLE).first).to_contain_text("Reference logits", timeout=TIMEOUT_MS)
