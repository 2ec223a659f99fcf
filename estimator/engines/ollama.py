"""Ollama: its defaults, then llama.cpp's own accounting (estimator/engines/llama_cpp.py).

Followed: ollama/ollama at fb30760996871fa9460115c753afd2c60d4ab0f7, where every GGUF model is served by the
upstream `llama-server` subprocess (llm/server.go NewLlamaServer, llm/llama_server.go):
    num_ctx      the request's / Modelfile's num_ctx, else OLLAMA_CONTEXT_LENGTH, else a default by the total VRAM
                 of the GPUs (each less OLLAMA_GPU_OVERHEAD) (server/routes.go): >= 47 GiB -> 262144,
                 >= 23 GiB -> 32768, else 4096 ("vram-based default context"); capped at the model's training
                 context ("requested context size too large for model")
    parallel     OLLAMA_NUM_PARALLEL, default 1 (envconfig/config.go)
    launch       llama-server -c num_ctx x parallel -np parallel -b num_batch -ub num_batch (num_batch 512,
                 api/types.go DefaultOptions), --cache-type-k/-v OLLAMA_KV_CACHE_TYPE when set, --flash-attn on / off
                 when OLLAMA_FLASH_ATTENTION is set (else auto), -ngl num_gpu when set, else none: llama-server's
                 --fit places the layers ("NumGPU == -1 (default): don't pass -ngl, let llama-server auto-detect")
With -np given, llama-server does not unify the cache: every slot holds num_ctx tokens.

Older Ollama (up to v0.12, llm/memory.go estimateGPULayers at 4372d0bf) fitted layers itself with its own graph
formulas and logged "offload to cuda layers.requested=... layers.offload=... memory.required.full=...". That rule
is not followed; the summary line is printed in that format with llama.cpp's numbers so logs can be compared, and
old versions needed flash attention for a quantized KV cache (OLLAMA_KV_CACHE_TYPE was ignored without it).
"""

from __future__ import annotations

from dataclasses import replace

from .. import catalog
from ..architecture import Architecture
from ..units import GiB
from . import llama_cpp
from .base import ServeReport, ServeScenario, model_ref

TIERS = ((47 * GiB, 262_144), (23 * GiB, 32_768), (0, 4096))  # server/routes.go: total VRAM -> default num_ctx
DEFAULT_PARALLEL = 1  # envconfig.NumParallel
DEFAULT_NUM_BATCH = 512  # api.DefaultOptions NumBatch


def default_num_ctx(total_vram: int) -> int:
    """Ollama's default num_ctx for the GPUs' total memory (server/routes.go, 'vram-based default context')."""
    return next(ctx for floor, ctx in TIERS if total_vram >= floor)


def _human(num_bytes: int) -> str:
    """format.HumanBytes2: binary units, one decimal."""
    for unit, size in (("GiB", GiB), ("MiB", 2**20), ("KiB", 2**10)):
        if num_bytes >= size:
            return f"{num_bytes / size:.1f} {unit}"
    return f"{num_bytes} B"


def plan(s: ServeScenario) -> tuple[ServeScenario, llama_cpp.Startup, list[str]]:
    """(the scenario as llama-server is launched, its start-up, --fit's notes): num_ctx x parallel cells over
    `parallel` slots that are not unified, -ub num_batch."""
    g = catalog.gpu(s.gpu)
    num_ctx = min(s.max_model_len or default_num_ctx(g.memory_bytes * s.tensor_parallel), s.context_length)
    parallel = s.max_num_seqs or DEFAULT_PARALLEL
    if s.max_num_batched_tokens == 0:
        s = replace(s, max_num_batched_tokens=DEFAULT_NUM_BATCH)
    st, notes = llama_cpp.resolve(s, n_ctx=num_ctx * parallel, slots=parallel, unified=False, ctx_set=True,
                                  gpu_bytes=g.memory_bytes)
    return s, st, notes


