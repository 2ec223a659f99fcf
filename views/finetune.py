"""Fine-tuning: the GPU memory of one training step.

The reference document's form (model type, total parameters, parameter precision, optimizer, batch size,
sequence length) and its table of full-parameter, LoRA and QLoRA (8- and 4-bit) rows. A catalog model or a
config.json switches to the detailed method; "Memory savers" holds the framework preset and the savers it sets
(loss computation, optimizer step in backward, activation and parameter offload, gradient accumulation);
"Advanced" holds the training regime, LoRA, checkpointing and multi-GPU settings.
"""

import streamlit as st

from estimator.frameworks import FRAMEWORK_PRESETS
from estimator.objectives import OBJECTIVE_LABELS
from estimator.scenarios import AUTO
from estimator.training import OPTIMIZERS, QUICK_OPTIMIZERS, REGIMES
from ui import advice, chrome, form, results, state

PAGE = "finetune"
BITS_LABELS = {32: "32-bit (FP32)", 16: "16-bit (BF16 / FP16)", 8: "8-bit", 4: "4-bit"}
OPTIMIZER_LABELS = {k: o.label + ("" if k in QUICK_OPTIMIZERS else " (detailed)") for k, o in OPTIMIZERS.items()}
IMPL_LABELS = {"fused": "fused", "foreach": "foreach (CUDA default)", "single-tensor": "single-tensor"}
CHECKPOINTING_LABELS = {AUTO: "Auto (on for QLoRA, DPO, GRPO...)", True: "On", False: "Off"}
OBJECTIVE_CHOICES = {**OBJECTIVE_LABELS, "dpo": "DPO (reference model)", "orpo": "ORPO (pairs, no reference)",
                     "kto": "KTO (reference model)", "grpo": "GRPO (generation + training)"}
FRAMEWORK_LABELS = {k: f.label for k, f in FRAMEWORK_PRESETS.items()}
LOSS_LABELS = {"standard": "Standard (full fp32 logits)", "chunked": "Chunked (torchtune, TRL)",
               "chunked-compiled": "Chunked, compiled (torchtune compile: True)",
               "fused": "Fused linear cross-entropy (Liger, Unsloth, CCE)",
               "shifted": "Standard, transformers 4.46-4.47 (shifted fp32 copy)"}
ZERO_LABELS = {0: "0: none (DDP, FSDP NO_SHARD)", 1: "1: optimizer states", 2: "2: + gradients (FSDP SHARD_GRAD_OP)",
               3: "3: + weights (FSDP FULL_SHARD)"}

slot = chrome.header(PAGE, "Fine-tuning memory", "GPU memory of one training step: weights, gradients, "
                                                 "optimizer states, activations and overhead, per GPU.")
inputs, outputs = st.columns([1, 1.9], gap="large")
with inputs:
    form.model_source(PAGE)
    values = state.page_state(PAGE)
    quick = values["src"] == "params" or values["method"] == "quick"
    left, right = st.columns(2)
    with left:
        form.choice(PAGE, "param_bits", BITS_LABELS, disabled=not quick)
        form.number(PAGE, "batch_size", step=1)
    with right:
        form.choice(PAGE, "optimizer", OPTIMIZER_LABELS)
        form.number(PAGE, "seq_len", step=512)
    objective = form.choice(PAGE, "objective", OBJECTIVE_CHOICES, disabled=quick)
    if form.objective_shows(objective, "precompute_ref_log_probs"):
        form.flag(PAGE, "precompute_ref_log_probs")
    if form.objective_shows(objective, "num_generations"):  # GRPO
        left, right = st.columns(2)
        with left:
            form.number(PAGE, "max_completion_length", step=256)
            form.number(PAGE, "beta", step=0.01, fmt="%.3f")
        with right:
            form.number(PAGE, "num_generations", step=1)
            form.number(PAGE, "vllm_gpu_memory_utilization", step=0.05, fmt="%.2f")
        form.number(PAGE, "vllm_gpu_gb", step=8.0, fmt="%.0f")
    savers_on = values["framework"] != "hf" or values["loss"] != "standard" or values["grad_accum"] > 1 or any(
        values[name] for name in ("optimizer_in_backward", "offload_activations", "offload_params"))
    with st.expander("Memory savers", icon=":material/memory:", expanded=savers_on):
        form.choice(PAGE, "framework", FRAMEWORK_LABELS, on_change=form.framework_changed)
        st.caption("A framework sets the inputs it really uses (listed under Assumptions, with their sources); "
                   "change any of them below or under Advanced.")
        form.choice(PAGE, "loss", LOSS_LABELS, disabled=quick)
        form.flag(PAGE, "optimizer_in_backward")
        form.flag(PAGE, "offload_activations")
        form.flag(PAGE, "offload_params")
        form.flag(PAGE, "peft_kbit_cast")
        form.number(PAGE, "grad_accum", step=1)
        sizes = [values[name] for name in ("batch_size", "grad_accum", "num_gpus")]
        effective = ""
        if all(isinstance(n, int) and n >= 1 for n in sizes) and sizes[1] * sizes[2] > 1:
            effective = (f"Effective batch: {sizes[0]} x {sizes[1]} x {sizes[2]} GPU(s) = "
                         f"{sizes[0] * sizes[1] * sizes[2]:,} sequences per optimizer step. ")
        st.caption(effective + "torch.compile and sequence packing are not modelled (Methodology).")
    with st.expander("Advanced", icon=":material/tune:"):
        form.choice(PAGE, "regime", {k: r.label for k, r in REGIMES.items()}, disabled=quick)
        form.choice(PAGE, "optimizer_state_bits", {32: "32-bit (fp32)", 16: "16-bit (torch AdamW on bf16 weights)"},
                    radio=True, disabled=quick)
        form.choice(PAGE, "optimizer_impl", IMPL_LABELS, disabled=quick)
        form.choice(PAGE, "adapter_bits", {32: "fp32 (peft's default)", 16: "16-bit"}, radio=True, disabled=quick)
        form.number_pair(PAGE, ("lora_rank", 8), ("num_gpus", 1))
        form.lora_targets(PAGE)
        form.choice(PAGE, "zero_stage", ZERO_LABELS)
        form.flag(PAGE, "offload_optimizer")
        form.choice(PAGE, "gradient_checkpointing", CHECKPOINTING_LABELS, radio=True)
        form.flag(PAGE, "flash_attention")
        form.number(PAGE, "overhead_gb", step=0.5, fmt="%.1f")
        form.choice(PAGE, "activation_bits", {16: "16-bit", 32: "32-bit"}, radio=True)
        form.number(PAGE, "dataset_tokens", step=1_000_000)  # speed only: the time per epoch
with outputs:
    advice.render(PAGE)  # what would make the selected row fit the target GPU, when it does not
    results.render(PAGE)
chrome.footer(PAGE, slot)
