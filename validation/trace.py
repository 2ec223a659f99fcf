"""Trace real Hugging Face model code with fake tensors and measure the bytes of every live tensor.

    trace_inference(config, batch=1, concurrency=1, prefill_len=512, decode_steps=16, attn_impl="sdpa")
    trace_training(config, batch=1, seq=512, technique="full" | "lora", optimizer_impl="fused", ...)

`config` is a config.json dict (a catalog entry's `config`, a user's file), its JSON text, a catalog id
("meta-llama/Meta-Llama-3-8B") or an estimator `CatalogModel`. The model is built on the meta device and materialised as
FakeTensors on the CPU, so a step of a 7B-wide model takes seconds and no memory. Both return plain dicts of
measured bytes named like the estimator's components (weights, gradients, optimizer_states, activations, logits,
kv_cache), plus `peak`, `peak_phase` and `phases` (the peak total of each phase).

`trace_scaled` traces two layer counts at real width and extrapolates every number linearly to the
model's own depth: every layer of a kind saves the same bytes (docs/measurements.md).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from .build import base_model, build_model, decoder_layers
from .tracker import (ACTIVATIONS, BUFFERS, GRADIENTS, INPUTS, KV_CACHE, LOGITS, OPTIMIZER_STATES,
                      OPTIMIZER_TEMPORARIES, TEMPORARIES, WEIGHTS, MemoryTracker)

OPTIMIZER_IMPLS = ("fused", "foreach", "single-tensor")


def _config_dict(config) -> dict:
    """A config.json dict from a dict, its JSON text, a catalog id or an estimator CatalogModel."""
    if hasattr(config, "architecture") and hasattr(config, "id"):  # estimator.CatalogModel
        config = config.id
    if isinstance(config, str) and not config.lstrip().startswith("{"):  # a catalog id
        from estimator.catalog import raw_config

        return raw_config(config)  # raises ValueError with suggestions for an unknown id
    if isinstance(config, (str, bytes)):
        from estimator.hf_config import parse_config_text

        return parse_config_text(config)
    if isinstance(config, Mapping):
        return dict(config)
    raise TypeError("config must be a config.json dict, its JSON text, or an estimator CatalogModel")


@contextlib.contextmanager
def _tag_cache_updates(tracker: MemoryTracker):
    """Allocations inside a cache layer's update() are KV cache (class methods patched for the block), and so are
    DeepSeek-V3.2's indexer keys, which `DynamicIndexedLayer.update_indexer` concatenates (transformers v5.24.0
    cache_utils.py L337-350; validation/FINDINGS.md 43)."""
    from transformers import cache_utils

    patched = []
    for cls, name in ((cache_utils.DynamicLayer, "update"), (cache_utils.DynamicSlidingWindowLayer, "update"),
                      (getattr(cache_utils, "DynamicIndexedLayer", None), "update_indexer")):
        original = cls.__dict__.get(name) if cls is not None else None
        if original is None:
            continue

        def update(self, *args, _original=original, **kwargs):
            with tracker.category(KV_CACHE):
                return _original(self, *args, **kwargs)

        setattr(cls, name, update)
        patched.append((cls, name, original))
    try:
        yield
    finally:
        for cls, name, original in patched:
            setattr(cls, name, original)


def _storage_bytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        if isinstance(t, torch.Tensor):
            st = t.untyped_storage()
            if st._cdata not in seen:
                seen.add(st._cdata)
                total += st.nbytes()
    return total


def cache_bytes(cache) -> int:
    """Storage bytes the cache holds (a sliding-window layer's view keeps its whole base storage; DeepSeek-V3.2's
    indexer keys included)."""
    return _storage_bytes(t for layer in cache.layers for t in (getattr(layer, "keys", None),
                                                                  getattr(layer, "values", None),
                                                                  getattr(layer, "indexer_keys", None)))


def _mark_logits(model: torch.nn.Module, tracker: MemoryTracker, on_grad: Callable[[], None] | None = None):
    """From the lm_head call on, allocations are `logits`; `on_grad` runs when the logits' gradient is ready
    (the loss head's backward is done). Returns the hook handles."""
    head = base_model(model).get_output_embeddings()

    def pre(_module, _args):
        tracker.set_category(LOGITS)

    def post(_module, _args, output):
        if on_grad is not None and isinstance(output, torch.Tensor) and output.requires_grad:
            output.register_hook(lambda grad: on_grad())

    return [head.register_forward_pre_hook(pre), head.register_forward_hook(post)]


def _layer_probes(model: torch.nn.Module, tracker: MemoryTracker, category: str) -> tuple[list[int], list]:
    """Live bytes of `category` when each decoder layer's forward starts (first call per layer); the tracker's
    label names the layer running (for record_origin listings)."""
    values: list[int] = []
    seen: set[int] = set()
    handles = []
    for i, layer in enumerate(decoder_layers(model)):
        def pre(module, _args, i=i):
            tracker.label = f"layer {i}"
            if id(module) not in seen:
                seen.add(id(module))
                values.append(tracker.live_bytes(category))

        def post(_module, _args, _output):
            tracker.label = ""

        handles += [layer.register_forward_pre_hook(pre), layer.register_forward_hook(post)]
    return values, handles


def _saved_per_layer(live: list, layers: int) -> list[int]:
    """Bytes of the forward's activations still live, by the decoder layer that created them."""
    out = [0] * layers
    for nbytes, category, *_rest, origin in live:
        if category == ACTIVATIONS and origin.startswith("forward layer "):
            out[int(origin.rsplit(" ", 1)[1])] += nbytes
    return out


def _remove(handles) -> None:
    for h in handles:
        h.remove()


# ---------------------------------------------------------------------------------------------------------
# inference
# ---------------------------------------------------------------------------------------------------------

def trace_inference(config, batch: int = 1, concurrency: int = 1, prefill_len: int = 512, decode_steps: int = 16,
                    attn_impl: str = "sdpa", dtype: str = "bf16", num_layers: int | None = None,
                    debug: bool = False) -> dict:
    """Prefill `concurrency` requests of `batch` x `prefill_len` tokens (each with its own DynamicCache, HF's
    `logits_to_keep=1`), then `decode_steps` greedy steps for every request, sampling from an fp32 copy of the
    last logits as `generate()` does. Measured bytes:

        weights      parameters;  buffers: registered buffers (rotary tables)
        kv_cache     cache storage at the end (all requests, prefill_len + decode_steps tokens)
        activations  forward tensors live at the prefill peak (the last request's prefill)
        logits       largest live logits (16-bit last-position logits + their fp32 copy)
        peak         largest total; peak_phase "prefill" or "decode"; phases = peak total of each
        live_at_peaks        with debug=True: (bytes, category, shape, dtype, op, origin) at each phase's peak
    """
    cfg = _config_dict(config)
    fake = FakeTensorMode()
    t0 = time.perf_counter()
    model = build_model(cfg, fake_mode=fake, dtype=dtype, attn_impl=attn_impl, num_layers=num_layers)
    from transformers import DynamicCache

    tracker = MemoryTracker(record_peak_live=debug)
    vocab = model.config.get_text_config().vocab_size
    handles = _mark_logits(model, tracker) + (_layer_probes(model, tracker, ACTIVATIONS)[1] if debug else [])
    with fake:
        prompts = [torch.randint(0, vocab, (batch, prefill_len)) for _ in range(concurrency)]
    tracker.register(model=model, inputs=prompts)
    caches, tokens, kv_after_prefill = [], [], 0
    try:
        with fake, tracker, torch.no_grad(), _tag_cache_updates(tracker):
            for ids in prompts:
                with tracker.phase("prefill"):
                    cache = DynamicCache(config=model.config)
                    out = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)
                    tokens.append(out.logits[:, -1, :].to(dtype=torch.float32, copy=True).argmax(-1, keepdim=True))
                    del out
                caches.append(cache)
            kv_after_prefill = tracker.live_bytes(KV_CACHE)
            prefill_peak = tracker.peaks["prefill"]
            for _ in range(decode_steps):
                with tracker.phase("decode"):
                    for i, cache in enumerate(caches):
                        out = model(input_ids=tokens[i], cache=cache, use_cache=True)
                        tokens[i] = out.logits[:, -1, :].to(dtype=torch.float32, copy=True).argmax(-1, keepdim=True)
                        del out
            end = tracker.snapshot()
    finally:
        _remove(handles)
    peak_phase, peak = tracker.peak()
    at_prefill = prefill_peak.by_category
    return {
        "weights": tracker.live_bytes(WEIGHTS),
        "buffers": tracker.live_bytes(BUFFERS),
        "kv_cache": end.get(KV_CACHE, 0),
        "kv_cache_after_prefill": kv_after_prefill,
        "kv_cache_formula_storage": sum(cache_bytes(c) for c in caches),
        "activations": at_prefill.get(ACTIVATIONS, 0),
        "logits": tracker.category_peaks.get(LOGITS, 0),
        "inputs": tracker.live_bytes(INPUTS),
        "peak": peak.total,
        "peak_phase": peak_phase,
        "peak_components": dict(peak.by_category),
        "phases": {name: p.total for name, p in tracker.peaks.items() if name != "setup"},
        "ops": tracker.ops,
        "wall_s": time.perf_counter() - t0,
        **({"live_at_peaks": tracker.peak_live} if debug else {}),
    }


