"""llama.cpp with weights in host RAM against published speeds (validation/published/host_speed.csv): derive the
achieved fractions, report the errors. Run with `python -m validation speed` (`--derive` writes the fractions into
estimator/data/speed.json as "host_compute").

Rule:
- "decode": the fraction of the host RAM's peak (the record's `host_memory_gb_s`, from its stated channels and
  transfer rate) the CPU reaches streaming weights for one token: bytes / (seconds a token x peak), over CPU-only
  decode records (no GPU: every weight matrix but the token embedding's rows is read from RAM, a MoE's experts the
  fraction one token routes to, estimator.speed.experts_touched). Records with a GPU do not set it: they are the check.
- "copy" (not derived, `derivable` says why): the fraction of the host link's peak op offload reaches copying a prompt's
  host weights to the GPU (each ubatch its dense matrices and the experts it uses, estimator.speed.host_copy_seconds)
  would be copied bytes / ((measured prompt time - the estimate's prompt time without the copy) x link peak); it is
  reported per record (`achieved`) and the estimate prices the copy at the link's peak.
The decode fraction is the median over the records not held out (speed.held_out's crc rule), with at least
MIN_RECORDS of them; its range the lowest and highest. Every record is then compared with the whole serving
estimate (estimator.speed.serve_speed for its llama.cpp settings: decode at tg128, prefill at pp512) where it has a
GPU, and CPU-only decode records with the RAM's time alone; and with the fractions derived from every other record
(left out).
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from estimator import catalog, speed
from estimator.engines import ServeScenario, serve
from estimator.engines.llama_cpp import host_matrices

from .speed import gpu_of, held_out, model_of, weight_format_id

HOST_CSV = Path(__file__).parent / "published" / "host_speed.csv"
HOST_RESULTS_CSV = Path(__file__).with_name("host_speed_results.csv")
MIN_RECORDS = 3
DECODE_METRICS, PREFILL_METRICS = ("llama_bench_tg", "server_tg"), ("llama_bench_pp", "server_pp")
UBATCH = 512  # llama-bench's and llama-server's default -ub
CPU_ONLY_GPU = "rtx-4090"  # a CPU-only record's scenario needs a GPU id; -ngl 0 leaves every matrix in host RAM


@dataclass(frozen=True)
class HostCase:
    record: dict
    scenario: ServeScenario | None  # None: skipped
    skip: str = ""

    @property
    def cpu_only(self) -> bool:
        return int(self.record["gpus"] or 0) == 0

    @property
    def phase(self) -> str:
        return "decode" if self.record["metric"] in DECODE_METRICS else "prefill"

    def touched(self, tokens: int) -> float:
        dense, expert = host_matrices(self.scenario)
        return dense + expert * speed.experts_touched(self.scenario.model, tokens)

    def seconds(self) -> float:
        """The measured time of a token (decode) or of the prompt (prefill)."""
        value = float(self.record["value"])
        return 1 / value if self.phase == "decode" else int(self.record["n_tokens"]) / value


def load(path: Path = HOST_CSV) -> list[dict]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def case(r: dict) -> HostCase:
    if speed.ENGINE_FAMILY.get(r["engine"], r["engine"]) != "llama.cpp":
        return HostCase(r, None, f"{r['engine']}: not llama.cpp's kernels (a fork with its own CPU quants and "
                                 "repacking), and no engine of the estimator")
    model, why = model_of(r["model"])
    weights = weight_format_id(r["weights"])
    gpu, why_gpu = (catalog.gpu(CPU_ONLY_GPU), "") if int(r["gpus"] or 0) == 0 else gpu_of(r["gpu"])
    if model is None or gpu is None or weights is None:
        return HostCase(r, None, why or why_gpu or f"weights {r['weights']} not in the formats")
    if not r["host_memory_gb_s"]:
        return HostCase(r, None, "the source states no RAM configuration to size its peak from")
    if r["metric"] not in DECODE_METRICS + PREFILL_METRICS:
        return HostCase(r, None, f"metric {r['metric']}")
    if int(r["gpus"] or 0) == 0 and r["metric"] not in DECODE_METRICS:
        return HostCase(r, None, "CPU-only prefill: the CPU's FLOPs are not modelled")
    fields = dict(engine="llama.cpp", gpu=gpu.id, weights=weights, max_model_len=4096, max_num_seqs=1,
                  host_memory_gb_s=float(r["host_memory_gb_s"]),
                  n_gpu_layers=0 if int(r["gpus"] or 0) == 0 else int(r["n_gpu_layers"] or 99),
                  n_cpu_moe=int(r["n_cpu_moe"] or 0), override_tensor=r["override_tensor"],
                  tensor_parallel=max(1, int(r["gpus"] or 1)), flash_attention=r["flash_attn"] in ("1", "on", "true"))
    try:
        s = ServeScenario(model, **fields)
    except ValueError as err:
        return HostCase(r, None, f"scenario refused: {err}")
    c = HostCase(r, s)
    if c.touched(1) == 0:
        return HostCase(r, None, "no weight matrix in host memory under these settings")
    return c


def cases(records: list[dict] | None = None) -> list[HostCase]:
    return [case(r) for r in (load() if records is None else records)]


def _gpu_only(c: HostCase) -> speed.Speed:
    """The serving estimate's speeds without the host time."""
    return speed.serve_speed(c.scenario, serve(c.scenario), host=False)


