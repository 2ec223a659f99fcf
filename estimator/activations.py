"""Activation memory: the inference transient peak, training's saved activations, and the loss head.

The accounting follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
Models", section 4.1), adjusted to what a Hugging Face Llama-family layer really saves, as measured tensor by
tensor with fake tensors (shared/reference/measuring/REPORT.md section 3). Notation: t = tokens in the step
(batch x sequence), h hidden, I MLP width, A = bytes of a 16-bit activation, V vocabulary.

Training, per layer (flash/sdpa attention, no dropout):
    each RMSNorm : fp32 copy of the input 4th + rsqrt 4t (+ normalized input and output 2At when trainable)
    attention    : q, k, v, output A t (2 q_width + 2 kv_width) + fp32 logsumexp 4 n_h t
    eager        : q, repeated k and v, output 4 A t q_width + fp32 softmax and its 16-bit copy (4 + A) n_h b s^2
    gated MLP    : gate, SiLU, up, product 4 A t I (3 when the down projection is frozen)
    gradient checkpointing: A t h per layer (the layer input) + one layer recomputed during backward
    LoRA (peft, fp32 adapters by default): an fp32 copy of each adapted layer's input + the rank-r output
Loss head: HF `ForCausalLMLoss` upcasts logits to fp32: 4 t V saved + 8 t V of temporaries when backward
starts = 12 t V.
Inference (no autograd): the largest layer-phase working set, e.g. for the MLP
    embedding output, layer input, residual, normed input 4 A t h + gate/SiLU, up, product 3 A t I
"""

from __future__ import annotations

import functools

from .architecture import Architecture

FP32 = 4  # bytes of an fp32 element (norm upcasts, softmax, logits for the loss and for sampling)
LOSS_HEAD_BYTES_PER_LOGIT = 12  # fp32 log-softmax kept 4 B + two fp32 temporaries at backward start 8 B


def _kv_width(a: Architecture) -> int:
    """Width of K plus V for one token in one layer, as the attention kernel sees them."""
    if a.is_mla:
        return a.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim)
    return 2 * a.num_kv_heads * a.head_dim


def _attn_out_width(a: Architecture) -> int:
    return a.num_heads * a.v_head_dim if a.is_mla else a.q_width


def _mlp_widths(a: Architecture, layer: int) -> tuple[int, int]:
    """(token-weighted MLP width, input copies): routed tokens go through k experts of width I_e each."""
    if layer in a.moe_layers:
        return a.experts_per_token * a.moe_intermediate_size + a.shared_expert_intermediate_size, a.experts_per_token
    return a.intermediate_size, 0


@functools.lru_cache(maxsize=1024)
def layer_kinds(a: Architecture) -> tuple[tuple[int, int], ...]:
    """(representative layer index, number of such layers) for each kind of layer: dense MLP and MoE."""
    moe = set(a.moe_layers)
    dense = [i for i in range(a.num_layers) if i not in moe]
    return tuple((layers[0], len(layers)) for layers in (dense, sorted(moe)) if layers)


