"""Compare the engine estimates with published start-up logs (validation/engine_logs/*.json).

    python -m validation engines            # per-record errors -> validation/engine_results.csv, and a summary

For every record whose model is in the catalog, the record's settings become a `ServeScenario` and each number the
engine logged is compared with the estimate of the same quantity:
    weights          "Model loading took X GiB" / "model weights take X GiB"
    kv_tokens_paging the KV tokens computed from the logged KV memory (the page arithmetic alone)
    kv_memory        "Available KV cache memory" (needs the GPU's total: logged, or the catalog GPU's)
    kv_tokens        "GPU KV cache size: N tokens" end to end
    activations, non_torch, cuda_graphs, max_concurrency, when logged
    refusal          whether the engine refused to start (1) or not (0), both sides
Records of vLLM's V0 engine (before 0.10) are compared too and marked `v0`: their profiling run differs (no
sampler pass at max_num_seqs, max_num_batched_tokens = max(max_model_len, 2048)), so their activations and KV memory
are expected to differ; the weights and the page arithmetic are the same.

SGLang (compare_sglang), llama.cpp (compare_llama_cpp) and Ollama (compare_ollama) records are compared the same
way, each with the quantities its log lines give (see each function); a record whose model is not in the catalog
is one "skipped" row with the reason. The misses above 10% are explained in engine_logs/FINDINGS_engines.md.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from dataclasses import replace
from pathlib import Path

import estimator as est
from estimator.engines import ServeScenario, import_command
from estimator.engines.base import AUTO_FIT
from estimator.engines import llama_cpp as llama_engine
from estimator.engines import ollama as ollama_engine
from estimator.engines import sglang as sglang_engine
from estimator.engines import vllm as vllm_engine
from estimator.formats import WEIGHT_FORMATS
from estimator.units import GiB

MiB = 2**20

LOGS = Path(__file__).parent / "engine_logs"
RESULTS = Path(__file__).parent / "engine_results.csv"
FIELDS = ("record", "engine", "era", "model", "gpu", "quantity", "logged", "estimate", "error_pct", "note", "unstated")
STATED = "every input stated"  # the summary's second median per quantity: records with an empty `unstated` list
# A record's weight format (how the source names it, by its first word) -> the estimator's format
WEIGHTS_FORMATS = {"awq": "awq-4bit", "gptq-int4": "gptq-4bit", "gptq": "gptq-4bit", "fp8": "fp8", "mxfp4": "mxfp4",
                   "nvfp4": "nvfp4", "int4": "int4-g128", "4-bit": "int4-g128", "bf16": "checkpoint",
                   "fp16": "checkpoint"}
# A record without a version cannot run rules newer than its date: it is compared as the last release before the
# first change of the estimate's rules that came after it (an unset version would be read as the newest): the date of
# the files in the v0.11.0 wheel on PyPI (the profiling sampler sorts) 2025-10-03, in v0.17.0's (the Triton top-k /
# top-p filter) 2026-03-06, and the merge of CUDA-graph profiling by default (#38284, "default since v0.21.0",
# 2026-04-21), from which builds of main (the club-3090 images) budget the graphs.
RELEASES_BY_DATE = (("2025-10-03", "0.10"), ("2026-03-06", "0.16"), ("2026-04-21", "0.20"))
GPU_BY_NAME = (("a100", "80", "a100-80gb-sxm"), ("a100", "40", "a100-40gb-sxm"), ("h100", "", "h100-sxm"),
               ("l4", "", "l4"), ("4090", "", "rtx-4090"), ("3090", "", "rtx-3090"))


def _command_fields(record: dict) -> dict:
    """The scenario fields of the record's command line, when it has one the engine import reads ({} otherwise);
    the record's stated settings are applied over them."""
    try:
        return dict(import_command(record["command"]).fields) if record.get("command") else {}
    except ValueError:
        return {}


def _era(record: dict) -> str:
    version = record.get("version") or ""
    if record.get("engine_v1") is False or version.startswith(("0.5", "0.6", "0.7", "0.8", "0.9.")):
        return "v0"
    return "v1"


# The line vLLM's TopKTopPSampler logs at start-up names the sampler that ran (vllm/v1/sample/ops/topk_topp_sampler.py):
# the record's `sampler` input where its excerpt holds one.
SAMPLER_LINES = (("Using FlashInfer for top-p & top-k sampling", "flashinfer"),
                 ("Falling back to the PyTorch-native implementation of top-p & top-k sampling", "pytorch"))


def logged_sampler(record: dict) -> str:
    """'flashinfer' / 'pytorch' where the record's log says which top-k / top-p sampler ran, else ''."""
    excerpt = str(record.get("excerpt") or "")
    return next((sampler for line, sampler in SAMPLER_LINES if line in excerpt), "")


# Model Runner V2 loads the weights in vllm/v1/worker/gpu/model_runner.py, whose load_model logs "Model loading
# took"; the V1 runner logs the same words from gpu_model_runner.py (V0 logged "Loading model weights took").
V2_RUNNER_LINE = re.compile(r"\[model_runner\.py:\d+\] Model loading took")


def logged_runner(record: dict) -> str:
    """'v2' / 'v1' as the record's V1-engine log names the file that loaded the weights, else ''."""
    excerpt = str(record.get("excerpt") or "")
    if not record.get("engine_v1"):
        return ""
    return "v2" if V2_RUNNER_LINE.search(excerpt) else "v1" if "[gpu_model_runner.py:" in excerpt else ""


