"""The reference document's rule-of-thumb method (Alibaba Cloud PAI, "GPU memory estimation for LLMs").

    weights      = total params x bytes of the precision (16-bit 2 B, 8-bit 1 B, 4-bit 0.5 B)
    reference    = 10% of the 16-bit weights of the *active* params (measured for a 7B model, b=1, s=2048)
    activations  = reference x (b x s / 2048) x (activation bits / 16)
    KV cache     = reference x (b x s x C / 2048) x (KV bytes / 2)
    overhead     = 2 GB (the document's 1-2 GB, editable)
    fine-tuning  : gradients = trainable x 2 B; optimizer states = trainable x states x 4 B;
                   trainable = all params (full) or 1% (LoRA, QLoRA); QLoRA weights at 8 or 4 bits.
Its worked example (7B, b=1, s=2048, C=1, Adam) gives 18.8 / 11.8 / 8.3 GB for inference at 16/8/4-bit and
87.4 / 18.1 / 11.1 / 7.6 GB for full / LoRA / QLoRA-8 / QLoRA-4; the tests pin these.
Multi-GPU (an extension): tensor parallelism divides weights, KV cache and activations; ZeRO shards states.
"""

from __future__ import annotations

from fractions import Fraction

from .architecture import Architecture, parameter_counts
from .breakdown import Breakdown, make_breakdown
from .kv_cache import kv_dtype_bytes
from .scenarios import FinetuneScenario, InferenceScenario, Model, with_image_tokens
from .sharding import shard_training_states
from .training import (QUICK_LORA_TRAINABLE_FRACTION, optimizer, optimizer_notes,
                       quick_optimizer_bytes_per_param)
from .units import bytes_from_gb

REFERENCE_SHARE = Fraction(1, 10)  # activations (and KV) = 10% of the 16-bit weights at b=1, s=2048
REFERENCE_TOKENS = 2048
QLORA_BITS = {"qlora-8bit": 8, "qlora-4bit": 4}


def param_counts(model: Model) -> tuple[int, int]:
    """(total, active) parameters of a ParamCount or an Architecture."""
    if isinstance(model, Architecture):
        counts = parameter_counts(model)
        return counts.total, counts.active
    return model.total_params, model.active_params


def _reference_bytes(active: int, tokens: int) -> Fraction:
    """10% of the active params' 16-bit weights, scaled linearly from 2048 tokens to `tokens`."""
    return active * 2 * REFERENCE_SHARE * Fraction(tokens, REFERENCE_TOKENS)


def _ceil(value: Fraction) -> int:
    return -(-value // 1)


def quick_inference(s: InferenceScenario, bits: Fraction, row: str) -> Breakdown:
    """One inference row at `bits` per weight."""
    s, images = with_image_tokens(s)
    total, active = param_counts(s.model)
    tp = s.tensor_parallel
    act = _reference_bytes(active, s.batch_size * s.seq_len) * Fraction(s.activation_bits, 16)
    kv = _reference_bytes(active, s.batch_size * s.seq_len * s.concurrency) * kv_dtype_bytes(s.kv_dtype) / 2
    components = {"weights": _ceil(total * bits / 8 / tp), "kv_cache": _ceil(kv / tp), "activations": _ceil(act / tp),
                  "overhead": bytes_from_gb(s.overhead_gb)}
    assumptions = (
        f"Weights: {total:,} parameters x {float(bits) / 8:g} B",
        f"Activations and KV cache: 10% of the 16-bit weights of {active:,} active parameters per "
        f"{REFERENCE_TOKENS} tokens (reference document), scaled to b x s = {s.batch_size * s.seq_len:,} tokens"
        f" and x {s.concurrency} concurrent requests for the KV cache",
        f"Runtime overhead: {s.overhead_gb:g} GB per GPU",
    ) + ((f"Tensor parallel over {tp} GPUs: weights, KV cache and activations divided by {tp}",) if tp > 1 else ()) \
        + ((images,) if images else ())
    return make_breakdown(row, "quick", components, gpus=tp, assumptions=assumptions)


def quick_finetune(s: FinetuneScenario, technique: str) -> Breakdown:
    """One fine-tuning row for `technique` (full, lora, qlora-8bit, qlora-4bit)."""
    total, active = param_counts(s.model)
    opt = optimizer(s.optimizer)
    bits = QLORA_BITS.get(technique, s.param_bits)
    trainable = Fraction(total) if technique == "full" else total * QUICK_LORA_TRAINABLE_FRACTION
    grad_bytes = 2 if technique.startswith("qlora") else max(s.param_bits, 16) // 8  # gradients never below 16-bit
    act = _reference_bytes(active, s.batch_size * s.seq_len) * Fraction(s.activation_bits, 16)
    states = {"weights": _ceil(total * Fraction(bits, 8)), "gradients": _ceil(trainable * grad_bytes),
              "optimizer_states": _ceil(trainable * quick_optimizer_bytes_per_param(opt))}
    sharded, host, notes = shard_training_states(states, s)
    components = {**sharded, "activations": _ceil(act), "overhead": bytes_from_gb(s.overhead_gb)}
    assumptions = (
        f"Weights: {total:,} parameters at {bits} bits",
        f"Trainable: {'all parameters' if technique == 'full' else '1% of the parameters (reference document)'}; "
        f"gradients {grad_bytes} B and {opt.label} states {float(quick_optimizer_bytes_per_param(opt)):g} B "
        "per trainable parameter",
        f"Activations: 10% of the 16-bit weights of {active:,} active parameters per {REFERENCE_TOKENS} tokens, "
        f"scaled to b x s = {s.batch_size * s.seq_len:,} tokens",
        f"Runtime overhead: {s.overhead_gb:g} GB per GPU",
        *notes, *optimizer_notes(opt),
        *((f"Objective {s.objective}: not modelled by the quick method (one SFT step); the detailed method adds its "
           "reference model, paired forward or generation",) if s.objective != "sft" else ()),
    )
    return make_breakdown(technique, "quick", components, gpus=s.num_gpus, host_bytes=host, assumptions=assumptions)
