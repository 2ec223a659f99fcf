"""KV cache bytes: GQA/MQA heads, MLA latents, sliding-window layers, cache dtype, tensor parallelism.

    K and V per token = sum over layers of 2 x kv_heads x head_dim x bytes
        (transformers `cache_utils.py::DynamicLayer.update` appends each layer's [b, n_kv, s, d] K and V;
         vLLM `vllm/v1/kv_cache_interface.py`: page = block_size x kv_heads x (head_size + head_size_v) x bytes)
    MLA (DeepSeek-V2/V3): one latent of kv_lora_rank + qk_rope_head_dim per layer and token, no separate V,
        in transformers 5 (`models/deepseek_v3/modeling_deepseek_v3.py`: `cache.update(kv_nope, k_rot)` on the
        [b, 1, s, r_kv] latent and the [b, 1, s, d_rope] key, before `kv_b_proj`), vLLM (`MLAAttentionSpec`),
        SGLang and llama.cpp (`src/llama-kv-cache.cpp`: `has_v = !is_mla`). Engines without MLA support, and
        transformers 4.x, cache the decompressed K and V: n_h x (d_nope + d_rope + d_v) per layer.
    sliding-window layers hold min(tokens, window) tokens                    (vLLM SlidingWindowSpec)
    Gated DeltaNet (linear-attention) and Mamba-2 layers cache no tokens but a fixed state per sequence
    (`state_bytes`)
    DeepSeek-V3.2's lightning indexer adds its own fp8 key per token and layer (`indexer_bytes_per_token`)
    tensor parallel: kv heads per rank = max(1, n_kv // tp); the MLA latent is replicated on every rank
                                                                   (vLLM config/model.py::get_num_kv_heads)
Versions read: transformers v5.24.0, vllm-project/vllm v0.33.0, ggml-org/llama.cpp as vendored in
llama-cpp-python 0.3.36.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

from .architecture import Architecture
from .units import BF16_BYTES

# bytes per cached element; llama.cpp block types cost type_size / blck_size (ggml-common.h)
KV_DTYPE_BYTES = {
    "bf16": Fraction(2),  # the model's 16-bit dtype (vLLM cache_dtype "auto")
    "fp32": Fraction(4),
    "fp8": Fraction(1),  # vLLM fp8 / fp8_e4m3 / fp8_e5m2 (per-layer scales are a few bytes)
    "q8_0": Fraction(34, 32),  # llama.cpp --cache-type-k/v q8_0
    "q5_0": Fraction(22, 32),
    "q4_0": Fraction(18, 32),
}
KV_DTYPE_LABELS = {"bf16": "16-bit (model dtype)", "fp32": "FP32", "fp8": "FP8 (vLLM)",
                   "q8_0": "Q8_0 (llama.cpp)", "q5_0": "Q5_0 (llama.cpp)", "q4_0": "Q4_0 (llama.cpp)"}


def kv_dtype_bytes(kv_dtype: str) -> Fraction:
    try:
        return KV_DTYPE_BYTES[kv_dtype]
    except (KeyError, TypeError):
        raise ValueError(f"kv_dtype must be one of {', '.join(KV_DTYPE_BYTES)}; got {kv_dtype!r}") from None


@dataclass(frozen=True)
class KVElements:
    """Cached elements per token, summed over the full-attention layers and over the windowed layers."""

    full: int  # elements per token in layers that keep every token
    windowed: int  # elements per token in sliding-window layers (they keep at most `window` tokens)
    window: int


def layer_elements(a: Architecture, layer: int, tp: int, mla_latent: bool) -> int:
    """Elements one layer caches per token on one tensor-parallel rank."""
    if a.is_mla:
        if mla_latent:
            return a.kv_lora_rank + a.qk_rope_head_dim  # replicated: one latent "head"
        heads = max(1, a.num_heads // tp)  # decompressed K and V per head (no MLA support, transformers 4)
        return heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim)
    kv_heads, head_dim = a.attention_shape(layer)
    return 2 * max(1, kv_heads // tp) * head_dim


@functools.lru_cache(maxsize=1024)
def kv_elements(a: Architecture, tp: int = 1, mla_latent: bool = True) -> KVElements:
    """Summed over the layers that keep a cache of their own: not linear-attention or Mamba layers (a state instead),
    nor layers that reuse another layer's K and V (Gemma 3n / 4 `num_kv_shared_layers`)."""
    windowed_layers = set(a.sliding_layers)
    full = windowed = 0
    for layer in a.cached_layers:
        if layer in windowed_layers:
            windowed += layer_elements(a, layer, tp, mla_latent)
        else:
            full += layer_elements(a, layer, tp, mla_latent)
    return KVElements(full=full, windowed=windowed, window=a.sliding_window)


