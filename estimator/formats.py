"""Weight storage formats: bits per weight, which tensors each format quantizes, bytes of a model.

Bits per weight include the format's scales and zero points:
- bitsandbytes LLM.int8: int8 weight + one fp32 row statistic per output row
  (bitsandbytes-foundation/bitsandbytes `bitsandbytes/backends/cuda/ops.py`, `row_stats`).
- bitsandbytes NF4/FP4: 4 bits + one fp32 absmax per 64 weights = 4.5; with double quantization the absmax is
  stored as uint8 with an fp32 scale per 256 blocks: 4 + 8/64 + 32/(64*256) = 4.127 (QLoRA, Dettmers et al.
  2023, arXiv:2305.14314, section 3: "0.127 bits"; bitsandbytes `functional.py::quantize_4bit`,
  `compress_statistics`).
- GPTQ / AWQ 4-bit, group 128: int4 weight + fp16 scale and int4 zero per group: 4 + 16/128 + 4/128;
  GPTQ adds an int32 `g_idx` per input channel (vllm-project/vllm v0.33.0
  `vllm/model_executor/layers/quantization/auto_gptq.py`, `auto_awq.py`).
- FP8 E4M3: 1 byte + an fp32 scale per tensor (vLLM `quantization/fp8.py`), or per 128x128 block
  (DeepSeek-V3 config.json `weight_block_size [128, 128]`, fp32 `weight_scale_inv`).
- MXFP4: 32 E2M1 values + one E8M0 scale = 17 bytes / 32 weights (OCP Microscaling Formats (MX) v1.0
  specification; ggml `block_mxfp4`); gpt-oss quantizes only its MoE experts (OpenAI gpt-oss model card).
- GGUF: ggml block types (ggml-org/llama.cpp `ggml/src/ggml-common.h`, gguf-py `GGML_QUANT_SIZES`), and
  llama.cpp's per-tensor recipes for the _K_M mixes (`src/llama-quant.cpp::llama_tensor_get_type_impl`).
What stays 16-bit: embeddings, lm_head and norms for bitsandbytes, GPTQ, AWQ and FP8 (they replace only the
Linear layers of the decoder blocks: transformers `integrations/bitsandbytes.py`, `quantizers/base.py`
`get_keys_to_not_convert`); gpt-oss MXFP4 covers only the MoE experts. GGUF keeps vectors in F32.

Group-scaled formats are sized tensor by tensor as their checkpoints store them (`group` > 0): every output row
holds ceil(cols / group) scale groups (2-D blocks: ceil(rows / block_rows) x ceil(cols / group)), so a row length
that a group does not divide costs a whole extra group, as the stored scale tensors do:
    bits = rows x cols x value_bits + groups x group_bits + rows x row_bits + cols x col_bits + tensor_bits
- FP8 128x128 blocks: fp32 `weight_scale_inv [ceil(out/128), ceil(in/128)]` (transformers
  `integrations/finegrained_fp8.py` FP8Linear; vLLM `quantization/fp8.py` block path).
- GPTQ (AutoGPTQ / GPTQModel v1 checkpoints): int32 `qweight [in*bits/32, out]`, int32 `qzeros [groups,
  out*bits/32]`, fp16 `scales [groups, out]`, int32 `g_idx [in]` (stored with or without desc_act); vLLM
  `quantization/gptq.py` GPTQLinearMethod.create_weights allocates the same.
- AWQ (AutoAWQ GEMM): int32 `qweight [in, out*bits/32]`, int32 `qzeros [groups, out*bits/32]`, fp16 `scales
  [groups, out]`; no g_idx (vLLM `quantization/awq.py`).
- compressed-tensors (neuralmagic/compressed-tensors, now vllm-project/compressed-tensors @ac8e2ba
  `src/compressed_tensors/compressors/pack_quantized/base.py`): int32 `weight_packed [out, in*bits/32]`,
  `weight_scale [out, groups]` in the model's dtype (`quantization/lifecycle/initialize.py`: scale_dtype =
  the observed weight dtype, bf16 here), int64 `weight_shape [2]`, `weight_zero_point` packed like the
  weight only when asymmetric, int32 `weight_g_idx [in]` only with actorder "group". FP8 per channel
  (`float-quantized`): fp8 weight + `weight_scale [out, 1]` in bf16 (vLLM casts it to fp32 when it loads:
  `compressed_tensors/schemes/compressed_tensors_w8a8_fp8.py`, a difference of 2 bytes per output row).
- NVFP4 (NVIDIA TensorRT Model Optimizer export; vLLM `quantization/modelopt.py` ModelOptNvFp4LinearMethod):
  uint8 `weight [out, in/2]`, fp8 `weight_scale [out, in/16]`, fp32 `weight_scale_2` (and an fp32
  `input_scale`) per tensor.
- MXFP4 (gpt-oss): uint8 `*_blocks [E, out, in/32, 16]` + uint8 E8M0 `*_scales [E, out, in/32]`
  (transformers `integrations/mxfp4.py`).
A checkpoint's own quantization_config (estimator/checkpoint.py) may leave more modules in 16-bit than a format's
scope does: `weight_bytes(a, format, unquantized)` takes those as role patterns ("attn_*", "ffn_down@0").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fnmatch import fnmatchcase
from fractions import Fraction

from .architecture import Architecture, Tensor, tensors
from .units import BF16_BYTES


@dataclass(frozen=True)
class BlockType:
    """A storage type that packs `block` elements into `block_bytes` bytes (ggml's blck_size / type_size)."""

    name: str
    block: int
    block_bytes: int

    @property
    def bits(self) -> Fraction:
        return Fraction(8 * self.block_bytes, self.block)


# ggml block types: (elements per block, bytes per block), ggml/src/ggml-common.h and gguf-py GGML_QUANT_SIZES
GGML_TYPES = {t.name: t for t in (
    BlockType("F32", 1, 4), BlockType("F16", 1, 2), BlockType("BF16", 1, 2),
    BlockType("Q8_0", 32, 34), BlockType("Q5_1", 32, 24), BlockType("Q5_0", 32, 22), BlockType("Q4_1", 32, 20),
    BlockType("Q4_0", 32, 18), BlockType("Q6_K", 256, 210), BlockType("Q5_K", 256, 176),
    BlockType("Q4_K", 256, 144), BlockType("Q3_K", 256, 110), BlockType("Q2_K", 256, 84),
    BlockType("IQ4_NL", 32, 18), BlockType("IQ4_XS", 256, 136), BlockType("IQ3_S", 256, 110),
    BlockType("IQ3_XXS", 256, 98), BlockType("IQ2_S", 256, 82), BlockType("IQ2_XS", 256, 74),
    BlockType("IQ2_XXS", 256, 66), BlockType("IQ1_M", 256, 56), BlockType("IQ1_S", 256, 50),
    BlockType("MXFP4", 32, 17),
)}

# llama.cpp recipes (llama-quantize names) -> the ggml type of every tensor their rules do not single out
GGUF_BASE = {"q8_0": "Q8_0", "q6_k": "Q6_K", "q5_k_m": "Q5_K", "q5_0": "Q5_0", "q4_k_m": "Q4_K", "q4_k_s": "Q4_K",
             "q4_0": "Q4_0", "q3_k_m": "Q3_K", "q2_k": "Q2_K", "iq4_xs": "IQ4_XS", "iq4_nl": "IQ4_NL",
             "mxfp4_moe": "Q8_0"}
# MXFP4_MOE (llama.cpp's file type of gpt-oss GGUFs, "MXFP4 MoE" in llama-bench's model column): the MoE expert
# tensors (ne[2] > 1) MXFP4, every other matrix and the output Q8_0 (src/llama-quant.cpp `llama_tensor_get_type`,
# `ftype == LLAMA_FTYPE_MOSTLY_MXFP4_MOE`). llama-bench prints "gpt-oss 20B MXFP4 MoE | 11.27 GiB" and "gpt-oss 120B
# MXFP4 MoE | 59.02 GiB" for ggml-org's files (ggml-org/llama.cpp benches/dgx-spark.md@4c7e9893), where MXFP4 experts
# with 16-bit elsewhere (`mxfp4`, the checkpoint's layout) would be 12.82 and 60.77.
GGUF_EXPERT_TYPE = {"mxfp4_moe": "MXFP4"}
# Architectures whose GGUF keeps Q, K and V as one `attn_qkv` tensor per layer (ggml-org/llama.cpp
# gguf-py/gguf/tensor_mapping.py at 0024aa74, block_mappings_cfg MODEL_TENSOR.ATTN_QKV: gptneox
# `attention.query_key_value`, gpt2 and qwen `attn.c_attn`, falcon `self_attention.query_key_value`, phi3
# `self_attn.qkv_proj`). llama-quant.cpp (007dbbf3) files that tensor under ATTENTION_QKV, which
# `category_is_attn_v` counts as attn_v-like: the whole fused tensor takes the attn_v rule.
GGUF_FUSED_QKV = frozenset({"gpt_neox", "gpt2", "qwen", "falcon", "RefinedWeb", "RefinedWebModel", "phi3"})
# where a tensor's row length does not divide the block, llama.cpp falls back to a 32-block type
GGUF_FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "Q2_K": "IQ4_NL", "Q3_K": "IQ4_NL",
                 "IQ4_XS": "IQ4_NL"}


