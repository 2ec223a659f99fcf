"""Inference: the GPU memory to serve a model.

The reference document's form (model type, total and active parameters, concurrency, sequence length) and
its table of 16-, 8- and 4-bit rows. A catalog model or a config.json switches to the detailed method;
"Advanced" holds the serving settings. A serving engine (vLLM, SGLang, llama.cpp, ...) replaces them with the
engine's own options and start-up report (`ui.engine`).
"""

import streamlit as st

from estimator.formats import CHECKPOINT, WEIGHT_FORMATS
from estimator.kv_cache import KV_DTYPE_LABELS
from ui import advice, chrome, engine, form, results, state

PAGE = "inference"
WEIGHT_LABELS = {None: "None (the three rows only)", **{k: f.label for k, f in WEIGHT_FORMATS.items()},
                 CHECKPOINT: "As the checkpoint stores it (its quantization_config)"}

slot = chrome.header(PAGE, "Inference memory",
                     "GPU memory to serve a model: weights, KV cache, activations and runtime overhead, per GPU.")
inputs, outputs = st.columns([1, 1.9], gap="large")
with inputs:
    form.model_source(PAGE)
    serving = engine.choice(PAGE)  # None: the estimate table, as without engines
    if serving is not None:
        engine.inputs(PAGE)
    else:
        form.number_pair(PAGE, ("concurrency", 1), ("seq_len", 1024))
        with st.expander("Advanced", icon=":material/tune:"):
            form.number(PAGE, "batch_size", step=1)
            form.choice(PAGE, "weights", WEIGHT_LABELS)
            form.choice(PAGE, "kv_dtype", KV_DTYPE_LABELS)
            form.number(PAGE, "tensor_parallel", step=1)
            form.number(PAGE, "prefill_chunk", step=2048)
            form.number(PAGE, "overhead_gb", step=0.5, fmt="%.1f")
            form.choice(PAGE, "activation_bits", {16: "16-bit", 32: "32-bit"}, radio=True)
            form.flag(PAGE, "flash_attention")
            if state.page_state(PAGE)["src"] != "params":
                form.flag(PAGE, "mla_latent_cache")
        if form.applies(PAGE, "images"):  # a multimodal model: its images' tokens join each sequence
            form.number(PAGE, "images", step=1)
            form.number_pair(PAGE, ("image_width", 64), ("image_height", 64))
            form.image_tokens_caption(PAGE)
with outputs:
    if serving is None:
        advice.render(PAGE)  # what would make the selected row fit the target GPU, when it does not
        results.render(PAGE)
    else:
        engine.render(PAGE)
chrome.footer(PAGE, slot)
