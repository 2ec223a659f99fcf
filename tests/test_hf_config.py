"""config.json parsing: every supported family, and clear errors for bad input."""

import json

import pytest

import estimator as est
from estimator.hf_config import SUPPORTED_MODEL_TYPES, parse_config_text
from tests.conftest import LLAMA3_8B


def test_parse_config_text_round_trips_a_published_config():
    a = est.architecture_from_config(parse_config_text(json.dumps(LLAMA3_8B)))
    assert (a.hidden_size, a.num_kv_heads, a.head_dim) == (4096, 8, 128)


@pytest.mark.parametrize("family", ["llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
                                    "gemma2", "gemma3", "phi3", "deepseek_v2", "deepseek_v3", "gpt_oss", "gpt2",
                                    "falcon"])
def test_the_required_families_are_supported(family):
    assert family in SUPPORTED_MODEL_TYPES


@pytest.mark.parametrize("text, message", [
    ("", "config.json is empty"),
    ("[1, 2]", "must be a JSON object"),
    ("{not json", "not valid JSON"),
    ("x" * 1_000_001, "too large"),
    ("[" * 50 + "]" * 50, "must be a JSON object"),
    ('{"a":' * 30 + "1" + "}" * 30, "nested more than 20 levels"),
])
def test_bad_json_text_gets_a_clear_error(text, message):
    with pytest.raises(ValueError, match=message):
        parse_config_text(text)


def _without(field):
    return {k: v for k, v in LLAMA3_8B.items() if k != field}


@pytest.mark.parametrize("config, message", [
    (_without("num_attention_heads"), "missing num_attention_heads"),
    (_without("hidden_size"), "missing hidden_size"),
    (_without("model_type"), "missing model_type"),
    ({**LLAMA3_8B, "hidden_size": float("nan")}, "hidden_size must be a whole number between 1 and 1,000,000, got nan"),
    ({"model_type": "foo"}, "missing hidden_size; model_type 'foo' has no reader of its own"),
    ({**LLAMA3_8B, "model_type": "foo", "hybrid_override_pattern": "M-M-*-"},
     "has layers the estimator cannot read yet"),
    ({"model_type": "<script>alert(1)</script>"}, "missing hidden_size; model_type '<script>alert"),
    ({**LLAMA3_8B, "hidden_size": "4096"}, "hidden_size must be a whole number"),
    ({**LLAMA3_8B, "hidden_size": 4096.5}, "hidden_size must be a whole number"),
    ({**LLAMA3_8B, "hidden_size": -1}, "hidden_size must be between"),
    ({**LLAMA3_8B, "num_key_value_heads": 64}, "num_key_value_heads \\(64\\) cannot exceed"),
    ({**LLAMA3_8B, "num_key_value_heads": 5}, "must be a multiple of num_key_value_heads"),
    ({**LLAMA3_8B, "hidden_size": 4000, "num_attention_heads": 48}, "not divisible by num_attention_heads"),
    ({**LLAMA3_8B, "num_hidden_layers": 10**12}, "num_hidden_layers must be between"),
    ({**LLAMA3_8B, "tie_word_embeddings": "yes"}, "tie_word_embeddings must be true or false"),
    ({**LLAMA3_8B, "sliding_window": 512, "layer_types": ["full_attention"]}, "layer_types has 1 entries"),
])
def test_bad_configs_get_errors_naming_the_problem(config, message):
    with pytest.raises(ValueError, match=message):
        est.architecture_from_config(config)


def test_head_dim_from_the_config_wins_over_hidden_over_heads():
    a = est.model("google/gemma-2-9b").architecture
    assert a.head_dim == 256 and a.hidden_size // a.num_heads != 256


def test_qwen2_has_qkv_bias_but_no_o_bias():
    a = est.model("Qwen/Qwen2.5-7B").architecture
    assert a.qkv_bias and not a.o_bias


def test_qwen3_moe_routes_every_layer_and_deepseek_v3_keeps_three_dense_layers():
    assert len(est.model("Qwen/Qwen3-30B-A3B").architecture.moe_layers) == 48
    v3 = est.model("deepseek-ai/DeepSeek-V3").architecture
    assert v3.moe_layers[0] == 3 and len(v3.moe_layers) == 58


def test_gemma_3_text_config_uses_class_defaults_for_omitted_fields():
    a = est.model("google/gemma-3-4b-it").architecture
    assert (a.vocab_size, a.num_heads, a.num_kv_heads, a.head_dim) == (262_208, 8, 4, 256)


QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48,
             "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
             "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768}


@pytest.mark.parametrize("config, message", [
    ({**QWEN3_MOE, "mlp_only_layers": [{}]}, "mlp_only_layers must be a list of layer indices"),
    ({**QWEN3_MOE, "mlp_only_layers": [1.5]}, "mlp_only_layers must be a list of layer indices"),
    ({**LLAMA3_8B, "sliding_window": 4096, "layer_types": [[]] * 32}, "layer_types must be a list of strings"),
])
def test_malformed_per_layer_lists_are_named(config, message):
    with pytest.raises(ValueError, match=message):
        est.architecture_from_config(config)