@dataclass(frozen=True)
class WeightFormat:
    """How weights are stored. `bits` is the storage of one quantized weight, scales included."""

    id: str  # the CLI / URL name, e.g. "nf4-dq"
    label: str  # what the page shows
    bits: Fraction  # bits per quantized weight, incl. per-block scales and zeros
    scope: str  # "all" (every tensor), "linear" (decoder-block linears), "experts" (MoE experts), "gguf"
    source: str  # where the layout comes from
    row_bits: int = 0  # extra bits per output row (LLM.int8 fp32 row statistics)
    col_bits: int = 0  # extra bits per input column (GPTQ int32 g_idx)
    tensor_bits: int = 0  # extra bits per quantized matrix (per-tensor fp32 scale)
    # Exact group layout (group > 0): values of value_bits, and group_bits of scale (+ zero point) per group of
    # `group` consecutive inputs of one row, or per block_rows x group block; `bits` is then the nominal rate
    value_bits: int = 0  # bits of one stored weight value (4 for int4 / E2M1, 8 for fp8)
    group: int = 0  # inputs per scale group along a row (0: no groups, `bits` per weight)
    group_bits: int = 0  # bits of the scale (and zero point) of one group or block
    block_rows: int = 1  # rows per scale block (128 for DeepSeek's 128x128 blocks)


