"""Inference: the GPU memory to serve a model.

The reference document's form (model type, total and active parameters, concurrency, sequence length) and
its table of 16-, 8- and 4-bit rows. A catalog model or a config.json switches to the detailed method;
"Advanced" holds the serving settings.
"""

import streamlit as st

from estimator.formats import WEIGHT_FORMATS
from estimator.kv_cache import KV_DTYPE_LABELS
from ui import chrome, form, results, state

PAGE = "inference"
WEIGHT_LABELS = {"": "None (the three rows only)", **{k: f.label for k, f in WEIGHT_FORMATS.items()}}

slot = chrome.header(PAGE, "Inference memory",
                     "GPU memory to serve a model: weights, KV cache, activations and runtime overhead, per GPU.")
inputs, outputs = st.columns([1, 1.9], gap="large")
with inputs:
    form.model_source(PAGE)
    left, right = st.columns(2)
    with left:
        form.number(PAGE, "conc", step=1, help="Requests served at the same time; each keeps its own KV cache.")
    with right:
        form.number(PAGE, "seq", step=1024, help="Tokens per sequence: prompt plus generated tokens.")
    with st.expander("Advanced", icon=":material/tune:"):
        form.number(PAGE, "batch", step=1, help="Sequences per request (e.g. n > 1 samples).")
        form.choice(PAGE, "w", WEIGHT_LABELS, help="Adds a row for this storage format (GGUF, GPTQ, AWQ, "
                                                   "bitsandbytes, FP8...).")
        form.choice(PAGE, "kv", KV_DTYPE_LABELS)
        form.number(PAGE, "tp", step=1, help="GPUs the model is split over; sizes are per GPU.")
        form.number(PAGE, "chunk", step=2048, help="Tokens per prefill forward (vLLM's max_num_batched_tokens, "
                                                   "e.g. 8192); 0 = the whole sequence in one forward, as HF "
                                                   "generate() does.")
        form.number(PAGE, "oh", step=0.5, fmt="%.1f", help="CUDA context, allocator caching, workspaces: "
                                                            "the reference document says 1-2 GB.")
        form.choice(PAGE, "act", {16: "16-bit", 32: "32-bit"}, radio=True)
        form.flag(PAGE, "fa", help="Off: eager attention materialises the s x s score matrix.")
        if state.page_state(PAGE)["src"] != "params":
            form.flag(PAGE, "mla", help="DeepSeek MLA models: vLLM, SGLang, llama.cpp and transformers 5 cache the "
                                        "compressed latent; engines without MLA support cache full K and V.")
with outputs:
    results.render(PAGE)
chrome.footer(PAGE, slot)