def kv_cache_bytes(a: Architecture, tokens: int, sequences: int, kv_dtype: str = "bf16", tp: int = 1,
                   mla_latent: bool = True) -> int:
    """Bytes of the KV cache on one GPU for `sequences` sequences of `tokens` tokens each."""
    e = kv_elements(a, tp, mla_latent)
    per_sequence = e.full * tokens + e.windowed * min(tokens, e.window)
    indexer = indexer_bytes_per_token(a) * tokens * sequences
    return -(-per_sequence * sequences * kv_dtype_bytes(kv_dtype) // 1) + indexer


def kv_bytes_per_token(a: Architecture, kv_dtype: str = "bf16", mla_latent: bool = True) -> int:
    """Bytes one more token adds to the cache while it is shorter than every window (all layers count)."""
    e = kv_elements(a, 1, mla_latent)
    return -(-(e.full + e.windowed) * kv_dtype_bytes(kv_dtype) // 1) + indexer_bytes_per_token(a)


INDEXER_QUANT_BLOCK = 128  # vLLM keeps the indexer keys in fp8 with one 4-byte scale per 128 values


def indexer_layers(a: Architecture) -> int:
    """Layers that run a lightning indexer of their own (DeepSeek-V3.2, GLM-5.x; GLM's "shared" layers reuse the
    previous layer's top-k and run no indexer)."""
    return a.num_layers - len(a.shared_index_layers) if a.index_heads else 0


def indexer_bytes_per_token(a: Architecture) -> int:
    """DeepSeek-V3.2's lightning indexer caches one key of index_head_dim per token and layer, next to the MLA
    latent: in vLLM as fp8 values plus a 4-byte scale per 128 (`vllm/model_executor/models/deepseek_v2.py`
    DeepseekV32IndexerCache, head_dim + head_dim // 128 * 4 uint8), replicated on every tensor-parallel rank, in
    that layout whatever the KV-cache dtype."""
    return indexer_layers(a) * (a.index_head_dim + a.index_head_dim // INDEXER_QUANT_BLOCK * 4)


def state_bytes(a: Architecture, sequences: int, tp: int = 1) -> int:
    """Bytes of the recurrent layers' state on one GPU for `sequences` running sequences. It does not grow with the
    sequence: it is the same at 1 and 1M tokens. Per layer and sequence, as vLLM allocates it
    (vllm-project/vllm `vllm/model_executor/layers/mamba/mamba_utils.py` at 02d7108, MambaStateShapeCalculator; one
    MambaSpec page per sequence, `vllm/v1/kv_cache_interface.py`):
      Gated DeltaNet  conv (kernel - 1) x conv_dim / tp, conv_dim = 2 n_k d_k + n_v d_v;
                      recurrent n_v / tp x d_v x d_k                          (gated_delta_net_state_shape)
      Mamba-2         conv (kernel - 1) x conv_dim / tp, conv_dim = d_inner + 2 G' N, where G' = G, or tp when G
                      does not divide by tp (G + extra_groups_for_head_shards = G + tp - G);
                      SSM heads / tp x head_dim x N                                     (mamba2_state_shape)
      Mamba (1)       conv d_inner / tp x (kernel - 1); SSM d_inner / tp x N          (mamba1_state_shape)
    The conv state is in the model dtype (bf16); the recurrent / SSM state in fp32 when the config's
    mamba_ssm_dtype / mamba_ssm_cache_dtype says so (`ssm_state_bytes`), as vLLM's MambaStateDtypeCalculator does."""
    total = 0
    if a.linear_layers:
        conv_dim = 2 * a.linear_key_heads * a.linear_key_head_dim + a.linear_value_heads * a.linear_value_head_dim
        conv = conv_dim // tp * (a.linear_conv_kernel - 1) * BF16_BYTES  # the model dtype
        recurrent = max(1, a.linear_value_heads // tp) * a.linear_value_head_dim * a.linear_key_head_dim
        total += len(a.linear_layers) * (conv + recurrent * a.ssm_state_bytes)
    if a.mamba_layers and a.mamba_version == 1:  # mamba1_state_shape: conv (d_inner / tp, kernel - 1), SSM
        per_rank = a.mamba_inner // tp  # (d_inner / tp, N)
        total += len(a.mamba_layers) * (per_rank * (a.mamba_conv_kernel - 1) * BF16_BYTES
                                        + per_rank * a.mamba_state_size * a.ssm_state_bytes)
    elif a.mamba_layers:
        groups = a.mamba_groups if a.mamba_groups % tp == 0 else tp  # G + (tp - G), vLLM's rule as written
        conv_dim = a.mamba_inner + 2 * groups * a.mamba_state_size
        conv = conv_dim // tp * (a.mamba_conv_kernel - 1) * BF16_BYTES
        ssm = max(1, a.mamba_heads // tp) * a.mamba_head_dim * a.mamba_state_size
        total += len(a.mamba_layers) * (conv + ssm * a.ssm_state_bytes)
    return total * sequences