WEIGHT_FORMATS = {f.id: f for f in (
    WeightFormat("fp32", "FP32", Fraction(32), "all", "IEEE float32"),
    WeightFormat("bf16", "BF16 / FP16", Fraction(16), "all", "16-bit floats"),
    WeightFormat("fp8", "FP8 E4M3 (per-tensor scale)", Fraction(8), "linear", "vLLM quantization/fp8.py",
                 tensor_bits=32),
    WeightFormat("fp8-block", "FP8 E4M3, 128x128 blocks (DeepSeek-V3)", 8 + Fraction(32, 128 * 128), "linear",
                 "DeepSeek-V3 weight_block_size [128, 128], fp32 weight_scale_inv",
                 value_bits=8, group=128, group_bits=32, block_rows=128),
    WeightFormat("fp8-channel", "FP8 E4M3, per-channel scale (compressed-tensors FP8 dynamic)", Fraction(8),
                 "linear", "compressed-tensors float-quantized: fp8 weight + bf16 weight_scale per output row",
                 row_bits=16),
    WeightFormat("w8a8-int8", "INT8 W8A8, per-channel scale (compressed-tensors)", Fraction(8), "linear",
                 "compressed-tensors int-quantized: int8 weight + bf16 weight_scale per output row", row_bits=16),
    WeightFormat("int8", "INT8 (bitsandbytes LLM.int8)", Fraction(8), "linear",
                 "bitsandbytes int8 weight + fp32 row_stats", row_bits=32),
    WeightFormat("nf4", "NF4 (bitsandbytes, blocksize 64)", 4 + Fraction(32, 64), "linear",
                 "bitsandbytes quantize_4bit: fp32 absmax per 64"),
    WeightFormat("fp4", "FP4 (bitsandbytes, blocksize 64)", 4 + Fraction(32, 64), "linear",
                 "bitsandbytes quantize_4bit: fp32 absmax per 64"),
    WeightFormat("nf4-dq", "NF4 + double quantization (QLoRA)", 4 + Fraction(8, 64) + Fraction(32, 64 * 256), "linear",
                 "QLoRA section 3; bitsandbytes compress_statistics (uint8 absmax, fp32 per 256 blocks)"),
    WeightFormat("gptq-4bit", "GPTQ 4-bit, group 128", 4 + Fraction(16, 128) + Fraction(4, 128), "linear",
                 "vLLM auto_gptq.py: int4 qweight, int4 qzeros, fp16 scales per group, int32 g_idx", col_bits=32,
                 value_bits=4, group=128, group_bits=16 + 4),
    WeightFormat("awq-4bit", "AWQ 4-bit, group 128", 4 + Fraction(16, 128) + Fraction(4, 128), "linear",
                 "vLLM auto_awq.py: int4 qweight, int4 qzeros, fp16 scales per group",
                 value_bits=4, group=128, group_bits=16 + 4),
    WeightFormat("int4-g128", "INT4 W4A16, group 128 (compressed-tensors)", 4 + Fraction(16, 128), "linear",
                 "compressed-tensors pack-quantized: int32-packed int4, bf16 scale per 128, int64 weight_shape",
                 tensor_bits=128, value_bits=4, group=128, group_bits=16),
    WeightFormat("int4-g32", "INT4 W4A16, group 32 (compressed-tensors)", 4 + Fraction(16, 32), "linear",
                 "compressed-tensors pack-quantized: int32-packed int4, bf16 scale per 32, int64 weight_shape",
                 tensor_bits=128, value_bits=4, group=32, group_bits=16),
    WeightFormat("mxfp4", "MXFP4 (experts; gpt-oss)", GGML_TYPES["MXFP4"].bits, "experts",
                 "OCP MX: 32 x E2M1 + E8M0 scale; gpt-oss quantizes only the MoE experts",
                 value_bits=4, group=32, group_bits=8),
    WeightFormat("nvfp4", "NVFP4 (16-element blocks, FP8 scale)", 4 + Fraction(8, 16), "linear",
                 "NVIDIA NVFP4: E2M1 values, one E4M3 scale per 16, one fp32 scale per tensor", tensor_bits=32,
                 value_bits=4, group=16, group_bits=8),
    *(WeightFormat(gguf_id, f"GGUF {gguf_id.upper()}", GGML_TYPES[GGUF_EXPERT_TYPE.get(gguf_id, base)].bits, "gguf",
                   "llama.cpp ggml-common.h block sizes; llama-quant.cpp recipes")
      for gguf_id, base in GGUF_BASE.items()),
)}


