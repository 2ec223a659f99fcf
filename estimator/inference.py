"""Inference estimates: the detailed (architecture-aware) breakdown, and the 16/8/4-bit table of both methods.

Detailed, per GPU of a tensor-parallel group of `tp`:
    weights     = 2-D weights in the chosen format / tp + norms and biases (replicated)     (formats.py)
    KV cache    = b x C sequences x per-token bytes (GQA / MLA / sliding window, KV dtype)  (kv_cache.py)
    activations = the largest working set of one layer while prefilling b x s tokens      (activations.py)
    logits      = fp32 logits of the last position of each of the b x C sequences (sampling)
    overhead    = runtime overhead per GPU (default 2 GB)
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import partial

from .activations import inference_layer_peak, sampling_logits_bytes
from .architecture import Architecture, parameter_counts
from .breakdown import Breakdown, make_breakdown
from .formats import CHECKPOINT, WeightBytes, weight_bytes, weight_format
from .kv_cache import KV_DTYPE_LABELS, kv_bytes_per_token, kv_cache_bytes, state_bytes
from .quick import quick_inference
from .scenarios import InferenceScenario, with_image_tokens
from .units import BF16_BYTES, bytes_from_gb

QUICK_ROWS = (("16-bit", Fraction(16)), ("8-bit", Fraction(8)), ("4-bit", Fraction(4)))
DETAILED_ROWS = (("16-bit", "bf16"), ("8-bit", "fp8"), ("4-bit", "awq-4bit"))  # common serving formats
RowFunction = Callable[[InferenceScenario], Breakdown]


def _weights(a: Architecture, format_id: str) -> WeightBytes:
    """Weights in `format_id`; CHECKPOINT: as the checkpoint's quantization_config stores them (its exact layout and
    the modules it leaves 16-bit, estimator/checkpoint.py), 16-bit when it declares none."""
    if format_id != CHECKPOINT:
        return weight_bytes(a, format_id)
    return a.checkpoint.weight_bytes(a) if a.checkpoint is not None else weight_bytes(a, "bf16")


def detailed_inference(s: InferenceScenario, format_id: str, row: str) -> Breakdown:
    """One inference row with weights stored as `format_id` (a WEIGHT_FORMATS id, or CHECKPOINT)."""
    s, images = with_image_tokens(s)
    a: Architecture = s.model
    tp, sequences = s.tensor_parallel, s.batch_size * s.concurrency
    w = _weights(a, format_id)
    act_bytes = s.activation_bits // 8
    components = {
        "weights": -(-w.matrices // tp) + w.vectors,
        **({"vision": _tower_bytes(a, tp)} if a.tower_parameters else {}),
        "kv_cache": kv_cache_bytes(a, s.seq_len, sequences, s.kv_dtype, tp, s.mla_latent_cache),
        **({"state": state_bytes(a, sequences, tp)} if a.linear_layers or a.mamba_layers else {}),
        "activations": inference_layer_peak(a, s.batch_size, _prefill_tokens(s), s.seq_len, act_bytes=act_bytes,
                                            flash_attention=s.flash_attention, tp=tp),
        "logits": sampling_logits_bytes(a, sequences),
        "overhead": bytes_from_gb(s.overhead_gb),
    }
    return make_breakdown(row, "detailed", components, gpus=tp,
                          assumptions=_assumptions(s, format_id) + ((images,) if images else ()))


def _tower_bytes(a: Architecture, tp: int) -> int:
    """The vision and audio towers in 16-bit, split over tensor parallelism as vLLM's default
    `--mm-encoder-tp-mode weights` splits each layer (vllm/config/multimodal.py; `data` keeps them whole on every GPU).
    Quantized checkpoints leave them unquantized (their `ignore` lists name the vision tower)."""
    return -(-a.tower_parameters * BF16_BYTES // tp)


def _weights_notes(a: Architecture, format_id: str) -> tuple[str, ...]:
    if format_id == CHECKPOINT:
        return a.checkpoint.notes if a.checkpoint is not None else ("Weights: 16-bit, as the checkpoint stores them "
                                                                    "(its config has no quantization_config)",)
    return (f"Weights: {weight_format(format_id).label}; embeddings, lm_head and norms as that format leaves them",)


def _prefill_tokens(s: InferenceScenario) -> int:
    """Tokens per sequence in one prefill forward: a chunk (vLLM chunked prefill) or the whole sequence."""
    return min(s.seq_len, s.prefill_chunk) if s.prefill_chunk else s.seq_len


def _assumptions(s: InferenceScenario, format_id: str) -> tuple[str, ...]:
    a: Architecture = s.model
    counts = parameter_counts(a)
    per_token = kv_bytes_per_token(a, s.kv_dtype, s.mla_latent_cache)
    if a.is_mla:
        cache = (f"MLA latent of {a.kv_lora_rank} + {a.qk_rope_head_dim} per layer" if s.mla_latent_cache
                 else "decompressed K and V per head (engines without MLA support)")
    else:
        cache = f"{a.num_kv_heads} KV heads x {a.head_dim} head_dim x 2 (K and V)"
    notes = [
        f"Parameters: {counts.total:,} total, {counts.active:,} active per token"
        + (f" (language model; {counts.towers:,} more in the vision / audio towers)" if counts.towers else ""),
        *_weights_notes(a, format_id),
        f"KV cache: {cache} x {a.num_layers} layers, {KV_DTYPE_LABELS[s.kv_dtype]}: "
        f"{per_token:,} B ({per_token / 1024:g} KiB) per token; {s.batch_size} x {s.concurrency} sequences of "
        f"{s.seq_len:,} tokens",
        f"Activations: one prefill forward of {s.batch_size} x {_prefill_tokens(s):,} tokens"
        + (" (chunked prefill)" if _prefill_tokens(s) < s.seq_len else "") + ", "
        + ("FlashAttention (no s x s scores)" if s.flash_attention else "eager attention (s x s scores)"),
        "Logits: fp32 last-position logits of every running sequence, as a vLLM-style sampler keeps them",
        f"Runtime overhead: {s.overhead_gb:g} GB per GPU",
    ]
    if a.linear_layers:
        notes.append(f"{len(a.linear_layers)} Gated DeltaNet layers prefill with transformers' torch fallback "
                     "(torch_chunk_gated_delta_rule: fp32 chunk tensors of 64 tokens); flash-linear-attention's "
                     "kernels, which vLLM and SGLang run, keep less")
    if a.sliding_layers:
        kind = (f"chunked local attention in {a.sliding_window:,}-token chunks (a token sees only its own chunk; "
                "vLLM's ChunkedLocalAttentionSpec frees finished chunks)" if a.chunked_attention
                else f"a {a.sliding_window:,}-token sliding window")
        notes.append(f"{len(a.sliding_layers)} of {a.num_layers} layers use {kind} and cache at most "
                     f"{a.sliding_window:,} tokens")
    notes += a.notes
    if s.tensor_parallel > 1:
        notes.append(f"Tensor parallel over {s.tensor_parallel} GPUs: weights split, KV heads per GPU = "
                     f"max(1, {a.num_kv_heads} // {s.tensor_parallel})" + ("; the MLA latent is replicated"
                                                                           if a.is_mla else ""))
    return tuple(notes)


def estimate_inference(s: InferenceScenario) -> Breakdown:
    """One row for the scenario's own weight format."""
    if s.resolved_method == "quick":
        return quick_inference(s, checkpoint_bits(s.model) if s.weights == CHECKPOINT else
                               weight_format(s.weights).bits, s.weights)
    return detailed_inference(s, s.weights, s.weights)


