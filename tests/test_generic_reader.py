"""Models the estimator had no reader for (issue 12): the generic reader of standard decoder configs, the Qwen 1 and
SmolLM3 readers, configs with Infinity in fields the estimate never reads, and catalog ids as people type them.

The real configs here are verbatim copies kept in validation/published/configs/ (INDEX.md gives each source).
"""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimator as est
from estimator.hf_config import READERS, parse_config_text
from tests.conftest import LLAMA3_8B

CONFIGS = Path(__file__).resolve().parents[1] / "validation" / "published" / "configs"


def published(name: str) -> dict:
    return parse_config_text((CONFIGS / f"{name}.json").read_bytes())


def llama_like_params(h, layers, heads, kv_heads, head_dim, inter, vocab, tied=False) -> int:
    """Hand count of a gated-MLP RMSNorm decoder: q, k, v, o; gate, up, down; 2 norms a layer; final norm."""
    attention = h * heads * head_dim * 2 + 2 * h * kv_heads * head_dim
    return vocab * h * (1 if tied else 2) + layers * (attention + 3 * h * inter + 2 * h) + h


def test_an_unknown_model_type_with_standard_fields_is_read_as_a_standard_decoder():
    a = est.architecture_from_config({**LLAMA3_8B, "model_type": "brand_new_lm"})
    assert est.parameter_counts(a).total == llama_like_params(4096, 32, 32, 8, 128, 14336, 128256) == 8_030_261_248
    assert est.kv_bytes_per_token(a) == 2 * 32 * 8 * 128 * 2 == 131_072  # K and V x layers x kv heads x d x 2 B
    note = "Generic reader: model_type 'brand_new_lm' has no reader of its own; standard decoder assumed"
    assert note in a.notes[0]
    inference = est.estimate_inference(est.InferenceScenario(a))
    training = est.estimate_finetune(est.FinetuneScenario(a, technique="lora"))
    assert any(note in line for line in inference.assumptions) and any(note in line for line in training.assumptions)


def test_a_multimodal_config_is_read_from_its_text_config_without_the_vision_tower():
    # Qwen3-VL-30B-A3B's language model has Qwen3-30B-A3B's shape; under an unknown text model_type the generic
    # reader reads it
    config = published("Qwen__Qwen3-VL-30B-A3B-Instruct")
    unknown = {**config, "text_config": {**config["text_config"], "model_type": "other_text"}}
    a = est.architecture_from_config(unknown)
    assert a.num_experts == 128 and a.experts_per_token == 8 and len(a.moe_layers) == 48
    assert "the language model is read from text_config" in a.notes[0]
    assert a.vision_parameters == 538_631_408  # counted apart (estimator/vision.py)
    # what the generic reader misses: Qwen3's q and k RMSNorms, 2 x head_dim 128 x 48 layers
    qwen3_moe = est.parameter_counts(est.model("Qwen/Qwen3-30B-A3B").architecture)
    assert qwen3_moe.total - est.parameter_counts(a).total == 2 * 128 * 48 == 12_288
    # under its own text model_type (qwen3_vl_moe_text) it is read as Qwen3-MoE, norms included
    assert est.parameter_counts(est.architecture_from_config(config)).total == qwen3_moe.total


def test_a_nested_text_config_of_a_known_family_is_read_by_that_familys_reader():
    config = {"model_type": "mistral3", "text_config": {**LLAMA3_8B, "model_type": "mistral"}, "vision_config": {}}
    a = est.architecture_from_config(config)
    assert est.parameter_counts(a).total == 8_030_261_248 and a.model_type == "mistral"
    assert a.notes[0] == "The language model of 'mistral3' is read from its text_config ('mistral')"
    # the Pixtral tower (Mistral3Config's defaults) is counted apart, by estimator/vision.py (tests/test_vision.py)
    assert a.vision_parameters > 0 and "Multimodal (mistral3)" in a.notes[1]


def test_kimi_k2_is_read_with_multi_head_latent_attention():
    # Kimi K2 (model_type kimi_k2): "1 trillion total parameters", "32 billion activated parameters" (model card)
    a = est.architecture_from_config(published("moonshotai__Kimi-K2-Instruct"))
    counts = est.parameter_counts(a)
    assert a.is_mla and (round(counts.total / 1e12, 2), round(counts.active / 1e9)) == (1.03, 33)
    # MLA cache per token: (kv_lora_rank 512 + rope 64) x 61 layers x 2 B
    assert est.kv_bytes_per_token(a) == (512 + 64) * 61 * 2 == 70_272
    assert "read as DeepSeek-V3 (multi-head latent attention, routed experts)" in a.notes[0]


