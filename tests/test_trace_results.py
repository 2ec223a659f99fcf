"""The committed validation results and the harness's torch-free helpers (no torch needed)."""

import math

import pytest

import validation
from validation import compare, matrix

# every family estimator.hf_config.READERS reads that transformers can build (Yi publishes model_type "llama",
# RefinedWeb is Falcon, multimodal wrappers are read from a traced text model; Qwen 1 is remote code only:
# validation/FINDINGS.md)
REQUIRED_FAMILIES = {"llama", "qwen2", "mistral", "gemma2", "phi3", "mixtral", "qwen3_moe", "deepseek_v3", "gpt_oss",
                     "granite", "smollm3", "qwen3", "olmo2", "gemma", "gemma3_text", "gpt2", "falcon", "phi", "opt",
                     "qwen2_moe", "minimax_m2", "deepseek_v2", "qwen3_next", "olmo3", "starcoder2", "cohere2",
                     "nemotron", "gpt_neox", "ernie4_5_moe", "seed_oss", "exaone4", "llama4_text", "gemma4_text",
                     "ernie4_5", "hunyuan_v1_dense", "gemma3n_text", "nemotron_h", "granitemoehybrid", "bamba",
                     "falcon_h1", "jamba", "cohere", "qwen3_5_text", "qwen3_5_moe_text", "deepseek_v32"}
# the multimodal wrappers and aliases the readers map onto a traced family
COVERED_BY = {"yi": "llama", "RefinedWeb": "falcon", "RefinedWebModel": "falcon", "gemma3": "gemma3_text",
              "gemma3n": "gemma3n_text", "gemma4": "gemma4_text", "llama4": "llama4_text", "qwen2_vl": "qwen2",
              "qwen2_5_vl": "qwen2"}
NOT_BUILDABLE = {"qwen"}  # remote code, not in transformers


@pytest.fixture(scope="module")
def rows():
    return validation.load_results()


def test_results_file_has_the_columns_and_typed_values(rows):
    assert rows, "validation/results.csv is empty: run python -m validation"
    for r in rows:
        assert set(r) == set(matrix.COLUMNS)
        assert isinstance(r["estimate_bytes"], int) and isinstance(r["measured_bytes"], int)
        assert r["measured_bytes"] >= 0 and r["estimate_bytes"] >= 0
        expected = compare.error_pct(r["estimate_bytes"], r["measured_bytes"])
        assert math.isinf(expected) or r["error_pct"] == pytest.approx(expected, abs=1e-3)


def test_results_cover_every_family_and_scenario_kind(rows):
    assert {r["family"] for r in rows} >= REQUIRED_FAMILIES
    scenarios = " | ".join(r["scenario"] for r in rows)
    for needle in ("inference", "training full", "LoRA r=16 on q,v", "LoRA r=16 on all-linear", "grad ckpt",
                   "sdpa", "eager", "extrapolated"):
        assert needle in scenarios


def test_every_reader_is_traced_or_covered(rows):
    """issue 12: each reader's model type has rows, or runs a traced family's code (alias / language model)."""
    from estimator.hf_config import READERS

    families = {r["family"] for r in rows}
    assert set(COVERED_BY.values()) <= families
    assert set(READERS) - families - set(COVERED_BY) - NOT_BUILDABLE == set()


def test_results_match_the_matrix_definition(rows):
    """Every case of the full matrix is in the committed file (re-run python -m validation after editing it)."""
    assert {r["case"] for r in rows} == {c.name for c in matrix.cases()}


def test_summary_reports_median_and_worst_per_component(rows):
    s = validation.summary(rows)
    assert {"weights", "gradients", "optimizer_states", "kv_cache", "activations (training)", "peak (training)",
            "peak (inference)"} <= set(s)
    for stats in s.values():
        assert stats["median_abs_error_pct"] <= abs(stats["worst_error_pct"]) + 1e-9
    table = validation.summary_markdown(rows)
    assert table.startswith("| component |") and "weights" in table


def test_install_hint_names_the_requirements_file():
    hint = validation.install_hint(["torch"])
    assert "torch" in hint and "requirements-validation.txt" in hint
    assert isinstance(validation.missing_dependencies(), list)


def test_estimates_need_no_torch():
    e = compare.estimate_training(matrix.SMALL_CONFIGS["llama"], batch=2, seq=512)
    assert e["weights"] == 2 * 43_848_192 and e["gradients"] == e["weights"]
    assert e["peak"] == max(e["phase: backward"], e["phase: optimizer step"])
    i = compare.estimate_inference(matrix.SMALL_CONFIGS["llama"], batch=2, prefill_len=512, decode_steps=16)
    assert i["kv_cache"] == 2 * 4 * 2 * 64 * 528 * 2 * 2


def test_gemma_3n_rows_follow_the_traces(rows):
    """FINDINGS 39: the committed Gemma 3n rows are the current estimate, and its activations match the traces
    (checkpointing: less the fake-tensor full-attention mask b s^2; inference: the mask's 16 decode columns)."""
    config = next(c for c in matrix.cases() if c.name == "gemma3n_text-full-sdpa").config
    committed = {(r["case"], r["component"]): r for r in rows if r["family"] == "gemma3n_text"}
    estimate = compare.estimate_training(config, batch=2, seq=512)
    for component in ("activations", "activations_per_layer", "peak"):
        assert committed[("gemma3n_text-full-sdpa", component)]["estimate_bytes"] == estimate[component]
    for case in ("gemma3n_text-full-sdpa", "gemma3n_text-lora-qv-sdpa", "gemma3n_text-lora-all-sdpa"):
        for component in ("activations", "activations_per_layer"):
            row = committed[(case, component)]
            assert row["estimate_bytes"] == row["measured_bytes"], (case, component)
    gc = committed[("gemma3n_text-full-sdpa-gc", "activations")]
    assert gc["measured_bytes"] - gc["estimate_bytes"] == 2 * 512 * 512
    infer = committed[("gemma3n_text-infer", "activations")]
    assert infer["estimate_bytes"] - infer["measured_bytes"] == 512 * 16 - 8  # mask columns; an int64 scalar
