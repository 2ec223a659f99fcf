"""Fine-tuning: the GPU memory of one training step.

The reference document's form (model type, total parameters, parameter precision, optimizer, batch size,
sequence length) and its table of full-parameter, LoRA and QLoRA (8- and 4-bit) rows. A catalog model or a
config.json switches to the detailed method; "Advanced" holds the training regime, LoRA, checkpointing and
multi-GPU settings.
"""

import streamlit as st

from estimator.training import OPTIMIZERS, QUICK_OPTIMIZERS, REGIMES
from ui import chrome, form, results, state

PAGE = "finetune"
BITS_LABELS = {32: "32-bit (FP32)", 16: "16-bit (BF16 / FP16)", 8: "8-bit", 4: "4-bit"}
OPTIMIZER_LABELS = {k: o.label + ("" if k in QUICK_OPTIMIZERS else " (detailed)") for k, o in OPTIMIZERS.items()}
IMPL_LABELS = {"fused": "fused", "foreach": "foreach (CUDA default)", "single-tensor": "single-tensor"}
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
        form.choice(PAGE, "bits", BITS_LABELS, disabled=not quick,
                    help="Precision of the trained weights (quick method; the detailed method uses the "
                         "training regime).")
        form.number(PAGE, "batch", step=1, help="Sequences per micro-batch on each GPU.")
    with right:
        form.choice(PAGE, "opt", OPTIMIZER_LABELS, help="States per parameter: SGD 0, momentum and RMSProp 1, "
                                                        "Adam/AdamW 2.")
        form.number(PAGE, "seq", step=512, help="Tokens per training sequence.")
    with st.expander("Advanced", icon=":material/tune:"):
        form.choice(PAGE, "regime", {k: r.label for k, r in REGIMES.items()}, disabled=quick,
                    help="Detailed method: bytes of weights, gradients and master weights per parameter.")
        form.choice(PAGE, "osb", {32: "32-bit (fp32)", 16: "16-bit (torch AdamW on bf16 weights)"}, radio=True,
                    disabled=quick)
        form.choice(PAGE, "impl", IMPL_LABELS, disabled=quick,
                    help="torch's optimizer step: fused adds nothing, foreach (the CUDA default) a copy of every "
                         "trained parameter, single-tensor two copies of the largest tensor.")
        form.choice(PAGE, "abits", {32: "fp32 (peft's default)", 16: "16-bit"}, radio=True, disabled=quick,
                    help="LoRA adapter weights. fp32 adapters also save an fp32 copy of each adapted layer's input.")
        left, right = st.columns(2)
        with left:
            form.number(PAGE, "rank", step=8, help="r of each LoRA adapter (detailed method).")
        with right:
            form.number(PAGE, "gpus", step=1, help="Data-parallel GPUs; ZeRO / FSDP shard the states over them.")
        form.lora_targets(PAGE)
        form.choice(PAGE, "zero", ZERO_LABELS, help="What each GPU keeps a shard of (ZeRO paper, Figure 1).")
        form.flag(PAGE, "offload", help="ZeRO-Offload: optimizer states (and sharded gradients) in CPU memory.")
        form.flag(PAGE, "gc", help="Keep only each layer's input and recompute the rest during backward.")
        form.flag(PAGE, "fa", help="Off: eager attention saves the s x s attention probabilities.")
        form.number(PAGE, "oh", step=0.5, fmt="%.1f", help="CUDA context, allocator caching, workspaces.")
        form.choice(PAGE, "act", {16: "16-bit", 32: "32-bit"}, radio=True)
with outputs:
    results.render(PAGE)
chrome.footer(PAGE, slot)
