"""The speed model against published measurements (validation/published/speed.csv): derive the efficiencies, report
the errors.

    python -m validation speed            # errors per engine and GPU class (fit and held-out records)
    python -m validation speed --derive   # rewrite estimator/data/speed.json from the records, then report

Rule of the efficiencies (written into speed.json): for each record, the achieved fraction is the measured value
over the roofline estimate at 100% efficiency (decode: of the memory bandwidth, the phase being memory-bound at
batch 1; prefill: of the peak FLOPs). An efficiency is the median achieved fraction of the records of one key,
from the most specific key with at least MIN_RECORDS records to the least:
(engine, GPU class, phase, kernel) -> (engine, GPU class, phase) -> (GPU class, phase) -> (engine, phase) -> phase.
Held-out records (crc32 of the id % HOLDOUT_MODULUS == 0) never enter a median; their error is reported apart. Only
records of one sequence on one GPU enter a median (`derivable`); batches, tensor parallelism and serving throughput
(output_throughput, total_throughput) are compared with the estimate but set no efficiency.
"""

from __future__ import annotations

import csv
import json
import statistics
import zlib
from dataclasses import dataclass
from pathlib import Path

from estimator import catalog, speed
from estimator.formats import WEIGHT_FORMATS, resolve_word

SPEED_CSV = Path(__file__).parent / "published" / "speed.csv"
SPEED_RESULTS_CSV = Path(__file__).with_name("speed_results.csv")
SPEED_JSON = Path(speed.__file__).parent / "data" / "speed.json"
COLUMNS = ("id", "engine", "engine_version", "gpu", "gpus", "tp", "model", "weights", "kv_dtype", "concurrency",
           "input_tokens", "output_tokens", "metric", "value", "source", "date", "quote", "notes")
DECODE_METRICS = ("llama_bench_tg", "decode_tokens_per_s_per_seq", "tpot_ms")
PREFILL_METRICS = ("llama_bench_pp", "prefill_tokens_per_s", "ttft_ms")
MIN_RECORDS = 2
HOLDOUT_MODULUS = 4
# Published models the catalog holds under another id: same architecture (layers, widths, heads)
SAME_ARCHITECTURE = {
    "codellama/CodeLlama-7b-hf": "meta-llama/Llama-2-7b-hf",  # vocabulary 32,016 instead of 32,000
    "huggyllama/llama-7b": "meta-llama/Llama-2-7b-hf",  # LLaMA 1 7B: the same shapes, 2K context
}
RULE = ("An efficiency is the median, over the published records of its key, of measured / (the roofline estimate at "
        "100% efficiency): decode records give the achieved fraction of the memory bandwidth, prefill records of the "
        f"peak FLOPs. Keys from the most specific with at least {MIN_RECORDS} records to the least: (engine, GPU "
        "class, phase, kernel) -> (engine, GPU class, phase) -> (GPU class, phase) -> (engine, phase) -> phase. Records "
        f"whose id has crc32 % {HOLDOUT_MODULUS} == 0 are held out of every median, and only records of one sequence "
        "on one GPU (concurrency 1, tp 1) enter one: batches, tensor parallelism and throughput are compared only.")
KV_WORDS = {"": "bf16", "f16": "bf16", "fp16": "bf16", "bf16": "bf16", "fp8": "fp8", "q8_0": "q8_0",
            "q4_0": "q4_0", "q5_0": "q5_0", "f32": "fp32", "fp32": "fp32"}


def load_records(path: Path = SPEED_CSV) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if tuple(row) != COLUMNS:
            raise ValueError(f"{path}: columns must be {', '.join(COLUMNS)}")
    return rows


def held_out(record_id: str) -> bool:
    return zlib.crc32(record_id.encode()) % HOLDOUT_MODULUS == 0


THROUGHPUT_METRICS = ("output_throughput", "total_throughput")


def phase_of(metric: str) -> str | None:
    """decode / prefill (they also set the efficiencies), throughput (compared only), None (not compared)."""
    if metric in DECODE_METRICS:
        return "decode"
    return "prefill" if metric in PREFILL_METRICS else "throughput" if metric in THROUGHPUT_METRICS else None


