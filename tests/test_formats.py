"""Weight formats: exact bits per weight, which tensors stay 16-bit, and GGUF sizes against llama.cpp."""

from fractions import Fraction

import pytest

import estimator as est
from estimator.formats import GGML_TYPES, WEIGHT_FORMATS, gguf_tensor_type, weight_bytes


@pytest.mark.parametrize("format_id, bits", [
    ("fp32", 32), ("bf16", 16), ("fp8", 8), ("int8", 8),
    ("nf4", Fraction(9, 2)),  # 4 + fp32 absmax / 64
    ("nf4-dq", Fraction(2113, 512)),  # 4 + 8/64 + 32/(64*256) = 4.126953125 (QLoRA: "0.127 bits")
    ("gptq-4bit", Fraction(133, 32)), ("awq-4bit", Fraction(133, 32)),  # 4 + 16/128 + 4/128 = 4.15625
    ("mxfp4", Fraction(17, 4)),  # 17 bytes / 32 weights = 4.25
    ("nvfp4", Fraction(9, 2)),
    ("q8_0", Fraction(17, 2)), ("q6_k", Fraction(105, 16)), ("q5_k_m", Fraction(11, 2)),
    ("q4_k_m", Fraction(9, 2)), ("q4_0", Fraction(9, 2)), ("q3_k_m", Fraction(55, 16)),
    ("q2_k", Fraction(21, 8)), ("iq4_xs", Fraction(17, 4)),
])
def test_bits_per_weight_of_each_format(format_id, bits):
    assert WEIGHT_FORMATS[format_id].bits == bits


def test_ggml_block_sizes_match_ggml_common():
    assert {name: (t.block, t.block_bytes) for name, t in GGML_TYPES.items() if name in
            ("Q8_0", "Q6_K", "Q4_K", "Q2_K", "IQ4_XS")} == {
        "Q8_0": (32, 34), "Q6_K": (256, 210), "Q4_K": (256, 144), "Q2_K": (256, 84), "IQ4_XS": (256, 136)}


def test_bnb_int8_adds_one_fp32_statistic_per_output_row(small_llama):
    linears = [t for t in est.architecture.tensors(small_llama) if t.is_block_linear]
    quantized = sum(t.numel + 4 * t.rows for t in linears)
    other = sum(t.numel for t in est.architecture.tensors(small_llama) if not t.is_block_linear)
    assert weight_bytes(small_llama, "int8").total == quantized + 2 * other


def test_embeddings_lm_head_and_norms_stay_16_bit_under_nf4(llama3_8b):
    embed_and_head = 2 * 128256 * 4096
    assert weight_bytes(llama3_8b, "nf4").total - weight_bytes(llama3_8b, "bf16").total < 0
    linear_params = est.parameter_counts(llama3_8b).total - embed_and_head - (2 * 32 + 1) * 4096
    expected = linear_params * Fraction(9, 2) / 8 + 2 * (embed_and_head + (2 * 32 + 1) * 4096)
    assert weight_bytes(llama3_8b, "nf4").total == expected


def test_llama_3_8b_nf4_double_quant_is_about_5_7_gb(llama3_8b):
    """6,979,321,856 linear weights x 4.127 bits / 8 (QLoRA section 3) = 3.60 GB, + embedding and lm_head in
    bf16 (2 x 128,256 x 4,096 x 2 B = 2.10 GB) + norms ~= 5.7 GB."""
    assert round(weight_bytes(llama3_8b, "nf4-dq").total / 1e9, 1) == 5.7


@pytest.mark.parametrize("format_id, gib", [
    # llama.cpp tools/quantize/quantize.cpp size table for Llama-3-8B (GiB)
    ("q8_0", 7.96), ("q6_k", 6.14), ("q5_k_m", 5.33), ("q4_k_m", 4.58), ("q4_0", 4.34), ("q3_k_m", 3.74),
    ("q2_k", 2.96),
])
def test_gguf_sizes_match_llama_quantize_table_for_llama_3_8b(llama3_8b, format_id, gib):
    assert abs(weight_bytes(llama3_8b, format_id).total / 2**30 - gib) <= 0.015  # table rounds to 0.01


def test_q4_k_m_gives_more_bits_to_attn_v_and_ffn_down_on_use_more_bits_layers(llama3_8b):
    tensors = est.architecture.tensors(llama3_8b)
    v_types = [gguf_tensor_type("q4_k_m", t, llama3_8b) for t in tensors if t.role == "attn_v"]
    assert v_types[:4] == ["Q6_K"] * 4  # first eighth of 32 layers
    assert v_types[4:7] == ["Q4_K", "Q4_K", "Q6_K"]  # then every third
    output = next(t for t in tensors if t.role == "output")
    assert gguf_tensor_type("q4_k_m", output, llama3_8b) == "Q6_K"


def test_mxfp4_quantizes_only_the_experts_of_gpt_oss():
    a = est.model("openai/gpt-oss-120b").architecture
    experts = sum(t.numel for t in est.architecture.tensors(a) if t.is_expert and t.is_matrix)
    rest = est.parameter_counts(a).total - experts
    assert weight_bytes(a, "mxfp4").total == experts * 17 // 32 + 2 * rest
    assert round(weight_bytes(a, "mxfp4").total / 1e9, 1) == 65.2  # 114.66e9 x 4.25 / 8 + 2.17e9 x 2 B