CHECKPOINT = "checkpoint"  # --weights: as the model's own quantization_config stores them (estimator/checkpoint.py)

# Words people type for a format, and the format each stands for (the CLI, the API and links accept them; case,
# '-', '_' and spaces do not matter, so 'Q4_K_M', 'q4-k-m' and 'fp8_block' are the ids too). Only unambiguous words:
# 'int4' could be GPTQ, AWQ or compressed-tensors, so it means what the tables' 4-bit row means.
ALIASES = {
    **dict.fromkeys(("fp16", "float16", "half", "f16", "bfloat16", "16bit"), "bf16"),  # same 2 bytes a weight
    **dict.fromkeys(("float32", "f32", "32bit", "float"), "fp32"),  # torch.float is float32
    **dict.fromkeys(("float8", "fp8-e4m3", "e4m3", "8bit"), "fp8"),  # 8bit: the tables' 8-bit row (FP8)
    **dict.fromkeys(("4bit", "int4"), "awq-4bit"),  # the tables' 4-bit row: int4, group 128 (AWQ)
    "gptq": "gptq-4bit", "awq": "awq-4bit",  # the only GPTQ / AWQ layouts here
    "w8a8": "w8a8-int8", "w4a16": "int4-g128",  # compressed-tensors schemes (W4A16's default group is 128)
    # GGUF by its bits: Ollama's and llama.cpp's usual choice of each size
    "q8": "q8_0", "q6": "q6_k", "q5": "q5_k_m", "q4": "q4_k_m", "q3": "q3_k_m", "q2": "q2_k",
}


def word_key(text: str) -> str:
    """How typed words are compared with ids and aliases: lower case, without '-', '_' and spaces."""
    return "".join(ch for ch in str(text).lower() if ch not in "-_ ")


def resolve_word(text: str, choices) -> str | None:
    """The choice `text` stands for: the choice itself in any case or separators ('Q4_K_M', 'fp8_block'), or an
    alias of one (`ALIASES`, only when the alias's format is among `choices`); None when it names none."""
    if not isinstance(text, str):
        return None
    key = word_key(text)
    for choice in choices:
        if isinstance(choice, str) and word_key(choice) == key:
            return choice
    target = _ALIAS_KEYS.get(key)
    return target if target in choices else None


def aliases_of(choices) -> dict[str, str]:
    """The aliases that apply to an input with these choices (alias -> choice), for help texts."""
    return {alias: target for alias, target in ALIASES.items() if target in choices}