def checkpoint_bits(model: object) -> Fraction:
    """Bits per weight of a checkpoint's own format for the quick method: its layout's, else 16."""
    checkpoint = getattr(model, "checkpoint", None)
    layout = getattr(checkpoint, "layout", None)
    return layout.bits if layout is not None else Fraction(16)


def has_checkpoint_row(s: InferenceScenario) -> bool:
    """Whether the table starts with the checkpoint's own format: a recognised quantization_config."""
    checkpoint = getattr(s.model, "checkpoint", None)
    return s.resolved_method == "detailed" and checkpoint is not None and checkpoint.format_id is not None


def inference_rows(s: InferenceScenario) -> tuple[tuple[str, RowFunction], ...]:
    """(label, row function) of the reference document's table rows 16-bit / 8-bit / 4-bit. A row function
    maps any variant of `s` (another length, GPU count...) to that row's Breakdown."""
    if s.resolved_method == "quick":
        return tuple((label, partial(quick_inference, bits=bits, row=label)) for label, bits in QUICK_ROWS)
    own = ((CHECKPOINT, CHECKPOINT),) if has_checkpoint_row(s) else ()  # a quantized checkpoint's format first
    return tuple((label, partial(detailed_inference, format_id=format_id, row=label))
                 for label, format_id in own + DETAILED_ROWS)


def inference_table(s: InferenceScenario) -> tuple[Breakdown, ...]:
    """The reference document's table: rows Inference (16-bit) / (8-bit) / (4-bit) (without the checkpoint's own
    row, which `inference_rows` puts first for a quantized config)."""
    return tuple(row(s) for label, row in inference_rows(s) if label != CHECKPOINT)
