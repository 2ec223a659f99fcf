"""Compare the fine-tuning estimate with published peaks of framework recipes (published/training_recipes.json).

    python -m validation recipes            # per-record errors -> validation/recipes_results.csv, and a summary

Each record states the model, method, rank, targets, batch, sequence length and the framework; the estimate runs
with that framework's preset (`estimator.frameworks.with_framework`) under the record's own settings. What the
measurement could see decides what is compared:
    capacity         the longest run that fits a card: its peak is the card's memory; the estimate keeps its default
                     runtime overhead (CUDA context, allocator caching)
    torch allocator  torch.cuda memory statistics: no CUDA context (overhead 0) and no memory bitsandbytes' paged
                     optimizers allocate as CUDA managed memory (their states are left out)
    unstated         compared as capacity is
A record that ran older code than the preset follows, or an option the preset leaves at its default, sets that field
itself (`RECORD_SETTINGS`: the loss of transformers 4.46-4.47, torchtune's compiled loss), with the reason and its
source in `settings_reason`; the CSV's record_settings column lists them.
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import estimator as est
from estimator import catalog
from estimator.finetune import detailed_finetune
from estimator.frameworks import with_framework
from estimator.scenarios import DEFAULT_OVERHEAD_GB
from estimator.training import optimizer
from estimator.units import GiB

RECORDS = Path(__file__).parent / "published" / "training_recipes.json"
RESULTS = Path(__file__).parent / "recipes_results.csv"
FIELDS = ("record", "framework", "model", "technique", "batch", "seq_len", "measured_gib", "estimate_gib", "error_pct",
          "peak_phase", "measured_by", "record_settings", "source")
SETTINGS = ("technique", "batch_size", "seq_len", "lora_rank", "lora_targets", "grad_accum", "num_gpus", "zero_stage")
# fields a record sets over its framework's preset: older code, or an option the preset leaves at its default (the
# record's `settings_reason` says which, with the source)
RECORD_SETTINGS = ("loss",)


def load_records() -> list[dict]:
    return json.loads(RECORDS.read_text())["records"]


def scenario(record: dict) -> est.FinetuneScenario:
    """The record's settings over its framework's preset."""
    given = {key: record[key] for key in SETTINGS + RECORD_SETTINGS if key in record}
    overhead = 0.0 if record["measured_by"] == "torch allocator" else DEFAULT_OVERHEAD_GB
    fields = with_framework({"framework": record["framework"], **given, "overhead_gb": overhead})
    return est.FinetuneScenario(catalog.model(record["model"]).architecture, **fields)


def compare(record: dict) -> dict:
    s = scenario(record)
    row = detailed_finetune(s, s.technique)
    estimate = row.total
    if record["measured_by"] == "torch allocator" and optimizer(s.optimizer).paged:
        estimate -= row.component("optimizer_states")  # managed memory, invisible to torch's statistics
    measured = record["measured_gib"] * GiB
    return {"record": record["id"], "framework": record["framework"], "model": record["model"],
            "technique": s.technique, "batch": s.batch_size, "seq_len": s.seq_len,
            "measured_gib": record["measured_gib"], "estimate_gib": round(estimate / GiB, 2),
            "error_pct": round(100 * (estimate - measured) / measured, 1), "peak_phase": row.peak_phase,
            "measured_by": record["measured_by"],
            "record_settings": " ".join(f"{key}={record[key]}" for key in RECORD_SETTINGS if key in record),
            "source": record["source"]}


def run(write: bool = True) -> list[dict]:
    rows = [compare(record) for record in load_records()]
    if write:
        with RESULTS.open("w", newline="") as out:
            writer = csv.DictWriter(out, FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    return rows


def summary(rows: list[dict]) -> str:
    """A markdown table: median and worst absolute error per framework, and over every record."""
    lines = ["| framework | records | median abs. error | median signed error | worst |", "|---|---|---|---|---|"]
    groups = sorted({row["framework"] for row in rows})
    for name, group in [(g, [r for r in rows if r["framework"] == g]) for g in groups] + [("all", rows)]:
        errors = [row["error_pct"] for row in group]
        worst = max(group, key=lambda row: abs(row["error_pct"]))
        lines.append(f"| {name} | {len(group)} | {statistics.median(abs(e) for e in errors):.1f}% | "
                     f"{statistics.median(errors):+.1f}% | {worst['error_pct']:+.1f}% ({worst['record']}) |")
    return "\n".join(lines)
