"""transformers `generate()`: the detailed inference estimate itself (no paging, no memory budget).

The model loads whole in its dtype, each running sequence keeps a DynamicCache of its full length, and the
prefill runs in one forward (estimator/inference.py). `max_num_seqs` sequences (1 when unset) of max_model_len
tokens are the batch; runtime overhead (CUDA context, allocator caching) is counted as non-torch memory.
"""

from __future__ import annotations

from .. import catalog
from ..inference import detailed_inference
from ..scenarios import DEFAULT_OVERHEAD_GB, InferenceScenario
from ..units import GiB
from .base import REFUSAL, ServeReport, ServeScenario, gib, make_report, model_ref

PROGRAMS = ()  # a Python program, not a command line
FLAGS: dict = {}
SWITCHES: dict = {}
MODEL_FLAGS = ()


def estimate(s: ServeScenario) -> ServeReport:
    g = catalog.gpu(s.gpu)
    length = s.max_model_len or s.context_length
    sequences = s.max_num_seqs or 1
    row = detailed_inference(InferenceScenario(
        s.model, weights=s.weights, kv_dtype=s.kv_dtype, batch_size=sequences, seq_len=length,
        tensor_parallel=s.tensor_parallel, overhead_gb=DEFAULT_OVERHEAD_GB), s.weights, s.weights)
    parts = dict(row.components)
    components = {"weights": parts["weights"], "vision": parts.get("vision", 0),
                  "activations": parts["activations"] + parts["logits"], "non_torch": parts["overhead"],
                  "kv_cache": parts["kv_cache"] + parts.get("state", 0)}
    per_token = (parts["kv_cache"] // (sequences * length)) if length else 0
    room = g.memory_bytes - (row.total - components["kv_cache"])
    longest = min(s.context_length, max(0, room // max(1, per_token * sequences))) if per_token else s.context_length
    warnings = [] if row.total <= g.memory_bytes else [
        f"{REFUSAL}torch.OutOfMemoryError: CUDA out of memory ({gib(row.total)} GiB needed on a "
        f"{gib(g.memory_bytes)} GiB GPU)"]
    return make_report(
        "transformers", components, gpus=s.tensor_parallel, gpu_bytes=g.memory_bytes, budget_bytes=g.memory_bytes,
        kv_cache_tokens=sequences * length, max_concurrency=float(sequences) if not warnings else 0.0,
        max_model_len=length, max_model_len_that_fits=longest, settings=(("batch", sequences),),
        log=(f"{sequences} sequence(s) of {length:,} tokens: {row.total / GiB:.2f} GiB per GPU",),
        warnings=tuple(warnings), assumptions=row.assumptions, command=command(s))


def command(s: ServeScenario) -> str:
    return (f"AutoModelForCausalLM.from_pretrained({model_ref(s)!r}, dtype='auto', device_map='auto').generate(...)"
            f"  # {s.max_num_seqs or 1} sequence(s) of {s.max_model_len or s.context_length} tokens")