# ---------------------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------------------

def _optimizer(params, impl: str) -> torch.optim.Optimizer:
    if impl not in OPTIMIZER_IMPLS:
        raise ValueError(f"optimizer_impl must be one of {', '.join(OPTIMIZER_IMPLS)}; got {impl!r}")
    flags = {"fused": dict(fused=True), "foreach": dict(foreach=True), "single-tensor": dict(foreach=False)}[impl]
    return torch.optim.AdamW(params, lr=1e-4, **flags)


CHUNKED_LOSS_CHUNKS = 8  # torchtune CEWithChunkedOutputLoss(num_output_chunks=8)


def _chunked_loss(model, ids, on_chunk_grad: Callable[[], None] | None = None) -> torch.Tensor:
    """torchtune's chunked output loss, as its recipes run it (torchtune/modules/loss/ce_chunked_output_loss.py,
    recipes/full_finetune_single_device.py): the output projection applied to 8 token chunks of the final hidden
    state, each chunk upcast to fp32 only inside its own cross-entropy (reduction sum), the list of 16-bit chunk
    logits dropped before backward. Labels are the inputs, unshifted (torchtune's datasets shift them)."""
    base = base_model(model)
    hidden = base.get_decoder()(input_ids=ids).last_hidden_state
    head = base.get_output_embeddings()
    chunks = [head(part) for part in hidden.tensor_split(CHUNKED_LOSS_CHUNKS, dim=1)]
    if on_chunk_grad is not None:
        for chunk in chunks:
            chunk.register_hook(lambda grad: on_chunk_grad())
    labels = ids.tensor_split(CHUNKED_LOSS_CHUNKS, dim=1)
    total = sum(torch.nn.functional.cross_entropy(chunk.reshape(-1, chunk.size(-1)).float(), label.reshape(-1),
                                                  reduction="sum") for chunk, label in zip(chunks, labels))
    del chunks
    return total / ids.numel()