def inference_layer_peak(a: Architecture, batch: int, query_len: int, context: int, *, act_bytes: int = 2,
                         flash_attention: bool = True, tp: int = 1) -> int:
    """Largest working set of one decoder layer processing `batch` x `query_len` tokens without autograd,
    attending to `context` tokens (the eager s^2 score matrix), on one of `tp` tensor-parallel ranks."""
    A, t, h = act_bytes, batch * query_len, a.hidden_size
    held = 3 * A * t * h  # embedding output (held by the model's forward), layer input, residual
    normed = A * t * h
    attn = normed + A * t * (2 * a.q_width + _kv_width(a) + _attn_out_width(a)) // tp
    if not flash_attention:
        attn += (FP32 + A) * max(1, a.num_heads // tp) * t * context  # fp32 scores + 16-bit probabilities
    mlp = 0
    for layer, _ in layer_kinds(a):
        width, routed_copies = _mlp_widths(a, layer)
        mlp = max(mlp, normed + A * t * (3 * width // tp + routed_copies * h))  # + tokens gathered per expert
    return held + max(attn, mlp)


def sampling_logits_bytes(a: Architecture, sequences: int) -> int:
    """fp32 logits of the last position of every running sequence (HF `logits_to_keep=1`, vLLM sampler)."""
    return FP32 * sequences * a.vocab_size


def _norm_bytes(t: int, h: int, A: int, frozen: bool) -> int:
    """Saved tensors of one RMSNorm in training: fp32 input copy and rsqrt, plus 16-bit normalized input and
    output when its weight (and the next linear) are trained."""
    return FP32 * t * h + FP32 * t + (0 if frozen else 2 * A * t * h)


def _lora_inputs_bytes(a: Architecture, t: int, A: int, targets: tuple[str, ...], rank: int,
                       adapter_bytes: int) -> int:
    """What peft's LoRA layers save per decoder layer: each adapted Linear's input (an fp32 copy per module
    when adapters are fp32; with 16-bit adapters modules that share an input share one tensor, and o_proj's
    input is the attention output already saved) plus lora_A's output (t x r)."""
    widths = lora_input_widths(a)
    total = adapter_bytes * t * rank * len(targets)
    if adapter_bytes != A:
        return total + sum(adapter_bytes * t * widths[name] for name in targets)
    shared_inputs = {LORA_INPUT_GROUP[name] for name in targets} - {"attn_out"}
    return total + sum(A * t * width for group, width in _group_widths(a).items() if group in shared_inputs)


LORA_INPUT_GROUP = {"q_proj": "attn_in", "k_proj": "attn_in", "v_proj": "attn_in", "o_proj": "attn_out",
                    "gate_proj": "mlp_in", "up_proj": "mlp_in", "down_proj": "mlp_mid"}


def _group_widths(a: Architecture) -> dict[str, int]:
    return {"attn_in": a.hidden_size, "attn_out": _attn_out_width(a), "mlp_in": a.hidden_size,
            "mlp_mid": a.intermediate_size or a.moe_intermediate_size}


def lora_input_widths(a: Architecture) -> dict[str, int]:
    """in_features of each LoRA-targetable projection."""
    groups = _group_widths(a)
    return {name: groups[group] for name, group in LORA_INPUT_GROUP.items()}


def training_layer_bytes(a: Architecture, batch: int, seq: int, layer: int = 0, *, act_bytes: int = 2,
                         flash_attention: bool = True, frozen_base: bool = False, lora_targets: tuple[str, ...] = (),
                         lora_rank: int = 0, adapter_bytes: int = FP32) -> int:
    """Activations one decoder layer saves for backward (no checkpointing)."""
    A, t, h = act_bytes, batch * seq, a.hidden_size
    norms = a.norms_per_layer * _norm_bytes(t, h, A, frozen_base)
    if flash_attention:
        attn = A * t * (2 * a.q_width + _kv_width(a)) + FP32 * a.num_heads * t
    else:
        attn = 4 * A * t * a.q_width + (FP32 + A) * a.num_heads * batch * seq * seq
        if a.num_kv_heads < a.num_heads and not a.is_mla:
            attn += A * t * _kv_width(a)  # the DynamicCache built because use_cache stays on (GQA only)
    width, routed_copies = _mlp_widths(a, layer)
    mlp_tensors = (3 if frozen_base else 4) if a.gated_mlp else (1 if frozen_base else 2)
    mlp = A * t * (mlp_tensors * width + routed_copies * h)
    if layer in a.moe_layers:
        mlp += FP32 * t * a.num_experts  # router probabilities
    lora = _lora_inputs_bytes(a, t, A, lora_targets, lora_rank, adapter_bytes) if lora_targets else 0
    return norms + attn + mlp + lora


def training_activation_bytes(a: Architecture, batch: int, seq: int, *, act_bytes: int = 2,
                              flash_attention: bool = True, gradient_checkpointing: bool = False,
                              frozen_base: bool = False, lora_targets: tuple[str, ...] = (), lora_rank: int = 0,
                              adapter_bytes: int = FP32) -> int:
    """Activations saved by one training micro-batch at the end of the forward pass (loss head excluded)."""
    A, t, h = act_bytes, batch * seq, a.hidden_size
    per_kind = [(training_layer_bytes(a, batch, seq, layer, act_bytes=A, flash_attention=flash_attention,
                                      frozen_base=frozen_base, lora_targets=lora_targets, lora_rank=lora_rank,
                                      adapter_bytes=adapter_bytes), count) for layer, count in layer_kinds(a)]
    if gradient_checkpointing:
        layers = A * t * h * a.num_layers + max(size for size, _ in per_kind)  # inputs kept + one recomputed
    else:
        layers = sum(size * count for size, count in per_kind)
    outside = A * t * h + FP32 * t * h + FP32 * t + (0 if frozen_base else A * t * h)  # embedding out, final norm
    return layers + outside


def loss_head_bytes(a: Architecture, batch: int, seq: int) -> int:
    """fp32 logits buffers at the start of backward (HF ForCausalLMLoss upcasts to fp32): 12 x t x V."""
    return LOSS_HEAD_BYTES_PER_LOGIT * batch * seq * a.vocab_size
