"""Issue 15 in a real browser: the Unsloth preset on a QLoRA run lowers the GPU memory and says why."""

from __future__ import annotations

from playwright.sync_api import expect

import estimator as est
from estimator.frameworks import with_framework
from tests.e2e.browser import TIMEOUT_MS, choose, open_app, settle, totals, wait_for_change


def test_the_unsloth_preset_lowers_a_qlora_run_and_lists_the_reasons(page, app_url):
    open_app(page, f"{app_url}/?p=finetune&model=meta-llama/Llama-3.1-8B&row=qlora-4bit&seq=4096")
    before = totals(page)["QLoRA (4-bit)"]
    settle(page, page.get_by_text("Memory savers", exact=True).click)
    choose(page, "Framework", "Unsloth")
    after = wait_for_change(page, {"QLoRA (4-bit)": before})["QLoRA (4-bit)"]
    a = est.model("meta-llama/Llama-3.1-8B").architecture
    s = est.FinetuneScenario(a, seq_len=4096, **with_framework({"framework": "unsloth", "technique": "qlora-4bit"}))
    assert after == f"{est.estimate_finetune(s).total / 1e9:.1f}"
    assert float(after) < float(before)
    settle(page, page.get_by_text("Assumptions", exact=True).click)
    notes = page.locator("[data-testid='stExpander']").filter(has=page.get_by_text("Assumptions", exact=True))
    expect(notes).to_contain_text("Unsloth preset: loss = fused, gradient_checkpointing = on, "
                                  "offload_activations = on", timeout=TIMEOUT_MS)
    expect(notes).to_contain_text("Activation offloading:", timeout=TIMEOUT_MS)
