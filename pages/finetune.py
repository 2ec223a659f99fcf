"""Fine-tuning: the GPU memory of one training step.

The reference document's form (model type, total parameters, parameter precision, optimizer, batch size,
sequence length) and its table of full-parameter, LoRA and QLoRA (8- and 4-bit) rows. A catalog model or a
config.json switches to the detailed method; "Advanced" holds the training regime, LoRA, checkpointing and
multi-GPU settings.
"""

import streamlit as st

from estimator.scenarios import AUTO
from estimator.training import OPTIMIZERS, QUICK_OPTIMIZERS, REGIMES
from ui import advice, chrome, form, results, state

PAGE = "finetune"
BITS_LABELS = {32: "32-bit (FP32)", 16: "16-bit (BF16 / FP16)", 8: "8-bit", 4: "4-bit"}
OPTIMIZER_LABELS = {k: o.label + ("" if k in QUICK_OPTIMIZERS else " (detailed)") for k, o in OPTIMIZERS.items()}
IMPL_LABELS = {"fused": "fused", "foreach": "foreach (CUDA default)", "single-tensor": "single-tensor"}
CHECKPOINTING_LABELS = {AUTO: "Auto (on for QLoRA)", True: "On", False: "Off"}
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
    with st.expander("Advanced", icon=":material/tune:"):
        form.choice(PAGE, "regime", {k: r.label for k, r in REGIMES.items()}, disabled=quick)
        form.choice(PAGE, "optimizer_state_bits", {32: "32-bit (fp32)", 16: "16-bit (torch AdamW on bf16 weights)"},
                    radio=True, disabled=quick)
        form.choice(PAGE, "optimizer_impl", IMPL_LABELS, disabled=quick)
        form.choice(PAGE, "adapter_bits", {32: "fp32 (peft's default)", 16: "16-bit"}, radio=True, disabled=quick)
        left, right = st.columns(2)
        with left:
            form.number(PAGE, "lora_rank", step=8)
        with right:
            form.number(PAGE, "num_gpus", step=1)
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
