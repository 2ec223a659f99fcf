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
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import replace
from pathlib import Path

import estimator as est
from estimator.engines import ServeScenario, import_command
from estimator.engines import vllm as vllm_engine
from estimator.units import GiB

LOGS = Path(__file__).parent / "engine_logs"
RESULTS = Path(__file__).parent / "engine_results.csv"
FIELDS = ("record", "engine", "era", "model", "gpu", "quantity", "logged", "estimate", "error_pct", "note")
# A record's weight format (how the source names it, by its first word) -> the estimator's format
WEIGHTS_FORMATS = {"awq": "awq-4bit", "gptq-int4": "gptq-4bit", "gptq": "gptq-4bit", "fp8": "fp8", "mxfp4": "mxfp4",
                   "nvfp4": "nvfp4", "int4": "int4-g128", "4-bit": "int4-g128", "bf16": "checkpoint",
                   "fp16": "checkpoint"}
GPU_BY_NAME = (("a100", "80", "a100-80gb-sxm"), ("a100", "", "a100-40gb-sxm"), ("h100", "", "h100-sxm"),
               ("l4", "", "l4"), ("4090", "", "rtx-4090"), ("3090", "", "rtx-3090"))


def _era(record: dict) -> str:
    version = record.get("version") or ""
    if record.get("engine_v1") is False or version.startswith(("0.5", "0.6", "0.7", "0.8", "0.9.")):
        return "v0"
    return "v1"


def _vllm_scenario(record: dict) -> tuple[ServeScenario | None, str]:
    """The scenario of a vLLM record, or None and why it cannot be compared."""
    name = record.get("catalog_model") or record.get("model")
    try:
        model = est.model(name)
    except ValueError:
        return None, f"model {name} not in the catalog"
    fields: dict = {}
    if record.get("command"):
        try:
            fields.update(import_command(record["command"]).fields)
        except ValueError:
            pass
    settings = record.get("settings") or {}
    for key, field in (("tensor_parallel_size", "tensor_parallel"), ("pipeline_parallel_size", "pipeline_parallel"),
                       ("data_parallel_size", "data_parallel"), ("gpu_memory_utilization", "gpu_memory_utilization"),
                       ("max_model_len", "max_model_len"), ("max_num_seqs", "max_num_seqs"),
                       ("max_num_batched_tokens", "max_num_batched_tokens"), ("block_size", "block_size"),
                       ("enforce_eager", "enforce_eager"), ("enable_expert_parallel", "expert_parallel")):
        if settings.get(key) is not None:
            fields[field] = type(getattr(ServeScenario, field, 0))(settings[key]) if field != "enforce_eager" \
                else bool(settings[key])
    if str(settings.get("kv_cache_dtype", "")).startswith("fp8"):
        fields["kv_dtype"] = "fp8"
    words = str(record.get("weights") or "").lower().split()
    weights = WEIGHTS_FORMATS.get(words[0] if words else "")
    if weights and weights != "checkpoint" and not (model.architecture.checkpoint and
                                                    model.architecture.checkpoint.format_id):
        fields["weights"] = weights
    gpu = (record.get("gpu") or {}).get("catalog_id") or _gpu_by_name((record.get("gpu") or {}).get("name") or "")
    if record.get("version"):
        fields["engine_version"] = record["version"]
    fields["gpu_memory_utilization"] = float(fields.get("gpu_memory_utilization", 0.9))
    try:
        return ServeScenario(model.architecture, engine="vllm", gpu=gpu, model_id=model.id, **fields), ""
    except ValueError as err:
        return None, f"scenario refused: {err}"


def _gpu_by_name(name: str) -> str:
    """A catalog GPU for a record that names its GPU loosely ("A100 80GB", "H100"): it sets vLLM's defaults (70 GiB
    and not an A100); the budget uses the logged total when there is one. H100 when the name says nothing."""
    name = name.lower()
    return next((gpu for word, size, gpu in GPU_BY_NAME if word in name and size in name), "h100-sxm")


def _row(record: dict, quantity: str, logged: float, estimate: float, note: str = "") -> dict:
    error = (estimate - logged) / abs(logged) * 100 if logged else (0.0 if estimate == logged else float("nan"))
    gpu = (record.get("gpu") or {}).get("catalog_id") or ""
    return {"record": record["id"], "engine": "vllm", "era": _era(record),
            "model": record.get("catalog_model") or record.get("model"), "gpu": gpu, "quantity": quantity,
            "logged": logged, "estimate": round(estimate, 4), "error_pct": round(error, 2), "note": note}


def compare_vllm(record: dict) -> list[dict]:
    s, why = _vllm_scenario(record)
    if s is None:
        return [_row(record, "skipped", 0, 0, why)]
    logged = record.get("logged") or {}
    total = logged.get("total_gpu_memory_gib") or (record.get("gpu") or {}).get("total_gib_logged")
    has_gpu = bool(total or (record.get("gpu") or {}).get("catalog_id"))
    r = vllm_engine.estimate(s, total_bytes=round(total * GiB) if total else None)
    rows = []
    if "weights_gib" in logged:
        rows.append(_row(record, "weights", logged["weights_gib"],  # the vision encoder loads with the model
                         (r.component("weights") + r.component("vision")) / GiB))
    if "kv_cache_gib" in logged and logged["kv_cache_gib"] > 0 and "kv_cache_tokens" in logged:
        paged = vllm_engine.estimate(replace(s, kv_cache_memory=round(logged["kv_cache_gib"] * GiB)))
        rows.append(_row(record, "kv_tokens_paging", logged["kv_cache_tokens"], paged.kv_cache_tokens,
                         "tokens from the logged KV memory"))
    if not has_gpu:
        return rows + [_row(record, "skipped", 0, 0, "GPU total unknown: budget quantities not compared")]
    available = r.budget_bytes - r.component("weights") - r.component("vision") - r.component("activations") \
        - r.component("non_torch")
    for key, value in (("kv_cache_gib", available / GiB), ("activation_peak_gib", r.component("activations") / GiB),
                       ("non_torch_gib", r.component("non_torch") / GiB),
                       ("cuda_graph_gib", r.component("cuda_graphs") / GiB), ("kv_cache_tokens", r.kv_cache_tokens)):
        if key in logged and not (key == "cuda_graph_gib" and logged[key] < 0):
            rows.append(_row(record, key.replace("_gib", "").replace("kv_cache_tokens", "kv_tokens"),
                             logged[key], value))
    if "max_concurrency" in logged and logged.get("max_concurrency_tokens") == r.max_model_len and r.starts:
        rows.append(_row(record, "max_concurrency", logged["max_concurrency"], r.max_concurrency))
    refused = "error" in logged
    rows.append(_row(record, "refusal", int(refused), int(not r.starts),
                     (r.warnings[0][:120] if r.warnings else "starts")))
    return rows


COMPARATORS = {"vllm": compare_vllm}


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


def summary(rows: list[dict]) -> str:
    """Median and worst absolute error per engine, era and quantity (markdown)."""
    lines = ["| engine | era | quantity | records | median error | worst error (record) |", "|---|---|---|---|---|---|"]
    groups: dict = {}
    for row in rows:
        if row["quantity"] in ("skipped",):
            continue
        groups.setdefault((row["engine"], row["era"], row["quantity"]), []).append(row)
    for (engine, era, quantity), group in sorted(groups.items()):
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