def _vllm_scenario(record: dict) -> tuple[ServeScenario | None, str]:
    """The scenario of a vLLM record, or None and why it cannot be compared."""
    name = record.get("catalog_model") or record.get("model")
    try:
        model = est.model(name)
    except ValueError:
        return None, f"model {name} not in the catalog"
    fields = _command_fields(record)
    settings = record.get("settings") or {}
    for key, field in (("tensor_parallel_size", "tensor_parallel"), ("pipeline_parallel_size", "pipeline_parallel"),
                       ("data_parallel_size", "data_parallel"), ("gpu_memory_utilization", "gpu_memory_utilization"),
                       ("max_model_len", "max_model_len"), ("max_num_seqs", "max_num_seqs"),
                       ("max_num_batched_tokens", "max_num_batched_tokens"), ("block_size", "block_size"),
                       ("enforce_eager", "enforce_eager"), ("enable_expert_parallel", "expert_parallel"),
                       ("max_cudagraph_capture_size", "cuda_graph_max_bs"), ("cpu_offload_gb", "cpu_offload_gb"),
                       ("enable_lora", "enable_lora"), ("max_loras", "max_loras"), ("max_lora_rank", "max_lora_rank")):
        if settings.get(key) is None:
            continue
        if field == "max_model_len" and str(settings[key]).strip().lower() in ("auto", "-1"):
            fields[field] = AUTO_FIT  # `--max-model-len auto`, logged as -1 in the non-default args
        elif field in ("enforce_eager", "enable_lora"):
            fields[field] = bool(settings[key])
        else:
            fields[field] = type(getattr(ServeScenario, field, 0))(settings[key])
    if str(settings.get("kv_cache_dtype", "")).startswith("fp8"):
        fields["kv_dtype"] = "fp8"
    if settings.get("rope_scaling"):
        fields["rope_scaling"] = json.dumps(settings["rope_scaling"])
    speculative = re.search(r"mtp.*num_speculative_tokens\D*(\d+)", str(settings.get("speculative", "")))
    if speculative:
        fields["speculative_tokens"] = int(speculative.group(1))
    sampler = logged_sampler(record)
    if sampler:
        fields["sampler"] = sampler
    runner = logged_runner(record)
    if runner:
        fields["model_runner"] = runner
    words = str(record.get("weights") or "").lower().split()
    weights = WEIGHTS_FORMATS.get(words[0] if words else "")
    if weights and weights != "checkpoint" and not (model.architecture.checkpoint and
                                                    model.architecture.checkpoint.format_id):
        fields["weights"] = weights
    gpu = (record.get("gpu") or {}).get("catalog_id") or _gpu_by_name((record.get("gpu") or {}).get("name") or "")
    if record.get("version"):
        fields["engine_version"] = record["version"]
    else:
        fields["engine_version"] = next((release for built, release in RELEASES_BY_DATE
                                         if str(record.get("date") or "9999") < built), "")
    fields["gpu_memory_utilization"] = float(fields.get("gpu_memory_utilization", 0.9))
    try:
        return ServeScenario(model.architecture, engine="vllm", gpu=gpu, model_id=model.id, **fields), ""
    except ValueError as err:
        return None, f"scenario refused: {err}"


def _gpu_by_name(name: str, default: str | None = "h100-sxm") -> str | None:
    """A catalog GPU for a record that names its GPU loosely ("A100 80GB", "H100"): it sets vLLM's defaults (70 GiB
    and not an A100) and, when the name says which memory size, the budget (SXM and PCIe variants differ by less than
    0.1%); the logged total replaces it when there is one. `default` when the name says nothing."""
    name = name.lower()
    return next((gpu for word, size, gpu in GPU_BY_NAME if word in name and size in name), default)


def _row(record: dict, quantity: str, logged: float, estimate: float, note: str = "", engine: str = "vllm",
         era: str = "") -> dict:
    error = (estimate - logged) / abs(logged) * 100 if logged else (0.0 if estimate == logged else float("nan"))
    gpu = (record.get("gpu") or {}).get("catalog_id") or ""
    return {"record": record["id"], "engine": engine, "era": era or _era(record),
            "model": record.get("catalog_model") or record.get("model"), "gpu": gpu, "quantity": quantity,
            "logged": logged, "estimate": round(estimate, 4), "error_pct": round(error, 2), "note": note,
            "unstated": "; ".join(record.get("unstated") or ())}


def compare_vllm(record: dict) -> list[dict]:
    s, why = _vllm_scenario(record)
    if s is None:
        return [_row(record, "skipped", 0, 0, why)]
    logged = record.get("logged") or {}
    total = logged.get("total_gpu_memory_gib") or (record.get("gpu") or {}).get("total_gib_logged")
    gpu = record.get("gpu") or {}
    has_gpu = bool(total or gpu.get("catalog_id") or _gpu_by_name(gpu.get("name") or "", default=None))
    r = vllm_engine.estimate(s, total_bytes=round(total * GiB) if total else None)
    rows = []
    # "Model loading took" holds the vision encoder and the LoRA slots (allocated with the model) besides the weights
    loaded = r.component("weights") + r.component("vision") + r.component("lora")
    if "weights_gib" in logged:
        rows.append(_row(record, "weights", logged["weights_gib"], loaded / GiB))
    if "kv_cache_gib" in logged and logged["kv_cache_gib"] > 0 and "kv_cache_tokens" in logged:
        paged = vllm_engine.estimate(replace(s, kv_cache_memory=round(logged["kv_cache_gib"] * GiB)))
        rows.append(_row(record, "kv_tokens_paging", logged["kv_cache_tokens"], paged.kv_cache_tokens,
                         "tokens from the logged KV memory"))
    if not has_gpu:
        return rows + [_row(record, "skipped", 0, 0, "GPU total unknown: budget quantities not compared")]
    available = r.budget_bytes - loaded - r.component("activations") \
        - r.component("non_torch") - (r.component("cuda_graphs") if vllm_engine.graphs_budgeted(s) else 0)
    # "Graph capturing finished ... took": the capture, which v0.21+ budgets as its estimate (r.component) beforehand
    captured = 0 if s.enforce_eager else vllm_engine.cuda_graph_bytes(s, *vllm_engine.resolved_defaults(s)[:2])[0]
    for key, value in (("kv_cache_gib", available / GiB), ("activation_peak_gib", r.component("activations") / GiB),
                       ("non_torch_gib", r.component("non_torch") / GiB),
                       ("cuda_graph_gib", captured / GiB), ("kv_cache_tokens", r.kv_cache_tokens)):
        if key in logged and not (key == "cuda_graph_gib" and logged[key] < 0):
            rows.append(_row(record, key.replace("_gib", "").replace("kv_cache_tokens", "kv_tokens"),
                             logged[key], value))
    if "cuda_graph_util_equivalent" in logged:  # gpu_worker.py: equivalent = utilization - estimate / total
        current, equivalent = logged["cuda_graph_util_equivalent"]
        rows.append(_row(record, "cuda_graph_estimate", round((current - equivalent) * r.gpu_bytes / GiB, 4),
                         r.component("cuda_graphs") / GiB, "from the logged utilization equivalent"))
    if "max_concurrency" in logged and logged.get("max_concurrency_tokens") == r.max_model_len and r.starts:
        rows.append(_row(record, "max_concurrency", logged["max_concurrency"], r.max_concurrency))
    refused = "error" in logged
    started = logged.get("kv_cache_gib", 0) > 0 or "kv_cache_tokens" in logged
    if refused or started:  # a record that shows neither (weights only) says nothing about the start-up
        rows.append(_row(record, "refusal", int(refused), int(not r.starts),
                         (r.warnings[0][:120] if r.warnings else "starts")))
    return rows


