"""The estimator's detailed estimate for a traced scenario, and rows of estimate vs measurement.

Estimates are built from the same config dict as the trace (`architecture_from_config`), with the
scenario mapped onto the estimator's inputs. This module needs no torch.
"""

from __future__ import annotations

from collections.abc import Mapping

import estimator as est
from estimator.activations import _layers_before_first_adapter, loss_bytes, training_layer_bytes
from estimator.finetune import detailed_finetune
from estimator.inference import detailed_inference
from estimator.training import parse_lora_targets

# HF transformers 5 caches MLA's compressed latent (kv_a output + rope key), as vLLM and SGLang do:
# models/deepseek_v3/modeling_deepseek_v3.py calls cache.update(kv_latent, k_rot) before kv_b_proj.
HF_MLA_LATENT_CACHE = True


def architecture(config: Mapping, num_layers: int | None = None) -> est.Architecture:
    cfg = dict(config)
    if num_layers is not None:
        cfg["num_hidden_layers"] = num_layers
        for key in ("layer_types", "mlp_layer_types"):
            if isinstance(cfg.get(key), list):
                cfg[key] = cfg[key][:num_layers]
    return est.architecture_from_config(cfg)


def estimate_inference(config: Mapping, batch: int = 1, concurrency: int = 1, prefill_len: int = 512,
                       decode_steps: int = 16, attn_impl: str = "sdpa", num_layers: int | None = None) -> dict:
    """The estimator's 16-bit detailed inference row for sequences of prefill_len + decode_steps tokens, whose
    prefill forward covers the prompt only (prefill_chunk = prefill_len), as in the trace."""
    scenario = est.InferenceScenario(architecture(config, num_layers), batch_size=batch, concurrency=concurrency,
                                     seq_len=prefill_len + decode_steps, prefill_chunk=prefill_len, overhead_gb=0,
                                     flash_attention=attn_impl != "eager", mla_latent_cache=HF_MLA_LATENT_CACHE)
    b = detailed_inference(scenario, "bf16", "bf16")
    return {**dict(b.components), "peak": b.total}


def estimate_training(config: Mapping, batch: int = 1, seq: int = 512, technique: str = "full", lora_rank: int = 16,
                      lora_targets: str = "q,v", gradient_checkpointing: bool = False, attn_impl: str = "sdpa",
                      num_layers: int | None = None, loss: str = "standard",
                      optimizer_in_backward: bool = False) -> dict:
    """The estimator's detailed fine-tuning breakdown (AdamW, 16-bit states as torch AdamW keeps them on bf16
    weights, peft's fp32 adapters) with every component whatever the peak phase."""
    a = architecture(config, num_layers)
    s = est.FinetuneScenario(a, technique=technique, optimizer="adamw", optimizer_state_bits=16, batch_size=batch,
                             seq_len=seq, lora_rank=lora_rank, lora_targets=lora_targets,
                             gradient_checkpointing=gradient_checkpointing, flash_attention=attn_impl != "eager",
                             overhead_gb=0, loss=loss, optimizer_in_backward=optimizer_in_backward)
    b = detailed_finetune(s, technique)
    phases = dict(b.phases)
    persistent = b.component("weights") + b.component("master_weights") + b.component("optimizer_states")
    logits = loss_bytes(a, batch, seq, 2, loss)
    targets = parse_lora_targets(lora_targets) if technique != "full" else ()
    last = max(0, a.num_layers - 2)  # the row compares layer L-2 (layer 0 and the last layer differ in LoRA and GC)
    per_layer = training_layer_bytes(a, batch, seq, last, flash_attention=attn_impl != "eager",
                                     frozen_base=technique != "full", lora_targets=targets, lora_rank=lora_rank)
    if last < _layers_before_first_adapter(a, technique != "full", targets):
        per_layer = 0  # a hybrid's leading linear-attention layers without adapters save nothing
    return {
        "weights": b.component("weights"),
        "gradients": phases["optimizer step"] - persistent,
        "optimizer_states": b.component("optimizer_states"),
        "activations": phases["backward start"] - persistent - logits,
        "logits": logits,
        "activations_per_layer": per_layer if not gradient_checkpointing
        else a.hidden_size * batch * seq * 2 * max(1, a.altup_inputs),  # Gemma 3n passes its n AltUp copies
        "phase: backward": max(total for name, total in phases.items() if name != "optimizer step"),
        "phase: optimizer step": phases["optimizer step"],
        "peak": b.total,
        "peak_phase": b.peak_phase,
    }


# (component name in the rows, key in the measurement)
INFERENCE_COMPONENTS = (("weights", "weights"), ("kv_cache", "kv_cache"), ("activations", "activations"),
                        ("logits", "logits"), ("peak", "peak"))
TRAINING_COMPONENTS = (("weights", "weights"), ("gradients", "gradients"), ("optimizer_states", "optimizer_states"),
                       ("activations", "activations"), ("activations_per_layer", "activations_per_layer"),
                       ("logits", "logits"), ("phase: backward", "phase: backward"),
                       ("phase: optimizer step", "phase: optimizer step"), ("peak", "peak"))


def measured_training(m: Mapping) -> dict:
    """Flatten a trace_training result onto the row components. The chunked loss peaks at the end of the forward
    (the last chunk's cross-entropy), the moment the estimate's backward-start phase stands for: its logits and
    backward rows take the larger of the two. With the optimizer stepping in backward, gradients are the most that
    coexisted (none is left after backward)."""
    per_layer = m.get("per_layer_activations") or [0]
    out = {**m, "activations_per_layer": per_layer[max(0, len(per_layer) - 2)],
           "phase: backward": m["phases"]["backward"], "phase: optimizer step": m["phases"]["optimizer step"]}
    if m.get("loss") == "chunked":
        out["logits"] = max(m["logits"], m["logits_forward_peak"])
        out["phase: backward"] = max(m["phases"]["backward"], m["phases"]["forward"])
    if m.get("optimizer_in_backward"):
        out["gradients"] = m["gradients_max_live"]
    return out


def error_pct(estimate: int, measured: int) -> float:
    """(estimate - measured) / measured in percent; 0 when both are 0."""
    if measured == 0:
        return 0.0 if estimate == 0 else float("inf")
    return 100.0 * (estimate - measured) / measured


def rows(case: str, family: str, scenario: str, kind: str, estimate: Mapping, measured: Mapping) -> list[dict]:
    """One row per component: case, family, scenario, component, estimate_bytes, measured_bytes, error_pct."""
    if kind == "training":
        measured, components = measured_training(measured), TRAINING_COMPONENTS
    else:
        components = INFERENCE_COMPONENTS
    out = []
    for name, key in components:
        e, m = int(estimate.get(name, 0)), int(measured.get(key, 0))
        out.append({"case": case, "family": family, "scenario": scenario, "component": name,
                    "estimate_bytes": e, "measured_bytes": m, "error_pct": round(error_pct(e, m), 3)})
    return out

