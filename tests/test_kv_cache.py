"""KV cache bytes per token for GQA, MHA, MLA and sliding-window models, against hand-computed values."""

import pytest

import estimator as est
from estimator.kv_cache import kv_cache_bytes


def test_llama_3_8b_kv_cache_is_128_kib_per_token(llama3_8b):
    assert est.kv_bytes_per_token(llama3_8b) == 2 * 32 * 8 * 128 * 2 == 131_072  # K,V x layers x kv x d x 2 B


def test_llama_2_7b_mha_kv_cache_is_512_kib_per_token(llama2_7b):
    assert est.kv_bytes_per_token(llama2_7b) == 524_288


def test_llama_3_70b_kv_cache_is_320_kib_per_token():
    assert est.kv_bytes_per_token(est.model("meta-llama/Meta-Llama-3-70B").architecture) == 327_680


def test_deepseek_v3_mla_caches_the_576_element_latent():
    """kv_lora_rank + qk_rope_head_dim per layer: vLLM, llama.cpp and transformers 5 (`cache.update(kv_nope,
    k_rot)` before `kv_b_proj`, models/deepseek_v3/modeling_deepseek_v3.py)."""
    a = est.model("deepseek-ai/DeepSeek-V3").architecture
    assert est.kv_bytes_per_token(a) == (512 + 64) * 2 * 61 == 70_272


def test_deepseek_v3_decompressed_cache_is_what_engines_without_mla_keep():
    """Engines without MLA support (and transformers 4.x) cache K and V per head: n_h (d_nope + d_rope + d_v)."""
    a = est.model("deepseek-ai/DeepSeek-V3").architecture
    assert est.kv_bytes_per_token(a, mla_latent=False) == 128 * (128 + 64 + 128) * 2 * 61


def test_mla_latent_is_replicated_on_every_tensor_parallel_rank():
    a = est.model("deepseek-ai/DeepSeek-V3").architecture
    assert kv_cache_bytes(a, 1000, 1, tp=8) == kv_cache_bytes(a, 1000, 1, tp=1)


def test_gqa_heads_split_across_ranks_but_never_below_one(llama3_8b):
    one = kv_cache_bytes(llama3_8b, 4096, 1)
    assert kv_cache_bytes(llama3_8b, 4096, 1, tp=2) == one // 2
    assert kv_cache_bytes(llama3_8b, 4096, 1, tp=16) == one // 8  # 8 kv heads: replicated beyond tp=8


def test_gemma_2_9b_sliding_layers_cap_at_the_4096_window():
    a = est.model("google/gemma-2-9b").architecture
    per_layer_token = 2 * 8 * 256 * 2  # K,V x 8 kv heads x head_dim 256 x 2 B
    assert len(a.sliding_layers) == 21 and a.sliding_window == 4096  # even layers of 42
    assert kv_cache_bytes(a, 8192, 1) == per_layer_token * (21 * 8192 + 21 * 4096)
    assert kv_cache_bytes(a, 2048, 1) == per_layer_token * 42 * 2048


def test_mistral_7b_v0_1_window_applies_to_every_layer():
    a = est.model("mistralai/Mistral-7B-v0.1").architecture
    assert kv_cache_bytes(a, 32768, 1) == kv_cache_bytes(a, 4096, 1) == 4096 * 131_072


def test_gpt_oss_alternates_128_token_window_layers():
    a = est.model("openai/gpt-oss-120b").architecture
    per_layer_token = 2 * 8 * 64 * 2
    assert kv_cache_bytes(a, 100_000, 1) == per_layer_token * (18 * 100_000 + 18 * 128)


def test_gemma_3_uses_five_local_layers_per_global_one():
    a = est.model("google/gemma-3-27b-it").architecture
    assert len(a.sliding_layers) == 62 - 62 // 6 and a.sliding_window == 1024


@pytest.mark.parametrize("dtype, ratio", [("fp8", 0.5), ("q8_0", 34 / 64), ("q4_0", 18 / 64), ("fp32", 2)])
def test_kv_dtype_scales_bytes_per_element(llama3_8b, dtype, ratio):
    assert kv_cache_bytes(llama3_8b, 4096, 2, dtype) == 4096 * 2 * 131_072 * ratio


def test_falcon_7b_multi_query_caches_one_kv_head():
    a = est.model("tiiuae/falcon-7b-instruct").architecture
    assert est.kv_bytes_per_token(a) == 2 * 32 * 1 * 64 * 2


def test_unknown_kv_dtype_is_a_value_error(llama3_8b):
    with pytest.raises(ValueError, match="kv_dtype must be one of"):
        kv_cache_bytes(llama3_8b, 10, 1, "int2")


