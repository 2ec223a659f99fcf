"""Weights read from host memory (vLLM --cpu-offload-gb) against published measurements
(validation/published/offload.csv): derive the achieved fraction of the host link's peak, report the errors.
Run with `python -m validation speed` (`--derive` writes the fraction into estimator/data/speed.json as
"host_offload").

Rule: each record is a TPOT or a TTFT at one offload budget with the same cell measured without offload
(`baseline_value`: same model, GPU, engine, concurrency and request shape), so the time offloading adds to a forward
is the difference, and the bytes it reads are the engine's own offloaded bytes for the record's settings (the serving
estimate's `host_bytes`: vLLM's UVAOffloader moves whole parameters of the decoder layers until the budget is
reached, estimator/engines/base.py offloaded_bytes). Achieved fraction = bytes / (added seconds x the GPU's host link
peak, catalog host_link_gb_s); the engine's fraction is the median over its records that are not held out
(speed.held_out's crc rule), with their lowest and highest as its range. Every record is then compared with the whole
estimate: the forward on the GPU alone (speed.inference_speed at the record's concurrency, prompt and the middle of
its output, the client-timed TTFT with the engine's cost per request) plus the offloaded bytes at the derived
fraction (speed.host_offload_seconds), and with the fraction derived from every other record (left out).
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from estimator import speed
from estimator.engines import ServeScenario, serve

from .speed import gpu_of, held_out, model_of, weight_format_id

OFFLOAD_CSV = Path(__file__).parent / "published" / "offload.csv"
OFFLOAD_RESULTS_CSV = Path(__file__).with_name("offload_results.csv")


@dataclass(frozen=True)
class OffloadCase:
    record: dict
    scenario: ServeScenario
    offloaded: float  # bytes one GPU reads from host memory in a forward

    @property
    def added_s(self) -> float:
        """What offloading added to the measured time, in seconds."""
        return (float(self.record["value"]) - float(self.record["baseline_value"])) / 1e3

    def achieved(self) -> float:
        return self.offloaded / self.added_s / (speed.catalog_gpu(self.scenario.gpu).host_link_gb_s * 1e9)


def load(path: Path = OFFLOAD_CSV) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def case(record: dict) -> OffloadCase:
    model, why = model_of(record["model"])
    gpu, why_gpu = gpu_of(record["gpu"])
    if model is None or gpu is None:
        raise ValueError(f"{record['id']}: {why or why_gpu}")
    s = ServeScenario(model, engine=record["engine"], gpu=gpu.id, engine_version=record["engine_version"],
                      weights=weight_format_id(record["weights"]), cpu_offload_gb=float(record["cpu_offload_gb"]),
                      gpu_memory_utilization=float(record["gpu_memory_utilization"]),
                      max_model_len=int(record["max_model_len"]))
    return OffloadCase(record, s, speed.offloaded_per_forward(s, serve(s)))


def cases(records: list[dict] | None = None) -> list[OffloadCase]:
    return [case(r) for r in (load() if records is None else records)]


def derive(members: list[OffloadCase]) -> list[dict]:
    """speed.json's "host_offload": per engine, the median achieved fraction of its records not held out."""
    engines: dict[str, list[OffloadCase]] = {}
    for c in members:
        if not held_out(c.record["id"]):
            engines.setdefault(speed.engine_key(c.record["engine"], c.record["engine_version"]), []).append(c)
    out = []
    for engine, fit in sorted(engines.items()):
        fractions = [c.achieved() for c in fit]
        out.append({"engine": engine, "value": round(statistics.median(fractions), 4),
                    "range": [round(min(fractions), 4), round(max(fractions), 4)],
                    "records": sorted(c.record["id"] for c in fit)})
    return out


def estimate(c: OffloadCase, table: dict[str, speed.Efficiency] | None = None) -> float:
    """The record's metric (ms) as the serving estimate gives it: the GPU's forward + the offloaded bytes' time."""
    r, s = c.record, c.scenario
    conc, prompt, out = int(r["concurrency"]), int(r["input_tokens"]), int(r["output_tokens"])
    engine = speed.engine_key(r["engine"], r["engine_version"])
    g = speed.catalog_gpu(s.gpu)
    gpu_only = speed.inference_speed(s.model, g, s.weights, s.kv_dtype, s.tensor_parallel, conc, prompt,
                                     prompt + out // 2, engine, client=True)
    host = speed.host_offload_seconds(c.offloaded, g, engine, table)
    extra = host[0] if host is not None else 0.0
    if r["metric"] == "ttft_ms":
        return (gpu_only.ttft_s + extra) * 1e3
    return (1 / gpu_only.decode_tokens_per_s + extra) * 1e3


def results(members: list[OffloadCase]) -> list[dict]:
    table = speed.host_offload_table({"host_offload": derive(members)})
    rows = []
    for c in members:
        r = c.record
        others = speed.host_offload_table({"host_offload": derive([o for o in members if o is not c])})
        estimated, left_out = estimate(c, table), estimate(c, others)
        measured = float(r["value"])
        rows.append({"id": r["id"], "engine": r["engine"], "gpu": r["gpu"], "metric": r["metric"],
                     "concurrency": r["concurrency"], "cpu_offload_gb": r["cpu_offload_gb"],
                     "offloaded_gib": round(c.offloaded / 2**30, 3), "achieved": round(c.achieved(), 4),
                     "measured": measured, "estimated": round(estimated, 3),
                     "error_pct": round(100 * (estimated / measured - 1), 2),
                     "loo_error_pct": round(100 * (left_out / measured - 1), 2), "held_out": held_out(r["id"])})
    return rows


def summary(rows: list[dict]) -> str:
    """Median |error| by metric and concurrency class, fit / held out / each record left out."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        one = "1" if row["concurrency"] == "1" else "2-16"
        groups.setdefault((row["engine"], row["metric"], one), []).append(row)

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.1f}%" if values else "-"

    lines = ["Weights read from host memory (vLLM --cpu-offload-gb; validation/published/offload.csv):", "",
             "| engine | metric | concurrency | records (held out) | fit | held out | each record left out |",
             "|---|---|---|---|---|---|---|"]
    for (engine, metric, conc), members in sorted(groups.items()):
        fit = [abs(m["error_pct"]) for m in members if not m["held_out"]]
        out = [abs(m["error_pct"]) for m in members if m["held_out"]]
        lines.append(f"| {engine} | {metric} | {conc} | {len(members)} ({len(out)}) | {med(fit)} | {med(out)} | "
                     f"{med([abs(m['loo_error_pct']) for m in members])} |")
    return "\n".join(lines)


def write_results(rows: list[dict], path: Path = OFFLOAD_RESULTS_CSV) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