def test_smollm3_ties_its_embeddings_by_default():
    # SmolLM3Config.tie_word_embeddings defaults to True and the published config does not set it
    a = est.architecture_from_config(published("HuggingFaceTB__SmolLM3-3B"))
    assert est.parameter_counts(a).total == llama_like_params(2048, 36, 16, 4, 128, 11008, 128256, tied=True) \
        == 3_075_098_624
    assert not a.notes  # its own reader, not the generic one


def test_qwen_1_reads_its_fused_attention_and_halved_swiglu_width():
    # modeling_qwen.py: c_attn 4096 -> 3 x 128 x 32 with bias, c_proj without; w1, w2: 4096 -> 22016 / 2; c_proj back
    a = est.architecture_from_config(published("Qwen__Qwen-7B-Chat"))
    layer = (4096 * 3 * 4096 + 3 * 4096) + 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert est.parameter_counts(a).total == 2 * 151936 * 4096 + 32 * layer + 4096 == 7_721_324_544
    assert est.kv_bytes_per_token(a) == 2 * 32 * 32 * 128 * 2 == 524_288  # K and V x layers x heads x d x 2 B
    assert a.max_position_embeddings == 2048 and not a.notes


def renamed(name: str) -> dict:
    """A published config under a model_type without a reader (its nested text config's too)."""
    config = {**published(name), "model_type": "other_hybrid"}
    if "text_config" in config:
        config["text_config"] = {**config["text_config"], "model_type": "other_text"}
    return config


@pytest.mark.parametrize("name, field", [
    ("nvidia__Nemotron-H-56B-Base-8K", "hybrid_override_pattern"),  # Mamba-2 + attention
    ("Qwen__Qwen3-Next-80B-A3B-Thinking", "linear_num_key_heads"),  # Gated DeltaNet
    ("meta-llama__Llama-4-Maverick-17B-128E-Instruct", "interleave_moe_layer_step"),
])
def test_layers_the_generic_reader_would_misread_are_refused_by_name(name, field):
    config = renamed(name)  # the family's own reader reads it under its own model_type
    with pytest.raises(ValueError, match=f"cannot read yet \\({field}") as refused:
        est.architecture_from_config(config)
    assert "estimate it from its parameter count" in str(refused.value)


def test_infinity_in_a_field_the_estimate_never_reads_is_accepted():
    text = (CONFIGS / "nvidia__Nemotron-H-56B-Base-8K.json").read_text()
    assert "Infinity" in text  # "time_step_limit": [0.0, Infinity], as NVIDIA published it
    config = parse_config_text(text)
    assert config["time_step_limit"][1] == float("inf")
    a = est.architecture_from_config({**LLAMA3_8B, "time_step_limit": [0.0, float("inf")], "x": float("nan")})
    assert est.parameter_counts(a).total == 8_030_261_248


@pytest.mark.parametrize("field, value", [("num_hidden_layers", "Infinity"), ("hidden_size", "NaN"),
                                          ("final_logit_softcapping", "Infinity")])
def test_a_non_finite_value_in_a_field_the_estimate_reads_names_the_field(field, value):
    config = {**LLAMA3_8B, "model_type": "gemma2", field: 0}
    text = json.dumps(config).replace(f'"{field}": 0', f'"{field}": {value}')
    with pytest.raises(ValueError, match=field):
        est.architecture_from_config(parse_config_text(text))


def test_a_config_the_generic_reader_cannot_read_names_the_missing_field_and_the_way_out():
    with pytest.raises(ValueError) as refused:
        est.architecture_from_config({"model_type": "mystery", "hidden_size": 4096, "num_hidden_layers": 32})
    assert str(refused.value).startswith("config.json is missing num_attention_heads; model_type 'mystery' has no "
                                         "reader of its own")
    assert str(refused.value).endswith("or estimate it from its parameter count")


