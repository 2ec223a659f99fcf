"""The model box in a real browser: a Hugging Face Hub id typed into it is read from the Hub (a local stand-in,
tests/hub_standin.py, the app's HF_ENDPOINT) and estimated like the catalog entry with the same config."""

from __future__ import annotations

import json
import os
from urllib.parse import parse_qs, urlsplit

import pytest

from estimator import catalog
from tests.e2e.browser import idle, open_app, totals, wait_for_totals
from tests.e2e.conftest import running_app
from tests.hub_standin import HubStandIn, commit_of

HUB_ONLY = "someone/Qwen3-8B-copy"  # Qwen3-8B's config under an id the catalog does not have
GATED = "acme/Gated-8B"
GGUF_REPO = "someone/Tiny-GGUF"


@pytest.fixture(scope="module")
def hub_app(browser_path, tmp_path_factory):
    """The app with HF_ENDPOINT at a local Hub stand-in and its own empty HF_HOME."""
    config = json.dumps(catalog.raw_config("Qwen/Qwen3-8B")).encode()
    with HubStandIn() as hub:
        hub.add(HUB_ONLY, {"config.json": config}, safetensors={"parameters": {"BF16": 8_190_735_360},
                                                                "total": 8_190_735_360})
        hub.add(GATED, {"config.json": config}, gated=True)
        gguf_files = pytest.importorskip("tests.gguf_files")
        hub.add(GGUF_REPO, {"Tiny-Q4_K_M.gguf": gguf_files.write_tiny_llama(
            tmp_path_factory.mktemp("gguf") / "tiny.gguf").read_bytes()})
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path_factory.mktemp("hf"))}
        env.pop("HF_HUB_OFFLINE", None)
        env.pop("HF_TOKEN", None)
        with running_app(env) as url:
            yield url


def _type_model(page, text: str) -> None:
    box = page.get_by_role("combobox", name="Catalog model")
    box.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Backspace")
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def test_a_hub_id_typed_into_the_model_box_gives_the_catalog_entrys_estimate(page, hub_app):
    open_app(page, f"{hub_app}/?v=1&p=inference&model=Qwen/Qwen3-8B")
    expected = totals(page)  # the catalog's Qwen3-8B
    assert expected["Inference (16-bit, BF16)"] == "18.9"
    _type_model(page, HUB_ONLY)
    page.get_by_text(f"Hub: {HUB_ONLY}").wait_for(timeout=20_000)
    assert wait_for_totals(page, expected) == expected
    idle(page)
    summary = page.locator("[data-testid='stCaptionContainer']", has_text="Hub:").inner_text()
    assert "8.19 B parameters" in summary and "36 layers" in summary and "stored 16.38 GB (BF16)" in summary
    assert commit_of(HUB_ONLY + "@main")[:7] in summary
    query = parse_qs(urlsplit(page.url).query)  # the link carries the id, not the config
    assert query["model"] == [HUB_ONLY] and "cfg" not in query


def test_a_gated_hub_id_without_a_token_says_how_to_give_one(page, hub_app):
    open_app(page, f"{hub_app}/?v=1&p=inference&model=Qwen/Qwen3-8B")
    _type_model(page, GATED)
    page.get_by_text(f"{GATED} is a gated model on the Hub: set HF_TOKEN").wait_for(timeout=20_000)


def test_a_hub_gguf_quant_typed_into_the_model_box_gives_its_exact_weights(page, hub_app):
    open_app(page, f"{hub_app}/?v=1&p=inference&model=Qwen/Qwen3-8B")
    _type_model(page, f"{GGUF_REPO}:Q4_K_M")
    page.get_by_text(f"Hub: {GGUF_REPO}").wait_for(timeout=20_000)
    idle(page)
    summary = page.locator("[data-testid='stCaptionContainer']", has_text="Hub:").inner_text()
    # the tiny Llama of tests/gguf_files.py: 2 layers, 4 heads (2 KV), 1,288,144 bytes in six ggml types
    assert "2 layers · 4 heads (2 KV)" in summary and "stored 0.00 GB (Q6_K, Q8_0, Q4_K, Q5_K, IQ4_XS, F32)" in summary
    assert next(iter(totals(page))) == "Inference (checkpoint, q4_k_m)"  # the file's own weights lead the table
    assert page.get_by_text(f"from the architecture of {GGUF_REPO}:Q4_K_M").count() == 1
