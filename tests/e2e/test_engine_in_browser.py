"""The serving engine on the Inference page in a real browser: choose vLLM, paste its command, read the KV-cache
tokens and the launch command, and open the share link in a new browser (issue 13)."""

from __future__ import annotations

from playwright.sync_api import expect

import estimator as est
from estimator.engines import ServeScenario, launch_command, serve
from tests.e2e.browser import TIMEOUT_MS, choose, open_app, settle, share_link
from ui import links

QWEN = "Qwen/Qwen3-8B"
PASTED = f"vllm serve {QWEN} --tensor-parallel-size 2 --max-model-len 32768 --foo bar"


def _metric(page, label: str):
    return page.locator("[data-testid='stMetric']").filter(has_text=label).locator("[data-testid='stMetricValue']")


def test_a_pasted_vllm_command_shows_its_kv_tokens_and_launch_command_and_travels_in_the_link(page, app_url, browser):
    s = ServeScenario(est.model(QWEN).architecture, engine="vllm", gpu=links.VIEW_FIELDS["gpu"].default,
                      tensor_parallel=2, max_model_len=32768, model_id=QWEN)
    tokens = f"{serve(s).kv_cache_tokens:,}"
    open_app(page, app_url)
    choose(page, "Serving engine", "vLLM")
    page.get_by_role("textbox", name="Paste a command").fill(PASTED)
    settle(page, page.get_by_role("button", name="Read the command").click)
    expect(_metric(page, "KV-cache tokens")).to_have_text(tokens, timeout=TIMEOUT_MS)
    expect(page.get_by_text("Ignored (not modelled): --foo bar")).to_be_visible()
    expect(page.locator("[data-testid='stCode'] code").filter(has_text="vllm serve")).to_have_text(launch_command(s))
    link = share_link(page)
    assert "engine=vllm" in link and "e.tp=2" in link and "e.mml=32768" in link
    fresh = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        other = fresh.new_page()
        other.goto(link)
        expect(_metric(other, "KV-cache tokens")).to_have_text(tokens, timeout=60_000)
        expect(other.get_by_role("spinbutton", name="Tensor parallel", exact=True)).to_have_value("2")
        expect(other.get_by_role("spinbutton", name="Max model length", exact=True)).to_have_value("32768")
    finally:
        fresh.close()