_ALIAS_KEYS = {word_key(alias): target for alias, target in ALIASES.items()}
assert len(_ALIAS_KEYS) == len(ALIASES) and not set(_ALIAS_KEYS) & {word_key(f) for f in WEIGHT_FORMATS}, \
    "an alias must not collide with another alias or a format id"
assert len({word_key(f) for f in WEIGHT_FORMATS}) == len(WEIGHT_FORMATS), "format ids must differ as words"


def weight_format(format_id: str | WeightFormat) -> WeightFormat:
    """Look up a format by id (or an alias: `ALIASES`), with an error listing the valid ids. A WeightFormat (a
    checkpoint's exact layout, estimator/checkpoint.py) is returned as it is."""
    if isinstance(format_id, WeightFormat):
        return format_id
    try:
        return WEIGHT_FORMATS[format_id]
    except (KeyError, TypeError):
        resolved = resolve_word(format_id, WEIGHT_FORMATS)
        if resolved is not None:
            return WEIGHT_FORMATS[resolved]
        raise ValueError(f"weights must be one of {', '.join(WEIGHT_FORMATS)}; got {format_id!r}") from None


def _use_more_bits(i: int, n: int) -> bool:
    """llama.cpp: layers that K_M recipes give more bits (first and last eighth, every third in between)."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def gguf_tensor_type(format_id: str, t: Tensor, a: Architecture) -> str:
    """The ggml type llama.cpp's `llama_tensor_get_type` picks for tensor `t` under recipe `format_id`
    (no imatrix, no overrides)."""
    base = GGUF_BASE[format_id]
    if not t.is_matrix:
        return "F32"  # norms, biases: 1-D tensors are never quantized
    if t.role == "router":
        return "F32"  # ffn_gate_inp is excluded from quantization
    if format_id in GGUF_EXPERT_TYPE:  # MXFP4_MOE: experts MXFP4, every other matrix (and the output) the base
        chosen = GGUF_EXPERT_TYPE[format_id] if t.is_expert else base
        return chosen if t.cols % GGML_TYPES[chosen].block == 0 else "F16"
    n, i = a.num_layers, t.layer
    gqa = a.num_heads // a.num_kv_heads
    eight_experts = a.num_experts == 8
    fused_qkv = a.model_type in GGUF_FUSED_QKV and t.role in ("attn_q", "attn_k", "attn_v")
    chosen = base
    if t.role == "output" or (t.role == "token_embd" and a.tie_word_embeddings):
        chosen = "Q8_0" if base == "Q8_0" or a.model_type == "falcon" else "Q6_K"
    elif t.role == "attn_v" or fused_qkv:  # attn_v, or its layer's fused attn_qkv (GGUF_FUSED_QKV)
        chosen = {"q2_k": "Q4_K" if gqa >= 4 else "Q3_K", "q3_k_m": "Q5_K" if i < 2 else "Q4_K",
                  "q4_k_s": "Q5_K" if i < 4 else base,
                  "iq4_xs": "Q5_K" if gqa >= 4 else base, "iq4_nl": "Q5_K" if gqa >= 4 else base,
                  "q4_k_m": "Q6_K" if _use_more_bits(i, n) else base,
                  "q5_k_m": "Q6_K" if _use_more_bits(i, n) else base}.get(format_id, base)
        if eight_experts:
            chosen = "Q8_0"
    elif t.role == "attn_k" and eight_experts:
        chosen = "Q8_0"
    elif t.role.endswith("_down"):  # ffn_down, ffn_down_exps, ffn_down_shexp
        chosen = {"q2_k": "Q3_K", "q3_k_m": "Q5_K" if i < n // 16 else "Q4_K",
                  "q4_k_m": "Q6_K" if _use_more_bits(i, n) else base,
                  "q5_k_m": "Q6_K" if _use_more_bits(i, n) else base,
                  "q4_k_s": "Q5_K" if i < n // 8 else base,
                  "iq4_xs": "Q5_K" if i < n // 8 else base, "iq4_nl": "Q5_K" if i < n // 8 else base,
                  }.get(format_id, base)
    elif t.role == "attn_output":
        if eight_experts:
            chosen = "Q5_K" if format_id in ("q2_k", "q3_k_m", "q4_k_s", "q4_k_m", "iq4_xs", "iq4_nl") else base
        else:
            chosen = {"q2_k": "Q3_K", "q3_k_m": "Q4_K"}.get(format_id, base)
    if t.cols % GGML_TYPES[chosen].block:
        chosen = GGUF_FALLBACK.get(chosen, "F16")
        if t.cols % GGML_TYPES[chosen].block:
            chosen = "F16"
    return chosen


def _in_scope(fmt: WeightFormat, t: Tensor, a: Architecture) -> bool:
    if fmt.scope == "all":
        return True
    if fmt.scope == "experts" and a.is_moe:
        return t.is_expert and t.is_matrix
    return t.is_block_linear  # "linear", and "experts" on a dense model


def _ceil_div(n: int, d: int) -> int:
    return -(-n // d)


@functools.lru_cache(maxsize=4096)
def unquantized_rule(pattern: str) -> tuple[str, frozenset[int] | None]:
    """A role pattern of a checkpoint's unquantized set: "attn_*" (every layer) or "ffn_down@0" (layer 0 only;
    "@0,3" lists layers). The role part is a glob over Tensor roles (estimator/architecture.py)."""
    role, sep, layers = pattern.partition("@")
    if not role or (sep and not layers):
        raise ValueError(f"unquantized pattern must be ROLE or ROLE@LAYER[,LAYER...], got {pattern!r}")
    if not sep:
        return role, None
    try:
        return role, frozenset(int(n) for n in layers.split(","))
    except ValueError:
        raise ValueError(f"unquantized pattern {pattern!r}: layers must be whole numbers") from None


def is_unquantized(t: Tensor, unquantized: frozenset[str]) -> bool:
    """Whether a checkpoint's unquantized set (role patterns) names tensor `t`."""
    for pattern in unquantized:
        role, layers = unquantized_rule(pattern)
        if fnmatchcase(t.role, role) and (layers is None or t.layer in layers):
            return True
    return False


