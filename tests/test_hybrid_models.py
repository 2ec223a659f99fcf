"""Architectures of 2025-2026 with caches of their own (issue 12): Qwen3-Next and Qwen3.5 mix Gated DeltaNet layers,
which keep a fixed-size state per sequence, with full-attention layers, which keep a KV cache; DeepSeek-V3.2 adds a
lightning indexer with its own per-token key cache. The configs are the published ones kept in
validation/published/configs/ (INDEX.md gives each source)."""

import json

import pytest
from app_helpers import segmented, start, table

import estimator as est
from estimator.kv_cache import linear_state_bytes
from tests.test_generic_reader import published

# Parameters of the language model as transformers 5.24 builds it from the config on the meta device
# (AutoModelForCausalLM.from_config(AutoConfig.for_model(**text_config)), summing p.numel(); see the last test)
TRANSFORMERS_COUNTS = {"Qwen__Qwen3-Next-80B-A3B-Thinking": 79_674_391_296, "Qwen__Qwen3.5-27B": 26_895_998_464,
                       "Qwen__Qwen3.5-35B-A3B": 34_660_610_688, "deepseek-ai__DeepSeek-V3.2": 671_877_929_216,
                       "deepseek-ai__DeepSeek-V3.1": 671_026_404_352, "MiniMaxAI__MiniMax-M2.5": 228_689_748_992,
                       # read by the generic reader (glm4_moe; glm4_moe_lite with MLA); abridged copies (INDEX.md)
                       "zai-org__GLM-4.7-FP8": 352_796_472_320, "zai-org__GLM-4.7-Flash": 29_943_390_976}


@pytest.mark.parametrize("name", TRANSFORMERS_COUNTS)
def test_parameter_counts_equal_the_model_code(name):
    assert est.parameter_counts(est.architecture_from_config(published(name))).total == TRANSFORMERS_COUNTS[name]


def test_qwen3_next_caches_tokens_only_in_its_full_attention_layers():
    # vLLM vllm/v1/kv_cache_interface.py FullAttentionSpec for the 12 full-attention layers (every 4th of 48):
    # K and V x 12 layers x 2 KV heads x head_dim 256 x 2 B
    a = est.architecture_from_config(published("Qwen__Qwen3-Next-80B-A3B-Thinking"))
    assert len(a.linear_layers) == 36 and 3 not in a.linear_layers and 47 not in a.linear_layers
    assert est.kv_bytes_per_token(a) == 2 * 12 * 2 * 256 * 2 == 24_576


def test_the_linear_layers_state_per_sequence_follows_vllms_state_shapes():
    # vllm/model_executor/layers/mamba/mamba_utils.py gated_delta_net_state_shape: conv (conv_dim, kernel - 1),
    # recurrent (n_v, d_v, d_k); conv_dim = 2 n_k d_k + n_v d_v
    nxt = est.architecture_from_config(published("Qwen__Qwen3-Next-80B-A3B-Thinking"))
    conv, recurrent = (2 * 16 * 128 + 32 * 128) * (4 - 1) * 2, 32 * 128 * 128 * 2  # bf16 (no mamba_ssm_dtype)
    assert linear_state_bytes(nxt, 1) == 36 * (conv + recurrent) == 39_518_208
    qwen35 = est.architecture_from_config(published("Qwen__Qwen3.5-27B"))  # "mamba_ssm_dtype": "float32"
    conv, recurrent = (2 * 16 * 128 + 48 * 128) * 3 * 2, 48 * 128 * 128 * 4
    assert linear_state_bytes(qwen35, 1) == 48 * (conv + recurrent) == 153_944_064
    # tensor parallel splits the heads: conv_dim / 2 and n_v / 2 per GPU
    assert linear_state_bytes(nxt, 1, tp=2) == 39_518_208 // 2


def test_the_state_grows_with_concurrency_not_with_context():
    a = est.architecture_from_config(published("Qwen__Qwen3-Next-80B-A3B-Thinking"))

    def row(**inputs):
        return est.estimate_inference(est.InferenceScenario(a, **inputs))

    short, long, busy = row(seq_len=1024), row(seq_len=131_072), row(seq_len=1024, concurrency=8)
    assert short.component("state") == long.component("state") == 39_518_208
    assert busy.component("state") == 8 * 39_518_208
    assert long.component("kv_cache") == 128 * short.component("kv_cache")
    assert sum(size for _, size in busy.components) == busy.total
    assert any("Gated DeltaNet" in line for line in busy.assumptions)


def test_deepseek_v32s_indexer_adds_its_weights_and_its_fp8_key_cache():
    v31 = est.architecture_from_config(published("deepseek-ai__DeepSeek-V3.1"))
    v32 = est.architecture_from_config(published("deepseek-ai__DeepSeek-V3.2"))
    # DeepseekV32Indexer per layer: wq_b 1536 -> 64 x 128, wk 7168 -> 128, k_norm 2 x 128, weights_proj 7168 -> 64
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert est.parameter_counts(v32).total - est.parameter_counts(v31).total == 61 * indexer == 851_524_864
    # MLA latent (512 + 64) x 2 B, plus vLLM's indexer key: 128 fp8 bytes + one 4-byte scale, per layer and token
    assert est.kv_bytes_per_token(v31) == 61 * (512 + 64) * 2 == 70_272
    assert est.kv_bytes_per_token(v32) == 70_272 + 61 * (128 + 4) == 78_324
    assert est.kv_bytes_per_token(v32, "fp8") == 61 * (512 + 64) + 61 * 132  # the indexer layout does not change


def test_the_inference_page_shows_the_recurrent_state():
    at = start()
    segmented(at, "inference.src").set_value("config").run()
    at.text_area(key="inference.cfg").input(json.dumps(published("Qwen__Qwen3-Next-80B-A3B-Thinking"))).run()
    frame = table(at)
    assert list(frame["Recurrent state"]) == [0.04, 0.04, 0.04]  # 39.5 MB for one sequence, in GB
    traces = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    assert "Recurrent state" in [trace.get("name") for trace in traces]


@pytest.mark.parametrize("name", TRANSFORMERS_COUNTS)
def test_the_counts_above_are_what_transformers_builds(name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = published(name)
    text = config.get("text_config", config)
    text = {key: value for key, value in text.items() if key != "quantization_config"}  # built unquantized
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**text))
    assert sum(p.numel() for p in model.parameters()) == TRANSFORMERS_COUNTS[name]