def derivable(c: Case) -> bool:
    """Whether a record measures an efficiency: one sequence on one GPU (decode then reads the weights and one
    cache: memory-bound; a prompt's prefill: compute-bound), not a held-out one. Batches, tensor parallelism and
    serving throughput are compared with the estimate but set no efficiency."""
    r = c.record
    return (not c.skip and c.phase in ("decode", "prefill") and int(r["concurrency"] or 1) == 1
            and int(r["tp"] or 1) == 1 and not held_out(r["id"]))


@dataclass(frozen=True)
class Case:
    """A record as the estimator reads it, or why it cannot."""

    record: dict
    phase: str
    skip: str = ""  # the reason the record is not compared
    model: object = None
    gpu: object = None
    weights: str = ""
    kv_dtype: str = "bf16"

    @property
    def klass(self) -> str:
        return speed.gpu_class(self.gpu)

    @property
    def kernel(self) -> str:
        return speed.kernel_kind(self.weights)


def weight_format_id(text: str) -> str | None:
    word = text.lower().removeprefix("gguf-")
    word = {"f16": "bf16", "fp16": "bf16", "bf16": "bf16", "f32": "fp32"}.get(word, word)
    return word if word in WEIGHT_FORMATS else resolve_word(word, tuple(WEIGHT_FORMATS))


def case(record: dict) -> Case:
    phase = phase_of(record["metric"])
    if phase is None:
        return Case(record, "", skip=f"metric {record['metric']} is not compared (training records)")
    try:
        model = catalog.model(SAME_ARCHITECTURE.get(record["model"], record["model"])).architecture
    except ValueError:
        return Case(record, phase, skip=f"model {record['model']} is not in the catalog")
    try:
        gpu = catalog.gpu(record["gpu"])
    except ValueError:
        return Case(record, phase, skip=f"GPU {record['gpu']} is not in the catalog")
    weights = weight_format_id(record["weights"])
    kv = KV_WORDS.get(record["kv_dtype"].lower())
    if weights is None or kv is None:
        return Case(record, phase, skip=f"weights {record['weights']!r} / KV {record['kv_dtype']!r} not modelled")
    return Case(record, phase, model=model, gpu=gpu, weights=weights, kv_dtype=kv)


def estimate(c: Case, e_bw: float | None = None, e_flops: float | None = None, table: dict | None = None) -> float:
    """The record's metric as the model estimates it; with e_bw / e_flops given, at those efficiencies (the
    roofline at 100% is e = 1), else at those of `table` (default: the derived ones of speed.json)."""
    r = c.record
    tp, conc = int(r["tp"] or 1), int(r["concurrency"] or 1)
    inp, out = int(r["input_tokens"] or 0), int(r["output_tokens"] or 0)
    p = speed.peaks(c.gpu, c.weights)
    if e_bw is None:
        table = speed._efficiency_table() if table is None else table
        e_bw = speed.lookup_efficiency(table, r["engine"], c.klass, "decode", c.kernel).value
        e_flops = speed.lookup_efficiency(table, r["engine"], c.klass, "prefill", c.kernel).value
    if c.phase == "prefill":
        prompt = inp or 512
        fill = speed.prefill_phase(c.model, c.weights, tp, prompt, p, e_bw, e_flops)
        return fill.seconds * 1000 if r["metric"] == "ttft_ms" else prompt / fill.seconds
    context = out // 2 if r["metric"] == "llama_bench_tg" else inp + out // 2
    step = speed.decode_phase(c.model, c.weights, c.kv_dtype, tp, conc, context, p, e_bw, e_flops)
    if c.phase == "throughput":  # each of `conc` requests: its prefill, then `out` steps of the batch
        request_s = speed.prefill_phase(c.model, c.weights, tp, max(inp, 1), p, e_bw, e_flops).seconds \
            + out * step.seconds
        return conc * (out if r["metric"] == "output_throughput" else inp + out) / request_s
    return step.seconds * 1000 if r["metric"] == "tpot_ms" else 1 / step.seconds


def achieved(c: Case) -> float:
    """Measured over the roofline at 100% efficiency (a time metric: the other way round)."""
    ideal = estimate(c, 1.0, 1.0)
    value = float(c.record["value"])
    return ideal / value if c.record["metric"] in ("tpot_ms", "ttft_ms") else value / ideal