def _version(text: str | None) -> str:
    """The release number of a record's version text ('v0.4.8.post1-rocm630 (docker ...)' -> '0.4.8'), '' when
    none is given."""
    found = re.match(r"\s*v?(\d+(?:\.\d+){0,3})", str(text or ""))
    return found.group(1) if found else ""


def _catalog_model(record: dict):
    """(catalog model, '') or (None, why the record is skipped)."""
    name = record.get("catalog_model")
    if not name:
        return None, f"model {record.get('model') or 'not named'} not in the catalog"
    try:
        return est.model(name), ""
    except ValueError:
        return None, f"model {name} not in the catalog"


def _record_weights(record: dict, model) -> tuple[str | None, bool]:
    """(scenario weights or None, known): the record's format when it names one the estimator has (a GGUF type
    'Q4_0', 'IQ4_XS', or vLLM-style 'fp8'); 'checkpoint' when the model's checkpoint carries its own format."""
    words = str(record.get("weights") or "").lower().split()
    first = words[0] if words else ""
    if first in WEIGHT_FORMATS and first not in ("bf16",):
        fmt = first
    else:
        fmt = WEIGHTS_FORMATS.get(first)
    if fmt is None:
        return None, False
    if fmt == "checkpoint" or (model.architecture.checkpoint and model.architecture.checkpoint.format_id):
        return None, True
    return fmt, True


# ---- SGLang -------------------------------------------------------------------------------------------------

def _sglang_era(record: dict) -> str:
    version = _version(record.get("version"))
    if not version:
        return "unknown"
    return "v0.5+" if tuple(map(int, version.split("."))) >= (0, 5) else "pre-v0.5"


def _sglang_scenario(record: dict) -> tuple[ServeScenario | None, str, bool]:
    """(scenario, why not, whether the GPU is known)."""
    model, why = _catalog_model(record)
    if model is None:
        return None, why, False
    fields = _command_fields(record)
    settings = record.get("settings") or {}
    for key, field, kind in (("tp_size", "tensor_parallel", int), ("dp_size", "data_parallel", int),
                             ("pp_size", "pipeline_parallel", int), ("mem_fraction_static", "mem_fraction_static",
                                                                      float),
                             ("chunked_prefill_size", "max_num_batched_tokens", int),
                             ("context_length", "max_model_len", int), ("max_running_requests", "max_num_seqs", int),
                             ("page_size", "block_size", int), ("cuda_graph_max_bs", "cuda_graph_max_bs", int),
                             ("cpu_offload_gb", "cpu_offload_gb", float)):
        if settings.get(key) is not None:
            fields[field] = kind(settings[key])
    if settings.get("ep_size") and int(settings["ep_size"]) > 1:
        fields["expert_parallel"] = True
    if str(settings.get("kv_cache_dtype", "")).startswith("fp8"):
        fields["kv_dtype"] = "fp8"
    if settings.get("rope_scaling"):
        fields["rope_scaling"] = json.dumps(settings["rope_scaling"])
    speculative = re.search(r"mtp.*num_speculative_tokens\D*(\d+)", str(settings.get("speculative", "")))
    if speculative:
        fields["speculative_tokens"] = int(speculative.group(1))
    weights, _ = _record_weights(record, model)
    if weights:
        fields["weights"] = weights
    gpu_info = record.get("gpu") or {}
    name = str(gpu_info.get("name") or "").lower()
    named = any(word in name for word, _, _ in GPU_BY_NAME)  # "H100": the H100's memory; "AMD Instinct": unknown
    gpu = gpu_info.get("catalog_id") or (_gpu_by_name(name) if named else None)
    if _version(record.get("version")):
        fields["engine_version"] = _version(record.get("version"))
    try:
        return ServeScenario(model.architecture, engine="sglang", gpu=gpu or "h100-sxm", model_id=model.id,
                             **fields), "", gpu is not None
    except ValueError as err:
        return None, f"scenario refused: {err}", False


def compare_sglang(record: dict) -> list[dict]:
    """SGLang: weights ("Load weight end ... mem usage"), the free memory before the weights, the memory taken at
    distributed init ("Init torch distributed ends. mem usage", less the CUDA context, which comes before), KV tokens
    (#tokens / max_total_num_tokens), K and V sizes from the logged #tokens (the cell alone, no GPU needed), CUDA
    graph memory, max_running_requests, refusal (a negative profiled token budget)."""
    era = _sglang_era(record)

    def row(quantity, logged, estimate, note=""):
        return _row(record, quantity, logged, estimate, note, engine="sglang", era=era)

    s, why, has_gpu = _sglang_scenario(record)
    if s is None:
        return [row("skipped", 0, 0, why)]
    logged = record.get("logged") or {}
    r = sglang_engine.estimate(s)
    rows = []
    if "weights_gb" in logged:
        rows.append(row("weights", logged["weights_gb"], (r.component("weights") + r.component("vision")) / GiB))
    tokens = logged.get("kv_tokens") or logged.get("max_total_num_tokens")
    if tokens and "k_size_gb" in logged:
        c = sglang_engine.cells(s.model, s)
        page = sglang_engine.resolve_defaults(s).page_size
        rows.append(row("k_size", logged["k_size_gb"], (tokens + page) * c.full * c.k_share / GiB,
                        "K buffers for the logged #tokens"))
        if "v_size_gb" in logged:
            rows.append(row("v_size", logged["v_size_gb"], (tokens + page) * c.full * (1 - c.k_share) / GiB,
                            "V buffers for the logged #tokens"))
    if tokens and "kv_size_gb" in logged:  # an MLA pool: one latent buffer a layer, printed as "KV size"
        c = sglang_engine.cells(s.model, s)
        page = sglang_engine.resolve_defaults(s).page_size
        rows.append(row("kv_size", logged["kv_size_gb"], (tokens + page) * c.full / GiB,
                        "KV buffers for the logged #tokens"))
    if not has_gpu:
        return rows + [row("skipped", 0, 0, "GPU not named: budget quantities not compared")]
    before = r.budget_bytes / dict(r.settings)["mem_fraction_static"]
    if "avail_mem_before_load_gb" in logged:
        rows.append(row("free_before_load", logged["avail_mem_before_load_gb"], before / GiB))
    if "init_distributed_mem_usage_gb" in logged:  # NCCL and the ROCm all-reduce buffers, without the CUDA context
        taken = r.component("non_torch") - vllm_engine.CUDA_CONTEXT_BYTES + r.component("allreduce_buffers")
        rows.append(row("init_distributed", logged["init_distributed_mem_usage_gb"], taken / GiB,
                        "'Init torch distributed ends. mem usage'"))
    if tokens:
        rows.append(row("kv_tokens", tokens, r.kv_cache_tokens))
    if "cuda_graph_gb" in logged:
        rows.append(row("cuda_graphs", logged["cuda_graph_gb"], r.component("cuda_graphs") / GiB))
    if "max_running_requests" in logged:
        rows.append(row("max_running_requests", logged["max_running_requests"],
                        dict(r.settings)["max_running_requests"]))
    refused = "error" in logged or logged.get("profiled_max_total_tokens", 1) <= 0
    rows.append(row("refusal", int(refused), int(not r.starts), r.warnings[0][:120] if r.warnings else "starts"))
    return rows