def estimate(s: ServeScenario) -> ServeReport:
    a: Architecture = s.model
    g = catalog.gpu(s.gpu)
    devices = s.tensor_parallel
    total_vram = g.memory_bytes * devices
    default = default_num_ctx(total_vram)
    num_ctx = min(s.max_model_len or default, s.context_length)
    parallel = s.max_num_seqs or DEFAULT_PARALLEL
    notes = [f"vram-based default context: total_vram {_human(total_vram)}, default_num_ctx {default}"]
    if (s.max_model_len or default) > s.context_length:
        notes.append(f"requested context size too large for model: num_ctx {s.max_model_len or default}, "
                     f"n_ctx_train {s.context_length}")
    launch = command(s)
    s, st, fit_notes = plan(s)
    notes += fit_notes
    per_gpu = [llama_cpp._gpu_total(st, d) for d in range(devices)]
    kv = sum(st.kv.values())
    weights = sum(st.model.values())
    available = ", ".join(_human(g.memory_bytes) for _ in range(devices))
    offload = (f"msg=offload library=cuda layers.requested={s.n_gpu_layers} layers.model={a.num_layers + 1} "
               f"layers.offload={st.layout.offloaded} memory.available=\"[{available}]\" "
               f"memory.required.full=\"{_human(weights + kv + max(st.compute.values()))}\" "
               f"memory.required.allocations=\"[{', '.join(_human(b) for b in per_gpu)}]\" "
               f"memory.required.kv=\"{_human(kv)}\" memory.weights.total=\"{_human(weights)}\" "
               f"memory.graph.full=\"{_human(max(st.compute.get(d, 0) for d in range(devices)))}\"")
    settings = (("num_ctx", num_ctx), ("num_parallel", parallel), ("n_ctx", st.ctx.n_ctx),
                ("num_batch", st.ctx.ubatch), ("n_gpu_layers", st.layout.offloaded),
                ("kv_cache_type", llama_cpp.CACHE_TYPE_NAMES.get(s.kv_dtype, s.kv_dtype)))
    return llama_cpp.report("ollama", s, st, g.memory_bytes, notes, settings, launch,
                            extra_log=(f"msg=\"vram-based default context\" total_vram=\"{_human(total_vram)}\" "
                                       f"default_num_ctx={default}", offload))


def command(s: ServeScenario) -> str:
    """`ollama run MODEL` with the environment the Ollama server reads (set it where `ollama serve` runs), and the
    model options as `/set parameter` lines typed into the session."""
    env = []
    if s.kv_dtype != "bf16":
        env.append(f"OLLAMA_KV_CACHE_TYPE={llama_cpp.CACHE_TYPE_NAMES.get(s.kv_dtype, s.kv_dtype)}")
    env.append(f"OLLAMA_FLASH_ATTENTION={1 if s.flash_attention else 0}")
    if s.max_num_seqs:
        env.append(f"OLLAMA_NUM_PARALLEL={s.max_num_seqs}")
    if s.max_model_len:
        env.append(f"OLLAMA_CONTEXT_LENGTH={s.max_model_len}")
    line = " ".join(env + ["ollama run", model_ref(s)])
    params = []
    if s.n_gpu_layers >= 0:
        params.append(f"/set parameter num_gpu {s.n_gpu_layers}")
    if s.max_num_batched_tokens:
        params.append(f"/set parameter num_batch {s.max_num_batched_tokens}")
    return line + (" then " + ", ".join(params) if params else "")


# Command-line import: `OLLAMA_NUM_PARALLEL=4 ollama run MODEL` (the environment is read by command.py's caller
# only as far as FLAGS go; `ollama run` itself takes no memory options)
PROGRAMS = ("ollama run", "ollama serve")
MODEL_FLAGS = ()
FLAGS = {}
SWITCHES = {}


def _cache_type(text: str) -> str:
    types = {name: dtype for dtype, name in llama_cpp.CACHE_TYPE_NAMES.items()}
    if text.lower() not in types:
        raise ValueError(f"OLLAMA_KV_CACHE_TYPE must be one of {', '.join(types)}, got {text[:20]!r}")
    return types[text.lower()]


def _switch(text: str) -> bool:
    if text.lower() not in ("1", "0", "true", "false"):
        raise ValueError(f"must be 1, 0, true or false, got {text[:20]!r}")
    return text.lower() in ("1", "true")


# The server's environment (envconfig/config.go), as `VAR=value ollama ...` sets it on the command line
ENV = {"OLLAMA_KV_CACHE_TYPE": ("kv_dtype", _cache_type), "OLLAMA_FLASH_ATTENTION": ("flash_attention", _switch),
       "OLLAMA_NUM_PARALLEL": ("max_num_seqs", int), "OLLAMA_CONTEXT_LENGTH": ("max_model_len", int)}