def tensor_bytes(fmt: WeightFormat, t: Tensor, a: Architecture, unquantized: frozenset[str] = frozenset()) -> int:
    """Bytes of tensor group `t` stored in `fmt`; tensors the format leaves alone, or that a checkpoint lists
    in `unquantized`, stay 16-bit."""
    if fmt.scope == "gguf":
        block = GGML_TYPES[gguf_tensor_type(fmt.id, t, a)]
        return t.rows * t.copies * (t.cols // block.block) * block.block_bytes
    if not _in_scope(fmt, t, a) or (unquantized and is_unquantized(t, unquantized)):
        return t.numel * BF16_BYTES
    extra = t.rows * fmt.row_bits + t.cols * fmt.col_bits + fmt.tensor_bits  # per copy
    if fmt.group:
        # values, then one scale (+ zero point) per group of `group` inputs (x block_rows rows), per copy
        groups = _ceil_div(t.rows, fmt.block_rows) * _ceil_div(t.cols, fmt.group)
        bits = t.copies * (t.rows * t.cols * fmt.value_bits + groups * fmt.group_bits + extra)
    else:
        bits = t.numel * fmt.bits + t.copies * extra
    return -(-bits // 8)  # ceil to whole bytes


@dataclass(frozen=True)
class WeightBytes:
    """Bytes of a model's weights in one format, split by how they shard across tensor-parallel ranks."""

    matrices: int  # 2-D weights (linears, embeddings, lm_head): split across TP ranks
    vectors: int  # norms, biases, sinks: replicated on every rank

    @property
    def total(self) -> int:
        return self.matrices + self.vectors


@functools.lru_cache(maxsize=2048)
def weight_bytes(a: Architecture, format_id: str | WeightFormat,
                 unquantized: frozenset[str] = frozenset()) -> WeightBytes:
    """Bytes of every weight of `a` stored as `format_id` (cached per architecture, format and unquantized set).

    `format_id` is a WEIGHT_FORMATS id or a WeightFormat (a checkpoint's exact layout); `unquantized` holds
    role patterns a checkpoint leaves in 16-bit ("attn_*", "shared_*", "ffn_down@0"; see `unquantized_rule`)."""
    fmt = weight_format(format_id)
    if not isinstance(unquantized, frozenset):
        raise ValueError("unquantized must be a frozenset of role patterns")
    for pattern in unquantized:
        unquantized_rule(pattern)  # a malformed pattern is an error, not a silent no-match
    matrices = vectors = 0
    for t in tensors(a):
        size = tensor_bytes(fmt, t, a, unquantized)
        if t.is_matrix:
            matrices += size
        else:
            vectors += size
    return WeightBytes(matrices, vectors)