# ---- llama.cpp ----------------------------------------------------------------------------------------------

OLD_LLAMA_LOG = ("llama_new_context_with_model", "llm_load_tensors")  # the 2024 log format (before llama_context)


def _device(name: str) -> int | None:
    """A llama.cpp buffer name -> the estimator's device index (-1 = host); None for names it does not model."""
    if name in ("CPU", "CPU_Mapped", "CUDA_Host"):
        return -1
    found = re.fullmatch(r"(?:CUDA|ROCm)(\d+)", name)
    return int(found.group(1)) if found else None


def _flag(value) -> bool:
    return str(value).lower() not in ("0", "false", "off", "disabled")


def _llama_scenario(record: dict, engine: str = "llama.cpp") -> tuple[ServeScenario | None, str, bool]:
    """(scenario, why not, whether the weight format is known)."""
    model, why = _catalog_model(record)
    if model is None:
        return None, why, False
    fields = _command_fields(record)
    settings, logged = record.get("settings") or {}, record.get("logged") or {}
    for key, field in (("n_gpu_layers", "n_gpu_layers"), ("ctx_size", "max_model_len"),
                       ("num_ctx", "max_model_len"), ("parallel", "max_num_seqs"), ("num_parallel", "max_num_seqs"),
                       ("n_ubatch", "max_num_batched_tokens"), ("n_batch", "max_num_batched_tokens")):
        if key == "n_batch" and engine != "ollama":  # llama-server's -b does not size the buffers; Ollama's -b = -ub
            continue
        if settings.get(key) is not None and field not in fields:
            fields[field] = int(settings[key])
    if "flash_attn" in settings or "flash_attention" in settings:
        fields["flash_attention"] = _flag(settings.get("flash_attn", settings.get("flash_attention")))
    elif "flash_attn" in logged:
        fields["flash_attention"] = _flag(logged["flash_attn"])
    if "n_ubatch" in logged and engine == "llama.cpp":
        fields.setdefault("max_num_batched_tokens", int(logged["n_ubatch"]))
    if "n_seq_max" in logged:
        fields.setdefault("max_num_seqs", int(logged["n_seq_max"]))
    elif any(word in (record.get("excerpt") or "") for word in OLD_LLAMA_LOG) and engine == "llama.cpp":
        fields.setdefault("max_num_seqs", 1)  # 2024 llama-server: n_parallel 1, no unified cache
    if settings.get("cache_type_k"):
        fields["kv_dtype"] = llama_engine.CACHE_TYPES_READ.get(str(settings["cache_type_k"]).lower(), "bf16")
    if settings.get("override_tensor"):  # -ot, every option's patterns in order (the command's own when it imports)
        fields["override_tensor"] = str(settings["override_tensor"])
    if settings.get("n_cpu_moe") is not None:
        fields["n_cpu_moe"] = int(settings["n_cpu_moe"])
    if settings.get("tensor_split"):  # -ts, or the free MiB per device llama.cpp splits by when -ts is not given
        fields.update(llama_engine.FLAGS["-ts"][1](str(settings["tensor_split"])))
    gpu_info = record.get("gpu") or {}
    if gpu_info.get("count") and int(gpu_info["count"]) > 1:
        fields.setdefault("tensor_parallel", int(gpu_info["count"]))
    weights, known = _record_weights(record, model)
    if weights:
        fields["weights"] = weights
    gpu = gpu_info.get("catalog_id") or "rtx-4090"  # a stand-in: with -ngl given the GPU only sets the refusal
    try:
        return ServeScenario(model.architecture, engine=engine, gpu=gpu, model_id=model.id, **fields), "", known
    except ValueError as err:
        return None, f"scenario refused: {err}", False


def _mib_sum(value) -> float:
    """A logged buffer: one value, or the list of the lines one buffer name printed (an mmapped GGUF split in
    shards maps one CPU_Mapped buffer per file)."""
    return round(sum(value), 2) if isinstance(value, list) else value


def _per_device(record: dict, row, key: str, quantity: str, estimate: dict, note: str = "") -> list[dict]:
    """One row per logged GPU buffer; the host's buffers (CPU, CPU_Mapped, CUDA_Host: all host RAM, the estimate's
    device -1) are one row, named by the buffer when the log has one and 'host' (their sum) when it has several."""
    rows = []
    logged = (record.get("logged") or {}).get(key) or {}
    host = {name: _mib_sum(value) for name, value in logged.items() if _device(name) == -1}
    for name, value in logged.items():
        device = _device(name)
        if device is not None and device >= 0 and (device in estimate or quantity != "compute_buffer"):
            rows.append(row(f"{quantity} {name}", _mib_sum(value), estimate.get(device, 0) / MiB, note))
    if host and (-1 in estimate or quantity != "compute_buffer"):
        name = next(iter(host)) if len(host) == 1 and not isinstance(logged[next(iter(host))], list) else "host"
        parts = "" if name != "host" else " + ".join(host)
        rows.append(row(f"{quantity} {name}", round(sum(host.values()), 2), estimate.get(-1, 0) / MiB,
                        "; ".join(x for x in (note, parts) if x)))
    return rows