# vLLM's KV-cache specs, transcribed from vllm-project/vllm `vllm/v1/kv_cache_interface.py` (commit 001cabc) and
# `vllm/model_executor/layers/mamba/mamba_utils.py` (commit 02d7108): each layer's page of `block_size` tokens. The
# estimator's bytes per token (block_size 1) and per sequence must equal them, layer kind by layer kind.
def full_attention_page(block_size, num_kv_heads, head_size, dtype_bytes, head_size_v=None):
    """FullAttentionSpec / SlidingWindowSpec / ChunkedLocalAttentionSpec.real_page_size_bytes"""
    return block_size * num_kv_heads * (head_size + (head_size_v or head_size)) * dtype_bytes


def mla_page(block_size, head_size, dtype_bytes):
    """MLAAttentionSpec.real_page_size_bytes: one 'head' of kv_lora_rank + qk_rope_head_dim"""
    return block_size * 1 * head_size * dtype_bytes


def mamba_page(shapes, dtype_bytes):
    """MambaSpec.page_size_bytes = sum(prod(shape) x dtype size): one page per sequence"""
    total = 0
    for shape, size in zip(shapes, dtype_bytes):
        n = 1
        for dim in shape:
            n *= dim
        total += n * size
    return total


def mamba2_state_shape(tp, intermediate_size, n_groups, num_heads, head_dim, state_size, conv_kernel):
    n_groups = n_groups + (0 if n_groups % tp == 0 else tp - n_groups)  # extra_groups_for_head_shards
    conv_dim = intermediate_size + 2 * n_groups * state_size
    return (conv_kernel - 1, conv_dim // tp), (num_heads // tp, head_dim, state_size)


def gated_delta_net_state_shape(tp, num_k_heads, num_v_heads, head_k_dim, head_v_dim, conv_kernel):
    conv_dim = head_k_dim * num_k_heads * 2 + head_v_dim * num_v_heads
    return (conv_kernel - 1, conv_dim // tp), (num_v_heads // tp, head_v_dim, head_k_dim)


@pytest.mark.parametrize("model, kind, layers, kv_heads, head", [
    ("meta-llama/Llama-3.1-8B", "full attention", 32, 8, 128),
    ("mistralai/Mistral-7B-v0.1", "sliding window (4,096)", 32, 8, 128),
    ("openai/gpt-oss-20b", "sliding window (128) + full", 24, 8, 64),
    ("google/gemma-3-27b-it", "sliding window (1,024) + full", 62, 16, 128),
])
def test_attention_bytes_per_token_equal_vllms_page_at_block_size_1(model, kind, layers, kv_heads, head):
    a = est.model(model).architecture
    assert est.kv_bytes_per_token(a) == layers * full_attention_page(1, kv_heads, head, 2)


def test_chunked_local_layers_keep_one_chunk_as_vllms_chunked_local_attention_spec():
    from tests.test_generic_reader import published

    scout = est.architecture_from_config(published("meta-llama__Llama-4-Scout-17B-16E-Instruct"))
    page = full_attention_page(1, 8, 128, 2)
    assert est.kv_bytes_per_token(scout) == 48 * page
    # ChunkedLocalAttentionSpec allocates at most attention_chunk_size computed tokens (+ the tokens being
    # scheduled, a transient of the step); the 12 global layers keep all 100,000
    assert kv_cache_bytes(scout, 100_000, 1) == 12 * page * 100_000 + 36 * page * 8192


def test_mla_bytes_per_token_equal_vllms_mla_page():
    a = est.model("deepseek-ai/DeepSeek-V3").architecture
    assert est.kv_bytes_per_token(a) == 61 * mla_page(1, 512 + 64, 2)
    assert kv_cache_bytes(a, 1000, 1, tp=8) == 61 * mla_page(1000, 576, 2)  # replicated: no split over TP


@pytest.mark.parametrize("tp", [1, 2, 4, 16])
def test_mamba_state_per_sequence_equals_vllms_mamba_page(tp):
    from estimator.kv_cache import state_bytes
    from tests.test_generic_reader import published

    nano = est.architecture_from_config(published("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"))
    shapes = mamba2_state_shape(tp, 64 * 64, 8, 64, 64, 128, 4)
    assert state_bytes(nano, 3, tp) == 3 * 23 * mamba_page(shapes, (2, 4))  # bf16 conv, fp32 SSM (config)
    nxt = est.model("Qwen/Qwen3-Next-80B-A3B-Thinking").architecture
    shapes = gated_delta_net_state_shape(tp, 16, 32, 128, 128, 4)
    assert state_bytes(nxt, 3, tp) == 3 * 36 * mamba_page(shapes, (2, 2))