def achieved(c: HostCase) -> float:
    r = c.record
    if c.phase == "decode":  # CPU-only: the token's whole time is the CPU's; with a GPU, what its part leaves
        cpu_s = c.seconds()
        if not c.cpu_only:
            plain = _gpu_only(c)
            cpu_s -= 1 / plain.decode_tokens_per_s - speed.gpu_read_seconds(c.touched(1), plain,
                                                                            c.scenario.tensor_parallel)
        return c.touched(1) / cpu_s / (float(r["host_memory_gb_s"]) * 1e9)
    tokens = int(r["n_tokens"])
    copied = speed.ubatch_copy_bytes(c.touched, tokens, UBATCH)
    gpu_s = tokens / _gpu_only(c).prefill_tokens_per_s
    added = c.seconds() - gpu_s
    return copied / added / (catalog.gpu(c.scenario.gpu).host_link_gb_s * 1e9) if added > 0 else float("nan")


def derivable(c: HostCase) -> str:
    """The host phase the record sets, or ''. Prompts set none: under the byte count of `achieved` (every expert a
    uniformly routed ubatch touches) the RTX 4070 prompts reach 1.34-1.54 of PCIe 4.0's peak, more than the link can
    carry, and the RTX 5090 ones 0.51-0.64 of PCIe 5.0's; a median of the two would describe neither. The estimate
    keeps the link's peak (estimator.speed.LINK_PEAK) and these rows are compared against it."""
    if c.scenario is None or held_out(c.record["id"]) or c.phase != "decode":
        return ""
    return "decode" if c.cpu_only else ""


def derive(members: list[HostCase]) -> list[dict]:
    """speed.json's "host_compute": per (engine, phase), the median achieved fraction of the records that set it."""
    keys: dict[tuple[str, str], list[float]] = {}
    ids: dict[tuple[str, str], list[str]] = {}
    for c in members:
        phase = derivable(c)
        if phase:
            value = achieved(c)
            if value == value and value > 0:  # not NaN: the prompt took longer than its GPU part
                keys.setdefault(("llama.cpp", phase), []).append(value)
                ids.setdefault(("llama.cpp", phase), []).append(c.record["id"])
    return [{"engine": engine, "phase": phase, "value": round(statistics.median(values), 4),
             "range": [round(min(values), 4), round(max(values), 4)], "records": sorted(ids[(engine, phase)])}
            for (engine, phase), values in sorted(keys.items()) if len(values) >= MIN_RECORDS]


def estimate(c: HostCase, table: dict | None = None) -> float | None:
    """The record's metric as the estimate gives it (tokens/s), or None where a fraction it needs is missing."""
    r = c.record
    table = speed._host_compute() if table is None else table
    if c.cpu_only:
        found = speed.host_decode_seconds(c.touched(1), float(r["host_memory_gb_s"]), "llama.cpp", table)
        return 1 / found[0] if found is not None else None
    plain = _gpu_only(c)
    if c.phase == "decode":
        found = speed.host_decode_seconds(c.touched(1), float(r["host_memory_gb_s"]), "llama.cpp", table)
        if found is None:
            return None
        saved = speed.gpu_read_seconds(c.touched(1), plain, c.scenario.tensor_parallel)
        return 1 / (1 / plain.decode_tokens_per_s - saved + found[0])
    tokens = int(r["n_tokens"])
    found = speed.host_copy_or_peak(speed.ubatch_copy_bytes(c.touched, tokens, UBATCH),
                                    catalog.gpu(c.scenario.gpu), "llama.cpp", table)
    return tokens / (tokens / plain.prefill_tokens_per_s + found[0])


def results(members: list[HostCase]) -> list[dict]:
    table = speed.host_compute_table({"host_compute": derive(members)})
    rows = []
    for c in members:
        r = c.record
        row = {"id": r["id"], "gpu": r["gpu"], "gpus": r["gpus"], "model": r["model"], "weights": r["weights"],
               "metric": r["metric"], "value": float(r["value"]), "held_out": held_out(r["id"]), "skip": c.skip}
        if c.scenario is not None:
            others = speed.host_compute_table({"host_compute": derive([o for o in members if o is not c])})
            estimated, left_out = estimate(c, table), estimate(c, others)
            row.update(setting="cpu-only" if c.cpu_only else "gpu + host", phase=c.phase,
                       host_gib=round(c.touched(1) / 2**30, 3), achieved=round(achieved(c), 4))
            if estimated is not None:
                row.update(estimated=round(estimated, 3), error_pct=round(100 * (estimated / row["value"] - 1), 2))
            if left_out is not None:
                row["loo_error_pct"] = round(100 * (left_out / row["value"] - 1), 2)
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> str:
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if "error_pct" in row:
            groups.setdefault((row["setting"], row["phase"]), []).append(row)

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.1f}%" if values else "-"

    lines = ["llama.cpp with weights in host RAM (validation/published/host_speed.csv):", "",
             "| setting | phase | records (held out) | fit | held out | each record left out |",
             "|---|---|---|---|---|---|"]
    for (setting, phase), members in sorted(groups.items()):
        fit = [abs(m["error_pct"]) for m in members if not m["held_out"]]
        out = [abs(m["error_pct"]) for m in members if m["held_out"]]
        loo = [abs(m["loo_error_pct"]) for m in members if "loo_error_pct" in m]
        lines.append(f"| {setting} | {phase} | {len(members)} ({len(out)}) | {med(fit)} | {med(out)} | {med(loo)} |")
    skipped = [row for row in rows if row["skip"]]
    lines += ["", f"{len(rows) - len(skipped)} of {len(rows)} records compared"]
    lines += [f"- {row['id']}: {row['skip']}" for row in skipped]
    return "\n".join(lines)


def write_results(rows: list[dict], path: Path = HOST_RESULTS_CSV) -> None:
    fields = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