def compare_llama_cpp(record: dict) -> list[dict]:
    """llama.cpp: model / KV / compute buffer per device (GPUs and host) in MiB, the KV total, layers offloaded,
    n_ctx, refusal. Records without a known weight format compare everything but the model buffers."""
    era = "fork" if "fork" in str(record.get("version") or "") else "mainline"

    def row(quantity, logged, estimate, note=""):
        return _row(record, quantity, logged, estimate, note, engine="llama.cpp", era=era)

    s, why, known = _llama_scenario(record)
    if s is None:
        return [row("skipped", 0, 0, why)]
    logged = record.get("logged") or {}
    st, _ = llama_engine.plan(s)
    rows = []
    if known:
        rows += _per_device(record, row, "model_buffer_mib", "model_buffer", st.model)
    elif logged.get("model_buffer_mib"):
        rows.append(row("skipped", 0, 0, "weight format not logged: model buffers not compared"))
    split = "" if s.tensor_parallel < 2 else (f"--tensor-split {s.tensor_split}" if s.tensor_split
                                               else "equal --tensor-split shares")
    rows += _per_device(record, row, "kv_buffer_mib", "kv_buffer", st.kv, split)
    if "kv_self_mib" in logged:
        rows.append(row("kv_total", logged["kv_self_mib"], sum(st.kv.values()) / MiB))
    compute = dict(st.compute)
    copy = llama_engine._offload_copy(s.model, s, st.layout, st.ctx.ubatch)
    if not known and copy and copy >= compute.get(0, 0):  # the copied host weight's size is the weight type's
        compute.pop(0)
        rows.append(row("skipped", 0, 0, "weight format not logged: CUDA0's compute buffer is the op-offload copy "
                                         "of a host weight"))
    rows += _per_device(record, row, "compute_buffer_mib", "compute_buffer", compute, split)
    if "layers_offloaded" in logged:
        done, total = (int(x) for x in str(logged["layers_offloaded"]).split("/"))
        rows.append(row("layers_offloaded", done, st.layout.offloaded,
                        f"of {total} logged, {s.model.num_layers + 1} estimated"))
    if "n_ctx" in logged:
        rows.append(row("n_ctx", logged["n_ctx"], st.ctx.n_ctx))
    if (record.get("gpu") or {}).get("catalog_id"):
        r = llama_engine.estimate(s)
        refused = "error" in logged or any(k.startswith("failed") for k in logged)
        rows.append(row("refusal", int(refused), int(not r.starts), r.warnings[0][:120] if r.warnings else "starts"))
    return rows


# ---- Ollama -------------------------------------------------------------------------------------------------

UNITS = {"B": 1, "KiB": 2**10, "MiB": MiB, "GiB": GiB}


def _bytes(text) -> float:
    """'39.9 GiB' / '974.6 MiB' / '0 B' (format.HumanBytes2) -> bytes."""
    number, unit = str(text).split()
    return float(number) * UNITS[unit]


def _gpu_by_memory(gib: float) -> str | None:
    """A catalog GPU whose memory is the logged amount (within 0.25 GiB): the legacy fitter and --fit depend on the
    size only. None when no catalog GPU has that size."""
    best = min(catalog_gpus(), key=lambda g: abs(g[1] - gib))
    return best[0] if abs(best[1] - gib) <= 0.25 else None


def catalog_gpus() -> list[tuple[str, float]]:
    from estimator import catalog
    return [(g["id"], int(g["memory_bytes"]) / GiB) for g in catalog._read("gpus.json")["gpus"]
            if not g["id"].startswith("m") or g["id"].startswith("mi")]


LEGACY = "legacy estimator"  # Ollama <= 0.12: llm/memory.go chose the layers and printed its own formulas
RUNNER = "llama.cpp runner"  # the buffer lines of llama.cpp inside Ollama's runner (or llama-server since 0.30)
ENGINE = "ollama engine"  # the per-device summary of the new memory estimates (ml/backend/ggml, device.go)


def _logged_layers(record: dict) -> int | None:
    """The layers the runner was given: --n-gpu-layers (settings), else 'offloaded N/M layers', else layers.offload."""
    settings, logged = record.get("settings") or {}, record.get("logged") or {}
    if settings.get("n_gpu_layers") is not None:
        return int(settings["n_gpu_layers"])
    if "layers_offloaded" in logged:
        return int(str(logged["layers_offloaded"]).split("/")[0])
    return logged.get("layers_offload")


def _ollama_devices(record: dict, row, key: str, quantity: str, estimate: dict, unit: float, note: str = "",
                    only_estimated: bool = False) -> list[dict]:
    """One row per device of the logged buffer `key`; the host buffers (CPU, CPU_Mapped, CUDA_Host) add up to the
    estimate's one host entry (with --no-mmap the CPU layers' weights are in CUDA_Host and the token embedding in
    CPU). `unit`: the logged values' unit in bytes (MiB for llama.cpp's lines; 1 for HumanBytes strings, parsed)."""
    by: dict[int, tuple[list[str], float]] = {}
    for name, value in ((record.get("logged") or {}).get(key) or {}).items():
        device = _device(name)
        if device is None or (only_estimated and device not in estimate):
            continue
        names, total = by.get(device, ([], 0.0))
        amount = _bytes(value) if unit == 1 else float(value) * unit
        by[device] = (names + [name], total + amount)
    return [row(f"{quantity} {'+'.join(names)}", total / unit if unit != 1 else total / GiB,
                estimate.get(device, 0) / (unit if unit != 1 else GiB), note)
            for device, (names, total) in sorted(by.items(), key=lambda item: (item[0] < 0, item[0]))]


# memory.weights.total of the legacy fitter (llm/memory.go EstimateGPULayers): up to 0.6.0 the sum of every
# block's layerSize = blk.Size() + kv / BlockCount, i.e. the blocks and the whole KV cache without the output layer
# ("repeating" is that sum less the output layer); from 0.6.1 (033cec232, 2025-03-12, "count gemma3 vision
# tensors") the blocks' sizes alone plus the output layer. A record without a version is placed by its date.
WEIGHTS_TOTAL_WITHOUT_KV = ((0, 6, 1), "2025-03-12")


def _weights_total_holds_kv(record: dict) -> bool:
    version = _version(record.get("version"))
    if version:
        return tuple(int(x) for x in version.split(".")) < WEIGHTS_TOTAL_WITHOUT_KV[0]
    return str(record.get("date") or "9999") < WEIGHTS_TOTAL_WITHOUT_KV[1]