def _shifted_loss(model, ids) -> torch.Tensor:
    """The loss head of transformers 4.46-4.47: the model returns its 16-bit logits (held by the output until the
    Trainer's compute_loss returns) and `ForCausalLMLoss` (transformers v4.47.1 src/transformers/loss/loss_utils.py
    L32-47) upcasts them, copies the shifted slice contiguously and runs the cross-entropy on it."""
    logits = model(input_ids=ids).logits
    upcast = logits.float()
    shift_logits = upcast[..., :-1, :].contiguous()
    shift_labels = ids[..., 1:].contiguous()
    return torch.nn.functional.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))


def _loss(model, ids, loss: str, on_chunk_grad: Callable[[], None] | None = None) -> torch.Tensor:
    if loss == "chunked":
        return _chunked_loss(model, ids, on_chunk_grad)
    if loss == "shifted":
        return _shifted_loss(model, ids)
    return model(input_ids=ids, labels=ids).loss


def _optimizer_in_backward(params, impl: str) -> dict:
    """torchtune's optimizer_in_bwd (training/memory.py register_optim_in_bwd_hooks): one optimizer per
    parameter, stepped and zeroed by a post-accumulate-grad hook, so each gradient is freed as soon as it is
    applied."""
    optimizers = {p: _optimizer([p], impl) for p in params}

    def step(p):
        optimizers[p].step()
        optimizers[p].zero_grad(set_to_none=True)

    for p in params:
        p.register_post_accumulate_grad_hook(step)
    return optimizers


def _train_step(model, opt, ids, loss: str = "standard") -> None:
    """One step as HF Trainer runs it: only the loss is kept, logits are dropped after the forward. `opt` None:
    the optimizer steps in backward."""
    _loss(model, ids, loss).backward()
    if opt is not None:
        opt.step()
        opt.zero_grad(set_to_none=True)