def derive(cases: list[Case]) -> dict:
    """speed.json: the efficiencies of every key with enough fit records, each with its record ids."""
    fit = [c for c in cases if derivable(c)]
    keys: dict[tuple, list[Case]] = {}
    for c in fit:
        engine = speed.ENGINE_FAMILY.get(c.record["engine"], c.record["engine"])
        for key in ((engine, c.klass, c.phase, c.kernel), (engine, c.klass, c.phase, ""), ("", c.klass, c.phase, ""),
                    (engine, "", c.phase, ""), ("", "", c.phase, "")):
            keys.setdefault(key, []).append(c)
    entries = []
    for key, members in sorted(keys.items()):
        if len(members) < MIN_RECORDS and key[:2] != ("", ""):
            continue
        entries.append({"key": list(key), "value": round(statistics.median(achieved(c) for c in members), 4),
                        "records": sorted(c.record["id"] for c in members)})
    return {"rule": RULE,
            "source": "validation/published/speed.csv (each record with its URL, quote and settings)",
            "efficiencies": entries}


def leave_one_out(c: Case, cases: list[Case]) -> float:
    """The record's estimate with efficiencies derived from every other record (the record held out)."""
    others = [o for o in cases if o is not c]
    return estimate(c, table=speed.efficiency_table(derive(others)))


def results(cases: list[Case]) -> list[dict]:
    rows = []
    for c in cases:
        r = c.record
        row = {"id": r["id"], "engine": r["engine"], "gpu": r["gpu"], "metric": r["metric"],
               "measured": float(r["value"]), "held_out": held_out(r["id"]), "skip": c.skip}
        if not c.skip:
            row.update(gpu_class=c.klass, phase=c.phase, estimated=round(estimate(c), 3))
            row["error_pct"] = round(100 * (row["estimated"] / row["measured"] - 1), 2)
            row["loo_error_pct"] = round(100 * (leave_one_out(c, cases) / row["measured"] - 1), 2)
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> str:
    """Median |error| per engine, GPU class and phase, for the fit and the held-out records."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if not row["skip"]:
            groups.setdefault((row["engine"], row["gpu_class"], row["phase"]), []).append(row)
    shown = lambda errors: f"{statistics.median(errors):.1f}%" if errors else "-"  # noqa: E731
    lines = ["| engine | GPU class | phase | records (held out) | median abs error: fit | held out | each record "
             "left out |", "|---|---|---|---|---|---|---|"]
    for (engine, klass, phase), members in sorted(groups.items()):
        fit = [abs(m["error_pct"]) for m in members if not m["held_out"]]
        out = [abs(m["error_pct"]) for m in members if m["held_out"]]
        loo = [abs(m["loo_error_pct"]) for m in members]
        lines.append(f"| {engine} | {klass} | {phase} | {len(members)} ({len(out)}) | {shown(fit)} | {shown(out)} "
                     f"| {shown(loo)} |")
    engines = sorted({row["engine"] for row in rows if not row["skip"]})
    lines.append("")
    for engine in engines:
        for phase in ("decode", "prefill", "throughput"):
            members = [r for r in rows if not r["skip"] and r["engine"] == engine and r["phase"] == phase]
            if members:
                lines.append(f"{engine} {phase}: median abs error {shown([abs(r['error_pct']) for r in members])} "
                             f"over {len(members)} record(s); each left out of the derivation: "
                             f"{shown([abs(r['loo_error_pct']) for r in members])}")
    skipped = [row for row in rows if row["skip"]]
    if skipped:
        lines.append(f"\n{len(skipped)} record(s) not compared:")
        lines += [f"- {row['id']}: {row['skip']}" for row in skipped]
    return "\n".join(lines)


def write_results(rows: list[dict], path: Path = SPEED_RESULTS_CSV) -> None:
    names = ("id", "engine", "gpu", "gpu_class", "metric", "phase", "measured", "estimated", "error_pct",
             "loo_error_pct", "held_out", "skip")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({name: row.get(name, "") for name in names})


def load_results(path: Path = SPEED_RESULTS_CSV) -> list[dict]:
    """The committed comparison rows (for the Methodology page)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def run(derive_first: bool = False, write: bool = True) -> list[dict]:
    cases = [case(r) for r in load_records()]
    if derive_first:
        SPEED_JSON.write_text(json.dumps(derive(cases), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        speed._efficiency_table.cache_clear()
        speed.efficiency.cache_clear()
    rows = results(cases)
    if write:
        write_results(rows)
    return rows