def _legacy_rows(record: dict, s: ServeScenario, known: bool, row) -> list[dict]:
    """The legacy fitter's summary line: memory.weights.total (blocks + KV up to 0.6.0, blocks + output layer from
    0.6.1: WEIGHTS_TOTAL_WITHOUT_KV), memory.required.kv, memory.graph.full / .partial (its GraphSize formulas,
    against llama.cpp's compute buffer), layers.offload (against llama-server --fit on a catalog GPU of the logged
    free size)."""
    logged, settings = record.get("logged") or {}, record.get("settings") or {}
    rows = []
    _, st, _ = ollama_engine.plan(replace(s, n_gpu_layers=s.model.num_layers + 1))
    if known:
        if _weights_total_holds_kv(record):
            _, blocks, _ = ollama_engine.plan(replace(s, n_gpu_layers=s.model.num_layers))  # output layer on the host
            estimate, note = sum(v for d, v in blocks.model.items() if d >= 0) + sum(st.kv.values()), "blocks + KV"
        else:
            estimate, note = sum(v for d, v in st.model.items() if d >= 0), "blocks + output layer"
        rows.append(row("weights_total", _bytes(logged["memory_weights_total"]) / GiB, estimate / GiB, note))
    else:
        rows.append(row("skipped", 0, 0, "weight format not logged: memory.weights not compared"))
    if not s.max_model_len:
        return rows + [row("skipped", 0, 0, "num_ctx not in the excerpt: KV, graphs and layers not compared")]
    rows.append(row("kv", _bytes(logged["memory_required_kv"]) / GiB, sum(st.kv.values()) / GiB,
                    f"num_ctx {s.max_model_len} x {s.max_num_seqs or 1}"))
    rows.append(row("graph_full", _bytes(logged["memory_graph_full"]) / GiB,
                    max(st.compute.get(d, 0) for d in range(s.tensor_parallel)) / GiB,
                    "llama.cpp compute buffer vs the legacy GraphSize formula"))
    partial = logged.get("layers_offload")
    if partial is not None and partial < s.model.num_layers + 1:
        _, stp, _ = ollama_engine.plan(replace(s, n_gpu_layers=int(partial)))
        rows.append(row("graph_partial", _bytes(logged["memory_graph_partial"]) / GiB,
                        max(stp.compute.get(d, 0) for d in range(s.tensor_parallel)) / GiB,
                        f"compute buffer at {partial} layers vs the legacy GraphSize formula"))
    available = [_bytes(x) / GiB for x in logged.get("memory_available") or []]
    gpu = _gpu_by_memory(available[0]) if available and known else None
    if gpu and (s.n_gpu_layers < 0 or "n_gpu_layers" in settings):
        _, stf, _ = ollama_engine.plan(replace(s, gpu=gpu, n_gpu_layers=-1))
        rows.append(row("layers_offload", partial, stf.layout.offloaded,
                        f"llama-server --fit on {gpu} vs the legacy fitter"))
    return rows