def trace_training(config, batch: int = 1, seq: int = 512, technique: str = "full", lora_rank: int = 16,
                   lora_targets: str = "q,v", lora_dtype: str = "fp32", optimizer_impl: str = "fused",
                   state_dtype: str = "param", gradient_checkpointing: bool = False, attn_impl: str = "sdpa",
                   dtype: str = "bf16", num_layers: int | None = None, debug: bool = False, loss: str = "standard",
                   optimizer_in_backward: bool = False) -> dict:
    """One untracked warm-up step (creates AdamW's states), then one tracked step: forward (loss only, as HF
    Trainer keeps it), backward, AdamW step (`optimizer_impl` fused / foreach / single-tensor), zero_grad.

    torch AdamW keeps its states in the parameter dtype (bf16 for a bf16 model, fp32 for peft's fp32
    adapters); `state_dtype` must be "param" (fp32 states on 16-bit weights need a mixed-precision optimizer,
    which torch.optim does not have). Measured bytes:

        weights, buffers, gradients (after backward), optimizer_states (AdamW exp_avg, exp_avg_sq and step)
        activations          forward tensors live after the forward, outside the loss head (with use_cache
                             on, HF's DynamicCache copies of k and v are among them: sdpa saves those copies)
        logits_saved         loss-head tensors live after the forward (fp32 log-softmax)
        logits               loss-head bytes at the loss head's backward peak (kept + temporaries)
        optimizer_step_temporaries   extra bytes at the optimizer step's peak
        per_layer_activations        bytes each decoder layer saved (live after the forward, created in it)
        live_after_forward, live_at_peaks   with debug=True: (bytes, category, shape, dtype, op, origin) of
                             every storage after the forward and at each phase's peak
        peak, peak_phase, phases     forward / backward / optimizer step peaks (backward = max of its parts in
                                     phase_details: the loss head until the logits' gradient exists, then layers)
        gradients_max_live           the most gradient bytes alive at once during backward
    loss "chunked" runs torchtune's chunked output loss (`_chunked_loss`): the loss head's backward ends when every
    chunk's logits have their gradient. optimizer_in_backward steps each parameter in backward (torchtune's
    optimizer_in_bwd): `gradients` is then 0 after backward, `gradients_max_live` what coexisted.
    """
    if loss not in ("standard", "chunked", "shifted"):
        raise ValueError(f"loss must be standard, chunked or shifted; got {loss!r}")
    if technique not in ("full", "lora"):
        raise ValueError(f"technique must be full or lora; got {technique!r}")
    if state_dtype != "param":
        raise ValueError("torch.optim.AdamW keeps its states in the parameter dtype: state_dtype must be 'param'")
    cfg = _config_dict(config)
    fake = FakeTensorMode()
    t0 = time.perf_counter()
    model = build_model(cfg, fake_mode=fake, dtype=dtype, attn_impl=attn_impl, num_layers=num_layers,
                        lora_rank=lora_rank if technique == "lora" else 0, lora_targets=lora_targets,
                        lora_dtype=lora_dtype, train=True)
    if gradient_checkpointing:
        base_model(model).activation_checkpointing_enable({"use_reentrant": False})
    vocab = model.config.get_text_config().vocab_size
    trainable = [p for p in model.parameters() if p.requires_grad]
    tracker = MemoryTracker(record_origin=True, record_peak_live=debug)
    most_grads, tracking = [0], [False]

    def retag(p):  # registered before the optimizer-in-backward hooks, so it sees each gradient first
        if tracking[0]:
            tracker.retag(p.grad, GRADIENTS)
            most_grads[0] = max(most_grads[0], tracker.live_bytes(GRADIENTS))

    grads = [p.register_post_accumulate_grad_hook(retag) for p in trainable]
    with fake:
        ids = torch.randint(0, vocab, (batch, seq))
        if optimizer_in_backward:
            optimizers, opt = _optimizer_in_backward(trainable, optimizer_impl), None
        else:
            opt = _optimizer(trainable, optimizer_impl)
        _train_step(model, opt, ids, loss)  # warm-up: AdamW creates its states lazily
    tracking[0] = True

    tracker.register(model=model, optimizer=opt, inputs=ids)
    for one in optimizers.values() if optimizer_in_backward else ():
        tracker.register(optimizer=one)
    layers_phase = lambda: tracker.enter_phase("backward (layers)", TEMPORARIES)  # noqa: E731
    chunk_grads = [0]

    def chunk_done():  # the loss head's backward is done when the last chunk's logits have their gradient
        chunk_grads[0] += 1
        if chunk_grads[0] == CHUNKED_LOSS_CHUNKS:
            layers_phase()

    head = _mark_logits(model, tracker, on_grad=None if loss == "chunked" else layers_phase)
    _, probes = _layer_probes(model, tracker, ACTIVATIONS)
    try:
        with fake, tracker:  # cache tensors created in training are saved activations: no KV tagging
            with tracker.phase("forward", ACTIVATIONS):
                loss_value = _loss(model, ids, loss, chunk_done)
            after_forward = tracker.snapshot()
            live_after_forward = tracker.live_tensors()
            with tracker.phase("backward (loss head)", TEMPORARIES):
                loss_value.backward()
            after_backward = tracker.snapshot()
            with tracker.phase("optimizer step", OPTIMIZER_TEMPORARIES):
                if opt is not None:
                    opt.step()
            after_step = tracker.snapshot()
            if opt is not None:
                opt.zero_grad(set_to_none=True)
            del loss_value
    finally:
        _remove(head + probes + grads)

    peaks = tracker.peaks
    loss_head = peaks["backward (loss head)"]
    backward_phase, backward = tracker.peak("backward (loss head)", "backward (layers)")
    step = peaks["optimizer step"]
    persistent = (WEIGHTS, BUFFERS, OPTIMIZER_STATES, INPUTS, GRADIENTS, ACTIVATIONS)
    phases = {"forward": peaks["forward"].total, "backward": backward.total, "optimizer step": step.total}
    details = {name: peaks[name].total for name in ("backward (loss head)", "backward (layers)") if name in peaks}
    peak_phase = max(phases, key=phases.get)
    return {
        "weights": tracker.live_bytes(WEIGHTS),
        "buffers": tracker.live_bytes(BUFFERS),
        "gradients": after_backward.get(GRADIENTS, 0),
        "gradients_max_live": most_grads[0],
        "logits_forward_peak": peaks["forward"].by_category.get(LOGITS, 0),
        "loss": loss,
        "optimizer_in_backward": optimizer_in_backward,
        "optimizer_states": after_step.get(OPTIMIZER_STATES, 0),
        "activations": after_forward.get(ACTIVATIONS, 0),
        "logits_saved": after_forward.get(LOGITS, 0),
        "logits": loss_head.total - sum(loss_head.by_category.get(c, 0) for c in persistent),
        "optimizer_step_temporaries": step.by_category.get(OPTIMIZER_TEMPORARIES, 0),
        "inputs": tracker.live_bytes(INPUTS),
        "per_layer_activations": _saved_per_layer(live_after_forward, len(decoder_layers(model))),
        "forward_end": after_forward["total"],
        "peak": phases[peak_phase],
        "peak_phase": peak_phase,
        "backward_peak_part": "loss head" if backward_phase == "backward (loss head)" else "layers",
        "peak_components": dict((step if peak_phase == "optimizer step" else
                                 backward if peak_phase == "backward" else peaks["forward"]).by_category),
        "phases": phases,
        "phase_details": details,
        "trainable_params": sum(p.numel() for p in trainable),
        **({"live_after_forward": live_after_forward, "live_at_peaks": tracker.peak_live} if debug else {}),
        "ops": tracker.ops,
        "wall_s": time.perf_counter() - t0,
    }