def test_unknown_format_is_a_value_error(llama3_8b):
    with pytest.raises(ValueError, match="weights must be one of"):
        weight_bytes(llama3_8b, "int3")


def test_fp8_blocks_are_counted_per_stored_128x128_block():
    """DeepSeek-V3's kv_a_proj_with_mqa is 576 x 7168: weight_scale_inv is [ceil(576/128), 7168/128] = [5, 56]."""
    from estimator.architecture import Tensor
    a = est.model("deepseek-ai/DeepSeek-V3").architecture
    kv_a = Tensor("attn_kv_a", 0, 576, 7168)
    assert est.formats.tensor_bytes(WEIGHT_FORMATS["fp8-block"], kv_a, a) == 576 * 7168 + 4 * 5 * 56


@pytest.mark.parametrize("format_id, bits", [
    ("fp8-channel", 8), ("w8a8-int8", 8),  # + a bf16 scale per output row
    ("int4-g128", Fraction(33, 8)),  # 4 + 16/128
    ("int4-g32", Fraction(9, 2)),  # 4 + 16/32
])
def test_bits_per_weight_of_the_checkpoint_formats(format_id, bits):
    assert WEIGHT_FORMATS[format_id].bits == bits


def test_int4_group_32_adds_a_bf16_scale_per_32_and_a_weight_shape_per_matrix(small_llama):
    linears = [t for t in est.architecture.tensors(small_llama) if t.is_block_linear]
    quantized = sum(t.numel // 2 + t.numel // 32 * 2 + 16 for t in linears)  # every width is a multiple of 32
    other = sum(t.numel for t in est.architecture.tensors(small_llama) if not t.is_block_linear)
    assert weight_bytes(small_llama, "int4-g32").total == quantized + 2 * other


def test_an_unquantized_set_keeps_those_roles_in_16_bit(small_llama):
    tensors = est.architecture.tensors(small_llama)
    attention_layer_0 = sum(t.numel for t in tensors if t.role.startswith("attn_") and t.layer == 0)
    full = weight_bytes(small_llama, "fp8-channel").total
    kept = weight_bytes(small_llama, "fp8-channel", frozenset({"attn_*@0"})).total
    # each of q, k, v, o: numel bytes + 2 B per row in fp8 -> 2 B per weight in bf16
    rows = 512 + 128 + 128 + 512
    assert kept - full == attention_layer_0 - 2 * rows
    with pytest.raises(ValueError, match="unquantized pattern"):
        weight_bytes(small_llama, "fp8", frozenset({"attn_q@x"}))


def test_weight_bytes_takes_an_exact_layout_as_well_as_an_id(small_llama):
    layout = WEIGHT_FORMATS["gptq-4bit"]
    assert weight_bytes(small_llama, layout) == weight_bytes(small_llama, "gptq-4bit")


def test_common_words_name_formats():
    from estimator.formats import ALIASES, resolve_word, weight_format

    for word in ("fp16", "float16", "half", "f16", "bfloat16", "FP16", "Bf16"):
        assert weight_format(word).id == "bf16", word
    assert weight_format("int4") is weight_format("4bit") is WEIGHT_FORMATS["awq-4bit"]  # the 4-bit row's format
    assert weight_format("q4").id == "q4_k_m" and weight_format("Q4_K_M").id == "q4_k_m"
    assert resolve_word("q4", ("bf16", "q8_0")) is None  # an alias counts only where its format is a choice
    assert all(target in WEIGHT_FORMATS for target in ALIASES.values())
    with pytest.raises(ValueError, match="weights must be one of"):
        weight_format("fp17")


def test_mxfp4_moe_is_llama_cpps_gpt_oss_gguf():
    """llama-quant.cpp's MXFP4_MOE (the file type of ggml-org's gpt-oss GGUFs): the experts MXFP4 (17 B per 32), every
    other matrix, the token embedding and the output Q8_0 (34 B per 32), vectors and the router F32. llama-bench
    prints "gpt-oss 20B MXFP4 MoE | 11.27 GiB" and "gpt-oss 120B MXFP4 MoE | 59.02 GiB" for those files
    (ggml-org/llama.cpp benches/dgx-spark.md@4c7e9893); `mxfp4`, the checkpoint's 16-bit outside the experts, is
    1.55 / 1.75 GiB more."""
    from estimator.architecture import tensors
    from estimator.gguf import FILE_TYPES

    for model_id, gib, more in (("openai/gpt-oss-20b", 11.27, 1.55), ("openai/gpt-oss-120b", 59.02, 1.75)):
        a = est.model(model_id).architecture
        size = weight_bytes(a, "mxfp4_moe").total / 2**30
        assert size == pytest.approx(gib, abs=0.005)
        assert weight_bytes(a, "mxfp4").total / 2**30 - size == pytest.approx(more, abs=0.01)
    a = est.model("openai/gpt-oss-20b").architecture
    kinds = {t.role: gguf_tensor_type("mxfp4_moe", t, a) for t in tensors(a) if t.layer in (0, -1)}
    assert kinds["expert_down"] == kinds["expert_up"] == kinds["expert_gate"] == "MXFP4"
    assert kinds["attn_q"] == kinds["attn_output"] == kinds["output"] == kinds["token_embd"] == "Q8_0"
    assert kinds["router"] == "F32" and WEIGHT_FORMATS["mxfp4_moe"].bits == Fraction(17, 4)
    assert FILE_TYPES[38] == "mxfp4_moe"  # LLAMA_FTYPE_MOSTLY_MXFP4_MOE