@pytest.mark.parametrize("typed, found", [
    ("Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"),
    ("meta-llama/llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B"),
    ("qwen3-32b", "Qwen/Qwen3-32B"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-30B-A3B"),
    ("google/gemma-2-9b-it", "google/gemma-2-9b"),
    ("gemma-3-27b", "google/gemma-3-27b-it"),
    ("Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Nemo-Base-2407"),
])
def test_catalog_ids_resolve_as_people_type_them(typed, found):
    assert est.model(typed).id == found


def test_an_unknown_size_suggests_every_size_of_the_family():
    with pytest.raises(ValueError) as unknown:
        est.model("qwen3-33b")
    assert str(unknown.value) == ("unknown model 'qwen3-33b'; did you mean Qwen/Qwen3-0.6B, Qwen/Qwen3-1.7B, "
                                  "Qwen/Qwen3-4B, Qwen/Qwen3-8B, Qwen/Qwen3-14B, Qwen/Qwen3-32B, Qwen/Qwen3-30B-A3B, "
                                  "Qwen/Qwen3-235B-A22B?")


def test_the_cli_takes_the_names_people_type(capsys):
    from estimator.cli import main

    assert main(["params", "--model", "Llama-3.1-8B-Instruct", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total_params"] == 8_030_261_248


names = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=12).filter(lambda t: t not in READERS)


@st.composite
def standard_configs(draw):
    """Any valid decoder config with the standard field names, maybe MoE, maybe nested as a text_config."""
    kv_heads = draw(st.integers(1, 16))
    heads = kv_heads * draw(st.integers(1, 8))
    head_dim = draw(st.sampled_from([32, 64, 128]))
    text = {"hidden_size": heads * head_dim, "num_hidden_layers": draw(st.integers(1, 96)),
            "num_attention_heads": heads, "num_key_value_heads": kv_heads,
            "intermediate_size": draw(st.integers(1, 50_000)), "vocab_size": draw(st.integers(1, 300_000)),
            "tie_word_embeddings": draw(st.booleans())}
    if draw(st.booleans()):
        experts = draw(st.integers(1, 256))
        text.update(num_experts=experts, num_experts_per_tok=draw(st.integers(1, experts)),
                    moe_intermediate_size=draw(st.integers(1, 4096)),
                    first_k_dense_replace=draw(st.integers(0, 3)))
    model_type = draw(names)
    return {"model_type": model_type, "text_config": text} if draw(st.booleans()) else {"model_type": model_type,
                                                                                        **text}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(standard_configs())
def test_any_standard_config_gives_a_finite_estimate_and_the_hand_count(config):
    text = config.get("text_config", config)
    a = est.architecture_from_config(config)
    h, layers, inter = text["hidden_size"], text["num_hidden_layers"], text["intermediate_size"]
    heads = text["num_attention_heads"]
    expected = llama_like_params(h, layers, heads, text["num_key_value_heads"], h // heads, inter, text["vocab_size"],
                                 text["tie_word_embeddings"])
    if "num_experts" in text:  # the MoE layers swap the dense MLP for a router and the experts
        moe_layers = max(0, layers - text["first_k_dense_replace"])
        expected += moe_layers * (text["num_experts"] * h + text["num_experts"] * 3 * h * text["moe_intermediate_size"]
                                  - 3 * h * inter)
    assert est.parameter_counts(a).total == expected
    rows = est.inference_table(est.InferenceScenario(a)) + est.finetune_table(est.FinetuneScenario(a, lora_rank=1))
    assert all(0 < r.total < 10**20 for r in rows)


def test_deepseek_v3s_checkpoint_is_685b_with_its_mtp_layer_which_is_not_counted():
    # DeepSeek-V3 README: "685B, which includes 671B of the Main Model weights and 14B of the Multi-Token
    # Prediction (MTP) Module weights"; the MTP layer copies a decoder layer, the embedding and the head
    a = est.model("deepseek-ai/DeepSeek-V3").architecture
    main = est.parameter_counts(a).total
    mtp = est.architecture.mtp_parameters(a, 1)
    assert round(main / 1e9) == 671 and 13e9 < mtp < 14e9  # 13.46 B: "14B" is 685 - 671 of rounded figures
    assert abs(main + mtp - 685e9) < 0.001 * 685e9  # 684.49 B, within the README's rounding of 685B
    note = f"The checkpoint also holds 1 multi-token-prediction layer ({mtp:,} parameters)"
    assert any(note in line for line in est.estimate_inference(est.InferenceScenario(a)).assumptions)
    assert est.estimate_inference(est.InferenceScenario(a)).component("weights") < 2 * (main + 10**9)  # not counted