# ---------------------------------------------------------------------------------------------------------
# real width, fewer layers
# ---------------------------------------------------------------------------------------------------------

def trace_scaled(trace: Callable[..., dict], config, layers: tuple[int, int], **kwargs) -> dict:
    """Trace at `layers[0]` and `layers[1]` decoder layers and extrapolate every number linearly to the config's
    own `num_hidden_layers` (per-layer bytes are constant for layers of one kind). Pick layer counts that keep
    the mix of layer kinds (e.g. both even for alternating sliding-window layers)."""
    cfg = _config_dict(config)
    target = cfg["num_hidden_layers"] if "num_hidden_layers" in cfg else cfg["n_layer"]  # GPT-2, Falcon-7B: n_layer
    lo, hi = layers
    a = trace(cfg, num_layers=lo, **kwargs)
    b = trace(cfg, num_layers=hi, **kwargs)

    def scale(x, y):
        if isinstance(x, dict):
            return {k: scale(x[k], y[k]) for k in x if k in y}
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            value = x + (y - x) * (target - lo) / (hi - lo)
            return round(value) if isinstance(x, int) and isinstance(y, int) else value
        return y

    out = {k: scale(a[k], b[k]) for k in b if k not in ("per_layer_activations", "wall_s", "ops")}
    out["peak_phase"] = max(out["phases"], key=out["phases"].get)
    out["peak"] = out["phases"][out["peak_phase"]]
    out["per_layer_activations"] = b.get("per_layer_activations", [])
    out["wall_s"] = a["wall_s"] + b["wall_s"]
    out["traced_layers"] = (lo, hi)
    return out
