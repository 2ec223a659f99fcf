"""Fine-tuning estimates: the detailed breakdown at its peak phase, and the full / LoRA / QLoRA table.

Detailed, per GPU, for one step on a micro-batch of b x s tokens:
    weights          full: params x regime bytes; LoRA: frozen 16-bit base + fp32 adapters;
                     QLoRA: int8 or NF4+DQ linears + what `prepare_model_for_kbit_training` casts to fp32
    master_weights   fp32 copy (mixed precision regime)
    gradients        trainable params x regime bytes (LoRA adapters: fp32, PEFT's default)
    optimizer_states per optimizer and state dtype (training.py)
    activations      saved for backward (activations.py), logits = fp32 loss-head buffers (12 x b x s x V)
Memory peaks at one of these phases (measured with fake tensors: docs/measurements.md):
    backward start = weights + master + states + activations + logits (gradients not yet allocated)
    optimizer step = weights + master + states + gradients + the step's temporaries (activations freed)
    backward end   = weights + master + states + gradients + the tied embedding's gradient (tied models)
    recompute      = weights + master + states + gradients + one rebuilt layer (gradient checkpointing)
The breakdown shows the components at the largest phase, so it sums to the reported peak.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from .activations import (checkpointed_inputs_bytes, decoder_layers_saved_bytes, loss_bytes, recompute_bytes,
                          residual_stream_bytes, training_activation_bytes)
from .architecture import Architecture, parameter_counts, tensors
from .breakdown import Breakdown, make_breakdown
from .formats import weight_bytes
from .frameworks import preset_notes
from .objectives import OBJECTIVE_PHASE_NOTES, objective_checkpointing, objective_step
from .quick import quick_finetune
from .scenarios import AUTO, FinetuneScenario, gradient_checkpointing
from .sharding import shard_training_states
from .training import (LORA_TARGET_PRESETS, PEFT_MAMBA_TYPES, QLORA_BASE_FORMAT, REGIMES, TECHNIQUE_LABELS,
                       TECHNIQUES, lora_adapter_shapes, lora_target_text, optimizer,
                       moe_targets, optimizer_notes, optimizer_state_bytes, parse_lora_targets,
                       step_temporary_bytes)
from .units import BF16_BYTES, FP32_BYTES, bytes_from_gb


def _qlora_base_bytes(a: Architecture, format_id: str, fp32_cast: bool = True) -> int:
    """Quantized linears plus every other tensor in fp32: `prepare_model_for_kbit_training` casts the
    16-bit parameters that are not quantized (embeddings, lm_head, norms) to float32 (PEFT utils/other.py).
    Without it (`peft_kbit_cast` off: torchtune's own QLoRA) they stay in 16-bit."""
    other_params = parameter_counts(a).total - sum(t.numel for t in tensors(a) if t.is_block_linear)
    linear_bytes = weight_bytes(a, format_id).total - other_params * BF16_BYTES
    return linear_bytes + other_params * (FP32_BYTES if fp32_cast else BF16_BYTES)


@dataclass(frozen=True)
class ModelStates:
    """Training state of the whole model before sharding, and what the optimizer step works on."""

    states: dict[str, int]  # weights, master_weights, gradients, optimizer_states
    trainable_bytes: int  # bytes of the trained parameters (what a foreach step copies)
    largest_trainable_bytes: int  # bytes of the largest trained tensor (what a single-tensor step copies twice)
    notes: list[str]


def _model_states(s: FinetuneScenario, technique: str) -> ModelStates:
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
        largest = max(t.numel for t in tensors(a)) * regime.weight_bytes
        return ModelStates(states, states["weights"], largest, notes)
    targets = parse_lora_targets(s.lora_targets)
    shapes = lora_adapter_shapes(a, targets, s.lora_rank)
    adapters = sum(r * c * n for r, c, n in shapes)
    adapter_bytes = s.adapter_bits // 8
    if technique == "lora":
        base = total * (FP32_BYTES if s.regime == "fp32" else BF16_BYTES)
        base_note = f"frozen base in {'fp32' if s.regime == 'fp32' else '16-bit'}"
    else:
        base = _qlora_base_bytes(a, QLORA_BASE_FORMAT[technique], s.peft_kbit_cast)
        base_note = (f"frozen base linears in {'INT8' if technique == 'qlora-8bit' else 'NF4 + double quantization'};"
                     + (" embeddings, lm_head and norms cast to fp32 by prepare_model_for_kbit_training"
                        if s.peft_kbit_cast else " embeddings, lm_head and norms kept in 16-bit"))
    states = {"weights": base + adapters * adapter_bytes, "gradients": adapters * adapter_bytes,
              "optimizer_states": optimizer_state_bytes(opt, shapes, s.adapter_bits)}
    notes = [f"{TECHNIQUE_LABELS[technique]}: rank {s.lora_rank} on {lora_target_text(a, targets)} = {adapters:,} "
             f"trainable parameters ({adapters / total:.3%}), {s.adapter_bits}-bit adapters"
             + (" (peft's default)" if s.adapter_bits == 32 else "") + f"; {base_note}; "
             f"{opt.label} states in the adapters' dtype"]
    if a.is_moe:
        if "experts" in moe_targets(a, targets):
            notes.append("Routed experts: adapted through peft's ParamWrapper, which keeps a merged copy of every "
                         "expert for backward")
        elif a.lora_reaches_experts:
            notes.append("Routed experts are not adapted (only all-linear reaches transformers' fused 3-D experts)")
        else:
            notes.append("Routed experts and router are not adapted: peft's all-linear does not reach this "
                         "model's custom expert modules")
    if a.mamba_layers and a.model_type in PEFT_MAMBA_TYPES and set(LORA_TARGET_PRESETS["all-linear"]) <= set(targets):
        notes.append("peft refuses LoRA on the Mamba mixers' out_proj for this model type (target_modules="
                     "'all-linear' raises): counted as a target list naming every other Linear")
    largest = max((r * c * n for r, c, n in shapes), default=0) * adapter_bytes  # none: targets absent
    return ModelStates(states, adapters * adapter_bytes, largest, notes)


def _largest_layer_params(a: Architecture) -> int:
    sizes: dict[int, int] = {}
    for t in tensors(a):
        sizes[t.layer] = sizes.get(t.layer, 0) + t.numel
    return max(sizes.values())


def _tied_embedding_grad_bytes(s: FinetuneScenario, technique: str) -> int:
    """With tied embeddings, the embedding's dense gradient and its sum with the lm_head gradient are two
    extra V x h buffers at the end of backward (measured: validation, Llama 3.2 1B and Qwen2.5 1.5B)."""
    a: Architecture = s.model
    if technique != "full" or not a.tie_word_embeddings:
        return 0
    return 2 * a.vocab_size * a.hidden_size * REGIMES[s.regime].grad_bytes


def _step_temporaries(s: FinetuneScenario, model: ModelStates) -> int:
    """The optimizer step's temporaries on one GPU: none when the CPU runs the step (offload); a ZeRO rank
    updates only its shard of the states."""
    if s.offload_optimizer or s.offload_params:
        return 0
    world = s.num_gpus if s.zero_stage >= 1 else 1
    if s.optimizer_in_backward:  # each parameter steps alone, as its gradient is ready (a ZeRO rank: its shard)
        return step_temporary_bytes(s.optimizer_impl, -(-model.largest_trainable_bytes // world),
                                    model.largest_trainable_bytes)
    return step_temporary_bytes(s.optimizer_impl, -(-model.trainable_bytes // world), model.largest_trainable_bytes)


def _frozen_towers(s: FinetuneScenario) -> dict[str, int]:
    """A multimodal model's vision and audio towers, frozen in 16-bit while the language model trains (LLaMA-Factory's
    `freeze_vision_tower` default, and LoRA targeting the language model); ZeRO-3 shards them like every parameter."""
    towers = s.model.tower_parameters
    if not towers:
        return {}
    return {"vision": -(-towers * BF16_BYTES // (s.num_gpus if s.zero_stage == 3 else 1))}


def _offloaded_activations(s: FinetuneScenario, sequences: int, seq_len: int, checkpointing: bool,
                           layer_options: dict, residual_bytes: int) -> tuple[int, int]:
    """Activation offloading: (bytes moved to host memory, bytes the GPU keeps of them). Every decoder layer's saved
    tensors go to pinned CPU memory as the forward leaves the layer, and come back one layer ahead of backward
    (torchtune torchtune/training/_activation_offloading.py, OffloadActivations; Unsloth's offloaded checkpoints
    are the layer inputs): the GPU keeps the layer in flight, the largest one. The loss head is not offloaded."""
    if not s.offload_activations:
        return 0, 0
    a: Architecture = s.model
    saved = decoder_layers_saved_bytes(a, sequences, seq_len, gradient_checkpointing=checkpointing,
                                       residual_bytes=residual_bytes, **layer_options)
    in_flight = (residual_bytes * sequences * seq_len * a.hidden_size * max(1, a.altup_inputs)
                 if checkpointing else recompute_bytes(a, sequences, seq_len, **layer_options))
    return saved, min(saved, in_flight)


def detailed_finetune(s: FinetuneScenario, technique: str) -> Breakdown:
    a: Architecture = s.model
    model = _model_states(s, technique)
    gather = 2 * BF16_BYTES * _largest_layer_params(a)  # ZeRO-3: current + prefetched layer, 16-bit
    sharded, host, shard_notes = shard_training_states(model.states, s, gather)
    frozen = technique != "full"
    layer_options = dict(act_bytes=s.activation_bits // 8, flash_attention=s.flash_attention, frozen_base=frozen,
                         lora_targets=parse_lora_targets(s.lora_targets) if frozen else (), lora_rank=s.lora_rank,
                         adapter_bytes=s.adapter_bits // 8)
    checkpointing = gradient_checkpointing(s.gradient_checkpointing, technique) or objective_checkpointing(s)
    lm_head_grad = a.vocab_size * a.hidden_size * REGIMES[s.regime].grad_bytes if technique == "full" else 0
    # the objective (objectives.py): the trained forward's sequences and loss head, a reference model, generation;
    # SFT's loss head is the chosen loss computation's (standard, chunked or fused)
    shape = objective_step(s, technique, loss_bytes(a, s.batch_size, s.seq_len, s.activation_bits // 8, s.loss,
                                                    lm_head_grad))
    residual = residual_stream_bytes(s.activation_bits // 8, technique, s.peft_kbit_cast)
    activations = training_activation_bytes(a, shape.sequences, shape.seq_len, gradient_checkpointing=checkpointing,
                                            residual_bytes=residual, **layer_options)
    offloaded, in_flight = _offloaded_activations(s, shape.sequences, shape.seq_len, checkpointing, layer_options,
                                                  residual)
    activations += in_flight - offloaded
    logits = shape.loss_head
    step = _step_temporaries(s, model)
    recompute = recompute_bytes(a, shape.sequences, shape.seq_len, **layer_options) if checkpointing else 0
    gradients = sharded["gradients"]
    if s.optimizer_in_backward:  # a gradient is freed by its step: one parameter's at a time (ZeRO-2: its shard)
        world = s.num_gpus if s.zero_stage >= 2 else 1
        gradients = min(gradients, -(-model.largest_trainable_bytes // world))
    persistent = {"weights": sharded["weights"], **_frozen_towers(s), **shape.persistent,
                  "master_weights": sharded.get("master_weights", 0),
                  "optimizer_states": sharded["optimizer_states"], "overhead": bytes_from_gb(s.overhead_gb)}
    at_phase = {  # the components alive at each phase
        **{name: {**persistent, **({"activations": activations} if name in shape.with_activations else {}), **parts}
           for name, parts in shape.phases.items()},
        "backward start": {**persistent, "activations": activations, "logits": logits},
        "optimizer step": {**persistent, "gradients": gradients, "optimizer_step": step},
    }
    if s.grad_accum > 1:  # from the second micro-batch on, the gradients accumulated so far stay alive
        at_phase["backward start, accumulating"] = {**at_phase["backward start"], "gradients": gradients}
    tied_grad = _tied_embedding_grad_bytes(s, technique)
    if tied_grad:
        at_phase["backward end"] = {**persistent, "gradients": gradients + tied_grad}
    if recompute:
        at_phase["backward recompute"] = {**persistent, "gradients": gradients, "activations": recompute}
        # the first layer rebuilt (the model's last): every checkpointed input is still alive (offloaded: the one
        # brought back) and only the head's gradients exist, all of them from the second micro-batch on
        inputs = checkpointed_inputs_bytes(a, shape.sequences, shape.seq_len, act_bytes=s.activation_bits // 8,
                                           flash_attention=s.flash_attention, residual_bytes=residual)
        at_phase["backward recompute, last layer"] = {
            **persistent, "gradients": gradients if s.grad_accum > 1 else min(gradients, lm_head_grad),
            "activations": inputs - offloaded + in_flight + recompute}
    phases = tuple((name, sum(parts.values())) for name, parts in at_phase.items())
    peak_phase = max(phases, key=lambda phase: phase[1])[0]
    components = {name: 0 for name in ("activations", "logits", "gradients", "optimizer_step")}
    components.update(at_phase[peak_phase])
    if not components["master_weights"]:
        del components["master_weights"]
    if s.optimizer_impl == "fused" and not components["optimizer_step"]:
        del components["optimizer_step"]
    notes = model.notes + [*shape.notes,
        f"Activations for b x s = {s.batch_size} x {s.seq_len:,} tokens, "
        + ("FlashAttention/sdpa" if s.flash_attention else "eager attention (s x s scores)")
        + (", gradient checkpointing (layer inputs kept" + (" in fp32: prepare_model_for_kbit_training's fp32 "
                                                              "embeddings make the residual stream fp32"
                                                              if residual == FP32_BYTES != s.activation_bits // 8
                                                              else "")
           + "; one layer rebuilt at a time in backward)" if checkpointing else ", no gradient checkpointing")
        + (" (auto: on for QLoRA, as peft's prepare_model_for_kbit_training turns it on; off for full "
           "fine-tuning and LoRA)" if s.gradient_checkpointing == AUTO and not objective_checkpointing(s) else ""),
        shape.loss_note or LOSS_NOTES[s.loss].format(vocab=a.vocab_size),
        *([f"Loss computation '{s.loss}' applies to SFT: TRL's {s.objective.upper()} computes its own log-probs "
           "from the logits (the loss head above)"] if shape.loss_note and s.loss != "standard" else []),
        f"Optimizer step: {s.optimizer_impl} implementation" + (f", {step:,} B of temporaries" if step else ""),
        f"Peak at {peak_phase}: " + PHASE_NOTES[peak_phase],
        f"Runtime overhead: {s.overhead_gb:g} GB per GPU",
        *shard_notes, *optimizer_notes(optimizer(s.optimizer)), *_saver_notes(s, offloaded, in_flight),
        *preset_notes(s, technique), *a.notes,
    ]
    return make_breakdown(technique, "detailed", components, gpus=s.num_gpus, peak_phase=peak_phase,
                          phases=phases, host_bytes=host + offloaded, assumptions=tuple(notes))


LOSS_NOTES = {
    "standard": "Loss head: fp32 logits buffers 12 B x b x s x vocab ({vocab:,})",
    "chunked": "Loss head, chunked (torchtune CEWithChunkedOutputLoss, 8 chunks): each chunk's fp32 log-probabilities"
               " saved for backward, 4 B x b x s x vocab ({vocab:,}) in all, + the 16-bit logits of every chunk and the"
               " last chunk's fp32 copy at the end of the forward",
    "chunked-compiled": "Loss head, chunked and compiled (torchtune CEWithChunkedOutputLoss, compile: True): each "
                        "chunk's 16-bit logits and two fp32 row statistics saved for backward, 2 B x b x s x vocab "
                        "({vocab:,}), + one chunk's 16-bit gradient and lm_head's gradient when it trains",
    "fused": "Loss head, fused linear cross-entropy (Liger-Kernel, Unsloth, Cut Cross-Entropy): no full logits; "
             "the hidden states' gradient, one chunk of logits and lm_head's gradient when it trains",
    "shifted": "Loss head of transformers 4.46-4.47 (ForCausalLMLoss copies the shifted fp32 logits): the 16-bit "
               "logits, their fp32 upcast, the shifted copy and its log-softmax, 14 B x b x s x vocab ({vocab:,})",
}


def _saver_notes(s: FinetuneScenario, offloaded: int, in_flight: int) -> list[str]:
    notes = []
    if s.optimizer_in_backward:
        notes.append("Optimizer step in backward (torchtune optimizer_in_bwd): each parameter steps as its gradient "
                     "is ready and frees it, so one parameter's gradient exists at a time")
    if offloaded:
        notes.append(f"Activation offloading: {offloaded:,} B of the layers' saved activations in pinned CPU memory; "
                     f"the GPU keeps the layer in flight ({in_flight:,} B)")
    if s.grad_accum > 1:
        notes.append(f"Gradient accumulation over {s.grad_accum} micro-batches: effective batch "
                     f"{s.batch_size} x {s.grad_accum} x {s.num_gpus} GPU(s) = "
                     f"{s.batch_size * s.grad_accum * s.num_gpus:,} sequences per optimizer step; from the second "
                     "micro-batch on, the accumulated gradients live beside the activations")
    return notes


PHASE_NOTES = {
    "backward start": "activations and the loss head are alive; gradients appear as backward frees activations",
    "optimizer step": "activations are freed and every gradient exists",
    "backward start, accumulating": "a later micro-batch of gradient accumulation: the activations and the loss head "
                                    "are alive beside the gradients accumulated so far",
    "backward end": "every gradient exists, plus the tied embedding's gradient being summed into lm_head's",
    "backward recompute": "gradient checkpointing rebuilds a layer while the gradients are nearly complete",
    "backward recompute, last layer": "gradient checkpointing rebuilds the last layer while every layer's "
                                      "checkpointed input is still alive (offloaded: the one brought back)",
    **OBJECTIVE_PHASE_NOTES,
}


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