def compare_ollama(record: dict) -> list[dict]:
    """Ollama, by the lines the log holds (one era label per kind of line):
    legacy estimator  Ollama <= 0.12's own fitter (llm/memory.go): see _legacy_rows. The layer count it chose is not
                      modelled (the estimate is llama-server's --fit), so the runner rows below take it from the log.
    llama.cpp runner  llama.cpp's buffer lines inside Ollama's runner (and of llama-server since 0.30): model / KV /
                      compute buffers per device in MiB, the KV total, layers offloaded, n_ctx, at the logged -ngl.
    ollama engine     the per-device summary of the new memory estimates ('model weights' / 'kv cache' / 'compute
                      graph' device=..., HumanBytes2 with one decimal), at the logged layer count.
    The estimate is llama-server's accounting (estimator/engines/ollama.py)."""
    logged = record.get("logged") or {}

    def rows_for(era):
        return lambda quantity, logged_value, estimate, note="": _row(record, quantity, logged_value, estimate, note,
                                                                     engine="ollama", era=era)

    legacy = "memory_required_full" in logged
    runner = any(k in logged for k in ("model_buffer_mib", "kv_buffer_mib", "compute_buffer_mib", "n_ctx"))
    engine = any(k in logged for k in ("model_weights", "kv_cache", "compute_graph"))
    first = rows_for(LEGACY if legacy else ENGINE if engine else RUNNER)
    s, why, known = _llama_scenario(record, engine="ollama")
    if s is None:
        return [first("skipped", 0, 0, why)]
    if "flash_attention" not in (record.get("settings") or {}) and "flash_attn" not in logged:
        s = replace(s, flash_attention=False)  # OLLAMA_FLASH_ATTENTION defaulted to off before the Ollama engine
    rows = _legacy_rows(record, s, known, rows_for(LEGACY)) if legacy else []
    if not (runner or engine):
        return rows
    from_cells = not s.max_model_len and "n_ctx" in logged  # the runner's cells: num_ctx x slots, whatever the split
    if from_cells:
        slots = int(logged.get("n_seq_max") or 1)
        s = replace(s, max_model_len=int(logged["n_ctx"]) // slots, max_num_seqs=slots)
    if not s.max_model_len:
        return rows + [first("skipped", 0, 0, "num_ctx not in the excerpt: buffers not compared")]
    layers = _logged_layers(record)
    if layers is not None:
        s = replace(s, n_gpu_layers=layers)
    _, st, _ = ollama_engine.plan(s)
    at = f"at the logged {layers} layers" if layers is not None else "layers placed by --fit"
    if runner:
        row = rows_for(RUNNER)
        if known:
            rows += _ollama_devices(record, row, "model_buffer_mib", "model_buffer", st.model, MiB, at)
        elif logged.get("model_buffer_mib"):
            rows.append(row("skipped", 0, 0, "weight format not logged: model buffers not compared"))
        rows += _ollama_devices(record, row, "kv_buffer_mib", "kv_buffer", st.kv, MiB, at)
        if "kv_self_mib" in logged:
            rows.append(row("kv_total", logged["kv_self_mib"], sum(st.kv.values()) / MiB))
        rows += _ollama_devices(record, row, "compute_buffer_mib", "compute_buffer", st.compute, MiB, at,
                                only_estimated=True)
        if "layers_offloaded" in logged:
            done, total = (int(x) for x in str(logged["layers_offloaded"]).split("/"))
            rows.append(row("layers_offloaded", done, st.layout.offloaded,
                            f"of {total} logged, {s.model.num_layers + 1} estimated"))
        if "n_ctx" in logged and not from_cells:
            rows.append(row("n_ctx", logged["n_ctx"], st.ctx.n_ctx, f"num_ctx x {s.max_num_seqs or 1} slots"))
    if engine:
        row = rows_for(ENGINE)
        if layers is None:  # the split is not logged: the totals over the devices do not depend on it
            for key, estimate in (("model_weights", st.model), ("kv_cache", st.kv)):
                values = logged.get(key)
                if isinstance(values, dict) and (known or key == "kv_cache"):
                    rows.append(row(f"{key} total", sum(_bytes(v) for v in values.values()) / GiB,
                                    sum(estimate.values()) / GiB, "every device (layer split not logged)"))
            return rows
        if known and isinstance(logged.get("model_weights"), dict):
            rows += _ollama_devices(record, row, "model_weights", "model_weights", st.model, 1, at)
        if isinstance(logged.get("kv_cache"), dict):
            rows += _ollama_devices(record, row, "kv_cache", "kv_cache", st.kv, 1, at)
        if isinstance(logged.get("compute_graph"), dict):
            rows += _ollama_devices(record, row, "compute_graph", "compute_graph", st.compute, 1, at)
    return rows


# ---- vLLM CUDA-graph constants ------------------------------------------------------------------------------

def _graph_records(records: list[dict] | None, keep) -> list[tuple[dict, ServeScenario, dict]]:
    """The V1 records `keep(record, scenario)` accepts, each with its scenario and the CUDA-graph terms vLLM's source
    gives for it (vllm.cuda_graph_terms: the pool of the largest size, the graphs per mode, the layers a graph spans)
    and `config`, which groups start-ups that differ only in what the graphs do not see (utilization,
    max_model_len): one value per configuration."""
    if records is None:
        records = json.loads((LOGS / "vllm.json").read_text())["records"]
    out = []
    for record in records:
        if _era(record) != "v1":
            continue
        s, _ = _vllm_scenario(record)
        if s is None or not keep(record, s):
            continue
        max_seqs, batched, _ = vllm_engine.resolved_defaults(s)
        fixed, modes, layers = vllm_engine.cuda_graph_terms(s, max_seqs, batched)
        gpu = (record.get("gpu") or {}).get("name")
        out.append((record, s, {
            "record": record["id"], "model": record.get("catalog_model"), "gpu": gpu, "version": s.engine_version,
            "tp": s.tensor_parallel, "moe": s.model.is_moe, "fixed": fixed, "modes": modes, "layers": layers,
            "config": (record.get("catalog_model"), gpu, s.engine_version, s.tensor_parallel, s.pipeline_parallel,
                       modes, fixed)}))
    return out


def graph_captures(records: list[dict] | None = None) -> list[dict]:
    """Every V1 start-up whose log gives the CUDA-graph capture ("Graph capturing finished in N secs, took X GiB", or
    the summary line's CUDAGraph memory, when positive), with its graph terms (`_graph_records`) and the bytes per
    layer and graph the log leaves once those are taken out."""
    def logged(record: dict) -> float:
        return (record.get("logged") or {}).get("cuda_graph_gib") or 0

    captures = []
    for record, _, c in _graph_records(records, lambda r, s: logged(r) > 0 and not s.enforce_eager):
        c["logged"] = round(logged(record) * GiB)
        c["implied"] = (c["logged"] - c["fixed"]) / (sum(c["modes"]) * c["layers"])
        captures.append(c)
    return captures


def _per_config(items: list[dict], leave_out: tuple | None) -> list[tuple[int, float]]:
    """(TP, mean implied bytes) per configuration of `items`, without the `leave_out` one (leave-one-out)."""
    configs: dict = {}
    for item in items:
        if item["config"] != leave_out:
            configs.setdefault(item["config"], []).append(item)
    return [(group[0]["tp"], statistics.mean(i["implied"] for i in group)) for group in configs.values()]


def derive_graph_constants(captures: list[dict], leave_out: tuple | None = None) -> tuple[int, int]:
    """(LAYER_GRAPH_BYTES, ALLREDUCE_GRAPH_BYTES) by the rule in estimator/engines/vllm.py: the median over the
    one-GPU configurations of the bytes per layer and graph their captures leave; then, given that, the median over
    the tensor-parallel configurations of what is left per captured all-reduce (two a layer); both rounded down to
    whole bytes. `leave_out` drops one configuration (leave-one-out)."""
    per_config = _per_config(captures, leave_out)
    layer = int(statistics.median(v for tp, v in per_config if tp == 1))
    reduces = [(v - layer) / vllm_engine.ALLREDUCES_PER_LAYER for tp, v in per_config if tp > 1]
    return layer, int(statistics.median(reduces)) if reduces else 0


def predicted_capture(c: dict, constants: tuple[int, int]) -> int:
    """The capture of `c` under (per-layer, per-all-reduce) constants, as vllm._graph_bytes computes it."""
    return c["fixed"] + sum(c["modes"]) * vllm_engine.graph_bytes_each(c["layers"], c["tp"], *constants)


def graph_estimates(records: list[dict] | None = None) -> list[dict]:
    """Every V1 start-up whose log gives profile_cudagraph_memory's estimate (gpu_worker.py: "The current
    --gpu-memory-utilization=U is equivalent to --gpu-memory-utilization=E", E = round(U - estimate / total, 4)), in
    a release that budgets it: the estimate, (U - E) x the GPU's total as compare_vllm reads it, with its graph terms
    (`_graph_records`) and the bytes per layer each reading of one graph leaves once the pool terms are taken out:
    the estimate is the pool terms + (graphs - modes + 1) readings (vllm.profiled_estimate)."""
    estimates = []
    for record, s, e in _graph_records(records, lambda r, s: "cuda_graph_util_equivalent" in (r.get("logged") or {})
                                       and vllm_engine.graphs_budgeted(s)):
        logged = record["logged"]
        total = logged.get("total_gpu_memory_gib") or (record.get("gpu") or {}).get("total_gib_logged")
        gpu_bytes = vllm_engine.estimate(s, total_bytes=round(total * GiB) if total else None).gpu_bytes
        current, equivalent = logged["cuda_graph_util_equivalent"]
        e["logged"] = round((current - equivalent) * gpu_bytes)
        e["implied"] = (e["logged"] - e["fixed"]) / ((sum(e["modes"]) - len(e["modes"]) + 1) * e["layers"])
        estimates.append(e)
    return estimates


def derive_estimate_constant(estimates: list[dict], leave_out: tuple | None = None) -> int:
    """SAMPLED_GRAPH_BYTES by the rule in estimator/engines/vllm.py: the median over the configurations of the bytes
    per layer each reading leaves, rounded down to whole bytes; `leave_out` drops one configuration."""
    return int(statistics.median(v for _, v in _per_config(estimates, leave_out)))


def _derivation_table(items: list[dict], predict, derive, logged: str, per: str, digits: int) -> tuple[list[str], str]:
    """Markdown rows of `items` (captures or estimates), each with its error under the constants `derive(items)` and
    under those derived without its configuration (`predict(item, constants)`), and the line of median errors."""
    constants = derive(items)
    lines = ["| record | model | TP | version | graphs (PIECEWISE + FULL) | layers | pool terms (MiB) | "
             f"{logged} (GiB) | bytes per layer and {per} | error | held out |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    fit, held = [], []
    for i in items:
        error = (predict(i, constants) - i["logged"]) / i["logged"] * 100
        held_out = (predict(i, derive(items, i["config"])) - i["logged"]) / i["logged"] * 100
        fit.append(abs(error))
        held.append(abs(held_out))
        lines.append(f"| {i['record']} | {i['model']}{' (MoE)' if i['moe'] else ''} | {i['tp']} | "
                     f"{i['version'] or 'unstated'} | {' + '.join(map(str, i['modes']))} | {i['layers']} | "
                     f"{i['fixed'] / MiB:.0f} | {i['logged'] / GiB:.{digits}f} | {i['implied']:,.0f} | "
                     f"{error:+.1f}% | {held_out:+.1f}% |")
    errors = (f"median error {statistics.median(fit):.1f}%, held out (leave-one-configuration-out) "
              f"{statistics.median(held):.1f}%.")
    return lines, errors


def estimate_derivation(records: list[dict] | None = None) -> str:
    """The derivation of SAMPLED_GRAPH_BYTES, estimate by estimate, with each one's error under the constant derived
    from all configurations and from all but its own (leave-one-out), as a markdown table."""
    estimates = graph_estimates(records)
    lines, errors = _derivation_table(
        estimates, lambda e, sampled: vllm_engine.profiled_estimate(e["fixed"], e["modes"], e["layers"], sampled),
        derive_estimate_constant, "estimate logged", "reading", 4)
    lines += ["", f"SAMPLED_GRAPH_BYTES = {derive_estimate_constant(estimates):,} (median of {len(estimates)} "
              "configurations: " + ", ".join(f"{int(e['implied']):,}" for e in sorted(estimates,
                                                                                      key=lambda e: e["implied"]))
              + ").", f"Estimates: {len(estimates)}; {errors}"]
    return "\n".join(lines)


def graph_derivation(records: list[dict] | None = None) -> str:
    """The derivation of the CUDA-graph constants, capture by capture, with each capture's error under the constants
    derived from all configurations and from all but its own (leave-one-out), as a markdown table."""
    captures = graph_captures(records)
    lines, errors = _derivation_table(captures, predicted_capture, derive_graph_constants, "logged", "graph", 2)
    layer, reduce = derive_graph_constants(captures)
    one = sorted({c["config"]: int(c["implied"]) for c in captures if c["tp"] == 1}.values())
    lines += ["", f"LAYER_GRAPH_BYTES = {layer:,} (median of {len(one)} one-GPU configurations: "
              + ", ".join(f"{v:,}" for v in one) + f"); ALLREDUCE_GRAPH_BYTES = {reduce:,}.",
              f"Captures: {len(captures)}; {errors}"]
    return "\n".join(lines)


COMPARATORS = {"vllm": compare_vllm, "sglang": compare_sglang, "llama.cpp": compare_llama_cpp,
               "ollama": compare_ollama}


def run(write: bool = True) -> list[dict]:
    rows = []
    for engine, compare in COMPARATORS.items():
        records = json.loads((LOGS / f"{engine.replace('.', '_')}.json").read_text())["records"]
        for record in records:
            rows += compare(record)
    if write:
        with RESULTS.open("w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    return rows


def groups(rows: list[dict]) -> dict[tuple[str, str, str], list[dict]]:
    """The compared rows by (engine, era, quantity); where some of a group's records leave an input unstated (the
    record's `unstated` list: inputs its source does not give, taken at the engine's default or the catalog's
    stand-in), the same quantity over the records that state every input is a group of its own, "<quantity>, every
    input stated", so that the median over estimable records and the one over every record are both shown."""
    by: dict = {}
    for row in rows:
        if row["quantity"] == "skipped":
            continue
        by.setdefault((row["engine"], row["era"], row["quantity"]), []).append(row)
    for (engine, era, quantity), group in list(by.items()):
        stated = [r for r in group if not r.get("unstated")]
        if quantity != "refusal" and stated and len(stated) < len(group):
            by[(engine, era, f"{quantity}, {STATED}")] = stated
    return by


def summary(rows: list[dict]) -> str:
    """Median and worst absolute error per engine, era and quantity (markdown; `groups`)."""
    lines = ["| engine | era | quantity | records | median error | worst error (record) |", "|---|---|---|---|---|---|"]
    for (engine, era, quantity), group in sorted(groups(rows).items()):
        errors = [abs(float(r["error_pct"])) for r in group if r["error_pct"] == r["error_pct"]]
        if quantity == "refusal":
            agree = sum(1 for r in group if r["logged"] == r["estimate"])
            lines.append(f"| {engine} | {era} | refusal agrees | {len(group)} | {agree} of {len(group)} | |")
            continue
        worst = max(group, key=lambda r: abs(float(r["error_pct"])))
        lines.append(f"| {engine} | {era} | {quantity} | {len(group)} | {statistics.median(errors):.1f}% | "
                     f"{float(worst['error_pct']):+.1f}% ({worst['record']}) |")
    skipped = sum(1 for r in rows if r["quantity"] == "skipped")
    return "\n".join(lines) + f"\n\n{skipped} record(s) or parts skipped (model not in the catalog, GPU unknown)."
