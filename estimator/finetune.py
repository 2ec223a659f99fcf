"""Fine-tuning estimates: the detailed breakdown at its peak phase, and the full / LoRA / QLoRA table.

Detailed, per GPU, for one step on a micro-batch of b x s tokens:
    weights          full: params x regime bytes; LoRA: frozen 16-bit base + fp32 adapters;
                     QLoRA: int8 or NF4+DQ linears + what `prepare_model_for_kbit_training` casts to fp32
    master_weights   fp32 copy (mixed precision regime)
    gradients        trainable params x regime bytes (LoRA adapters: fp32, PEFT's default)
    optimizer_states per optimizer and state dtype (training.py)
    activations      saved for backward (activations.py), logits = fp32 loss-head buffers (12 x b x s x V)
Memory peaks at one of two phases (shared/reference/measuring/REPORT.md, sections 3-3b):
    backward start = weights + master + states + activations + logits (gradients not yet allocated)
    optimizer step = weights + master + states + gradients (activations freed)
The breakdown shows the components at the larger phase, so it sums to the reported peak.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from .activations import FP32, loss_head_bytes, training_activation_bytes
from .architecture import Architecture, parameter_counts, tensors
from .breakdown import Breakdown, make_breakdown
from .formats import BF16_BYTES, weight_bytes
from .quick import quick_finetune
from .scenarios import FinetuneScenario
from .sharding import shard_training_states
from .training import (QLORA_BASE_FORMAT, REGIMES, TECHNIQUE_LABELS, TECHNIQUES, lora_adapter_shapes, optimizer,
                       optimizer_notes, optimizer_state_bytes, parse_lora_targets)
from .units import bytes_from_gb

ADAPTER_BYTES = FP32  # PEFT autocast_adapter_dtype=True keeps LoRA weights in fp32 on a 16-bit base


def _qlora_base_bytes(a: Architecture, format_id: str) -> int:
    """Quantized linears plus every other tensor in fp32: `prepare_model_for_kbit_training` casts the
    16-bit parameters that are not quantized (embeddings, lm_head, norms) to float32 (PEFT utils/other.py)."""
    other_params = parameter_counts(a).total - sum(t.numel for t in tensors(a) if t.is_block_linear)
    linear_bytes = weight_bytes(a, format_id).total - other_params * BF16_BYTES
    return linear_bytes + other_params * FP32


def _model_states(s: FinetuneScenario, technique: str) -> tuple[dict[str, int], list[str]]:
    """Weights, master weights, gradients and optimizer states of the whole model (before sharding)."""
    a: Architecture = s.model
    opt = optimizer(s.optimizer)
    regime = REGIMES[s.regime]
    total = parameter_counts(a).total
    if technique == "full":
        shapes = [(t.rows, t.cols, t.copies) for t in tensors(a)]
        states = {"weights": total * regime.weight_bytes, "master_weights": total * regime.master_bytes,
                  "gradients": total * regime.grad_bytes,
                  "optimizer_states": optimizer_state_bytes(opt, shapes, s.optimizer_state_bits)}
        notes = [f"Full fine-tuning of {total:,} parameters, {regime.label}: {regime.weight_bytes} B weights, "
                 f"{regime.grad_bytes} B gradients" + (f", {regime.master_bytes} B fp32 master copy"
                                                        if regime.master_bytes else "")
                 + f"; {opt.label} states in {s.optimizer_state_bits}-bit"]
        return states, notes
    targets = parse_lora_targets(s.lora_targets)
    shapes = lora_adapter_shapes(a, targets, s.lora_rank)
    adapters = sum(r * c * n for r, c, n in shapes)
    if technique == "lora":
        base = total * (FP32 if s.regime == "fp32" else BF16_BYTES)
        base_note = f"frozen base in {'fp32' if s.regime == 'fp32' else '16-bit'}"
    else:
        base = _qlora_base_bytes(a, QLORA_BASE_FORMAT[technique])
        base_note = (f"frozen base linears in {'INT8' if technique == 'qlora-8bit' else 'NF4 + double quantization'};"
                     " embeddings, lm_head and norms cast to fp32 by prepare_model_for_kbit_training")
    states = {"weights": base + adapters * ADAPTER_BYTES, "gradients": adapters * ADAPTER_BYTES,
              "optimizer_states": optimizer_state_bytes(opt, shapes, 32)}
    notes = [f"{TECHNIQUE_LABELS[technique]}: rank {s.lora_rank} on {', '.join(targets)} = {adapters:,} trainable "
             f"parameters ({adapters / total:.3%}), fp32 adapters (PEFT default); {base_note}; "
             f"{opt.label} states in fp32"]
    if a.is_moe:
        notes.append("Routed experts are not adapted (transformers stores them as fused 3-D parameters)")
    return states, notes


def _largest_layer_params(a: Architecture) -> int:
    sizes: dict[int, int] = {}
    for t in tensors(a):
        sizes[t.layer] = sizes.get(t.layer, 0) + t.numel
    return max(sizes.values())


def detailed_finetune(s: FinetuneScenario, technique: str) -> Breakdown:
    a: Architecture = s.model
    states, notes = _model_states(s, technique)
    gather = 2 * BF16_BYTES * _largest_layer_params(a)  # ZeRO-3: current + prefetched layer, 16-bit
    sharded, host, shard_notes = shard_training_states(states, s, gather)
    frozen = technique != "full"
    targets = parse_lora_targets(s.lora_targets) if frozen else ()
    activations = training_activation_bytes(a, s.batch_size, s.seq_len, act_bytes=s.activation_bits // 8,
                                            flash_attention=s.flash_attention,
                                            gradient_checkpointing=s.gradient_checkpointing, frozen_base=frozen,
                                            lora_targets=targets, lora_rank=s.lora_rank, adapter_bytes=ADAPTER_BYTES)
    logits = loss_head_bytes(a, s.batch_size, s.seq_len)
    overhead = bytes_from_gb(s.overhead_gb)
    persistent = sharded["weights"] + sharded.get("master_weights", 0) + sharded["optimizer_states"] + overhead
    phases = (("backward start", persistent + activations + logits),
              ("optimizer step", persistent + sharded["gradients"]))
    peak_phase = max(phases, key=lambda phase: phase[1])[0]
    at_backward = peak_phase == "backward start"
    components = {**sharded, "activations": activations if at_backward else 0, "logits": logits if at_backward else 0,
                  "gradients": 0 if at_backward else sharded["gradients"], "overhead": overhead}
    if not sharded.get("master_weights"):
        components.pop("master_weights", None)
    notes += [
        f"Activations for b x s = {s.batch_size} x {s.seq_len:,} tokens, "
        + ("FlashAttention/sdpa" if s.flash_attention else "eager attention (s x s scores)")
        + (", gradient checkpointing (layer inputs kept, one layer recomputed)" if s.gradient_checkpointing else ""),
        f"Loss head: fp32 logits buffers 12 B x b x s x vocab ({a.vocab_size:,})",
        f"Peak at {peak_phase}: " + ("gradients are allocated as backward frees activations"
                                     if at_backward else "activations are freed, gradients complete"),
        f"Runtime overhead: {s.overhead_gb:g} GB per GPU",
        *shard_notes, *optimizer_notes(optimizer(s.optimizer)),
    ]
    return make_breakdown(technique, "detailed", components, gpus=s.num_gpus, peak_phase=peak_phase,
                          phases=phases, host_bytes=host, assumptions=tuple(notes))


def estimate_finetune(s: FinetuneScenario) -> Breakdown:
    """One row for the scenario's own technique."""
    if s.resolved_method == "quick":
        return quick_finetune(s, s.technique)
    return detailed_finetune(s, s.technique)


def finetune_rows(s: FinetuneScenario) -> tuple[tuple[str, Callable[[FinetuneScenario], Breakdown]], ...]:
    """(label, row function) of the table rows full / lora / qlora-8bit / qlora-4bit."""
    method = quick_finetune if s.resolved_method == "quick" else detailed_finetune
    return tuple((technique, partial(method, technique=technique)) for technique in TECHNIQUES)


def finetune_table(s: FinetuneScenario) -> tuple[Breakdown, ...]:
    """The reference document's table: rows Full-parameter / LoRA / QLoRA (8-bit) / QLoRA (4-bit)."""
    return tuple(row(s) for _, row in finetune_rows(s))
