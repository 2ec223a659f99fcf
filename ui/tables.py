"""The tables the pages show, shaped as pandas DataFrames, and the rows behind them.

- `table_rows`: the rows of a page's table (16/8/4-bit and an optional extra weight format; or full / LoRA /
  QLoRA-8 / QLoRA-4), each with the function that recomputes it for any variant of the scenario.
- `scenario_frame`, `fit_frame`, `comparison_frame`: DataFrames in GB (10^9 B) or GiB, rounded for display:
  totals to 0.1 as in the reference document, components to 0.01.
- `sweep_values`, `describe`, `comparison_records`, `csv_text`: the x values of the memory curves, a default
  name for a compared scenario, and the JSON and CSV exports of the comparison.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from estimator.breakdown import Breakdown
from estimator.catalog import Gpu
from estimator.finetune import finetune_rows
from estimator.formats import CHECKPOINT, WEIGHT_FORMATS
from estimator.hardware import GpuFit
from estimator.inference import DETAILED_ROWS, estimate_inference, inference_rows
from estimator.scenarios import FinetuneScenario, InferenceScenario
from estimator.speed import servers
from ui.charts import unique_labels
from estimator.training import TECHNIQUE_LABELS
from estimator.units import in_unit
from ui.charts import COMPONENT_STYLE, short_gpu_name

Scenario = InferenceScenario | FinetuneScenario


@dataclass(frozen=True)
class TableRow:
    """One row of a page's table."""

    key: str  # "16-bit", "8-bit", "4-bit", "custom"; or "full", "lora", "qlora-8bit", "qlora-4bit"
    label: str  # what the table shows, e.g. "Inference (16-bit)", "QLoRA (4-bit)"
    short: str  # what a chart axis shows, e.g. "16-bit", "QLoRA (4-bit)"
    fn: Callable[[Scenario], Breakdown]  # the row for any variant of the scenario (other length, GPU count)


def table_rows(page: str, s: Scenario, extra_weights: str | None = None) -> tuple[TableRow, ...]:
    """The reference document's rows for the page, plus a row for `extra_weights` (a weight format id)."""
    if page == "finetune":
        return tuple(TableRow(key, TECHNIQUE_LABELS[key], TECHNIQUE_LABELS[key], fn) for key, fn in finetune_rows(s))
    rows = tuple(TableRow(key, *_inference_labels(s, key), fn) for key, fn in inference_rows(s))
    if extra_weights and not (extra_weights == CHECKPOINT and rows[0].key == CHECKPOINT):
        label = _inference_labels(s, CHECKPOINT)[1] if extra_weights == CHECKPOINT else \
            WEIGHT_FORMATS[extra_weights].label
        rows += (TableRow("custom", f"Inference ({label})", label, estimate_inference),)
    return rows


# The formats of the detailed method's 16/8/4-bit rows (estimator.inference.DETAILED_ROWS), named in their labels
ROW_FORMAT_NAMES = {"bf16": "BF16", "fp8": "FP8", "awq-4bit": "AWQ"}


def _inference_labels(s: Scenario, key: str) -> tuple[str, str]:
    """(table label, chart label) of an inference row: 'Inference (4-bit, AWQ)' / '4-bit AWQ' in the detailed
    method, which sizes each row in one format; the quick method's rows are the reference document's bits only;
    the checkpoint's row is named by its format."""
    if key != CHECKPOINT:
        fmt = dict(DETAILED_ROWS).get(key) if s.resolved_method == "detailed" else None
        if fmt is None:
            return f"Inference ({key})", key
        return f"Inference ({key}, {ROW_FORMAT_NAMES[fmt]})", f"{key} {ROW_FORMAT_NAMES[fmt]}"
    checkpoint = getattr(s.model, "checkpoint", None)  # its full description is in the assumptions
    stored = checkpoint.format_id if checkpoint is not None and checkpoint.format_id else "16-bit"
    return f"Inference (checkpoint, {stored})", "Checkpoint"


def selected_row(rows: Sequence[TableRow], key: str) -> TableRow:
    """The row with `key`, or the first one when the table has no such row (e.g. the extra row was removed)."""
    return next((row for row in rows if row.key == key), rows[0])


def _round(num_bytes: int, unit: str, digits: int) -> float:
    return round(in_unit(num_bytes, unit), digits)


def total_column(unit: str) -> str:
    return f"Required GPU Memory ({unit})"


TRAINING_COMPONENTS = ("weights", "gradients", "optimizer_states", "activations", "overhead")  # always shown
PHASE_CELLS = {}  # phase -> cell text, when it should differ from the phase's name (kept short: the table is wide)
PHASE_LINES = {"backward start": "backward start: activations alive, no gradients yet (0)",
               "optimizer step": "optimizer step: gradients complete, activations freed (0)",
               "backward end": "backward end: gradients complete, activations freed (0)",
               "backward recompute": "backward recompute: one layer rebuilt while gradients are nearly complete",
               "backward recompute, last layer": "backward recompute, last layer: rebuilt beside every "
                                                 "checkpointed input"}


def phase_line(rows: Sequence[tuple[str, Breakdown]]) -> str:
    """One short line under a training table saying what its peak phases hold ('' for inference)."""
    phases = list(dict.fromkeys(b.peak_phase for _, b in rows if b.peak_phase))
    return ("Peak phase: " + "; ".join(PHASE_LINES.get(p, p) for p in phases) + ".") if phases else ""


def scenario_frame(rows: Sequence[tuple[str, Breakdown]], unit: str = "GB") -> pd.DataFrame:
    """The reference document's table "Scenario | Required GPU Memory (GB)", then each component in the same
    unit (headers kept short so the table fits a narrow column); GPU count, all-GPU total and CPU memory only when
    some row has them, the peak phase only when rows differ in it (`phase_line` says it under the table).

    Training tables show weights, gradients, optimizer states, activations and overhead in every row, 0 where a
    component is not alive at the row's peak phase (gradients do not exist yet at backward start; activations
    are freed by the optimizer step), and the phase cell (or `phase_line`) says so. Other components appear when
    some row has them at the table's precision (0.01): an inference row's fp32 logits of a few MB would read 0.00."""
    training = any(b.peak_phase for _, b in rows)
    present = [name for name in COMPONENT_STYLE
               if (training and name in TRAINING_COMPONENTS) or any(_round(b.component(name), unit, 2)
                                                                    for _, b in rows)]
    records = []
    for label, b in rows:
        record = {"Scenario": label, total_column(unit): _round(b.total, unit, 1)}
        record.update({COMPONENT_STYLE[name][0]: _round(b.component(name), unit, 2) for name in present})
        if any(other.gpus > 1 for _, other in rows):
            record["GPUs"] = b.gpus
            record[f"All GPUs ({unit})"] = _round(b.total_all_gpus, unit, 1)
        if any(other.host_bytes for _, other in rows):
            record[f"CPU memory ({unit})"] = _round(b.host_bytes, unit, 1)
        if len({other.peak_phase for _, other in rows}) > 1:  # one phase for all: the line under the table says it
            record["Peak phase"] = PHASE_CELLS.get(b.peak_phase, b.peak_phase)
        records.append(record)
    return pd.DataFrame.from_records(records)


def fit_frame(fits: Sequence[GpuFit], unit: str = "GB") -> pd.DataFrame:
    """One line per GPU, smallest memory first: GPUs needed with the scenario's own sharding ("does not fit"
    when even 512 do not; the note then says how many would with ZeRO-3), headroom."""
    records = [{
        "GPU": fit.gpu.name,
        f"Usable ({unit})": _round(fit.gpu.memory_bytes, unit, 1),
        "GPUs needed": "does not fit" if fit.count is None else str(fit.count),
        "Fits on one": fit.count == 1,
        f"Per GPU ({unit})": _round(fit.per_gpu_bytes, unit, 1),
        f"Headroom ({unit})": _round(fit.headroom_bytes, unit, 1),
        "Note": fit.note,
    } for fit in sorted(fits, key=lambda fit: (fit.gpu.memory_bytes, fit.gpu.name))]
    return pd.DataFrame.from_records(records)


def fit_text(fit: GpuFit) -> str:
    """'1 x H100 SXM', '4 x H100 SXM (ZeRO-2)', 'does not fit on H100 SXM' or 'does not fit on RTX 4090 (ZeRO-3:
    4 GPUs)'."""
    name = short_gpu_name(fit.gpu.name)
    if fit.count is None:
        return f"does not fit on {name}" + (f" ({fit.note})" if fit.note else "")
    return f"{fit.count} x {name}" + (f" ({fit.note})" if fit.note else "")


def comparison_frame(entries: Sequence[tuple[str, Breakdown, GpuFit]], unit: str = "GB") -> pd.DataFrame:
    """Rows = components, totals and GPU fit; columns = scenarios (names made unique). Cells are text, since
    a column mixes sizes, counts and words."""
    names = unique_labels([name for name, _, _ in entries])  # DataFrame columns must differ
    present = [name for name in COMPONENT_STYLE if any(b.component(name) for _, b, _ in entries)]
    rows: dict[str, list[str]] = {f"{COMPONENT_STYLE[name][0]} ({unit})": [f"{in_unit(b.component(name), unit):,.2f}"
                                                                         for _, b, _ in entries] for name in present}
    rows[f"Total per GPU ({unit})"] = [f"{in_unit(b.total, unit):,.1f}" for _, b, _ in entries]
    rows["GPUs in the scenario"] = [str(b.gpus) for _, b, _ in entries]
    rows[f"Total, all GPUs ({unit})"] = [f"{in_unit(b.total_all_gpus, unit):,.1f}" for _, b, _ in entries]
    if any(b.host_bytes for _, b, _ in entries):
        rows[f"CPU memory per GPU ({unit})"] = [f"{in_unit(b.host_bytes, unit):,.1f}" for _, b, _ in entries]
    if entries:
        gpu = short_gpu_name(entries[0][2].gpu.name)
        rows[f"GPUs needed ({gpu})"] = [fit_text(fit) for _, _, fit in entries]
        rows[f"Headroom per {gpu} ({unit})"] = [f"{in_unit(fit.headroom_bytes, unit):,.1f}" for _, _, fit in entries]
    return pd.DataFrame.from_dict(rows, orient="index", columns=names)


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may run as a formula (OWASP CSV injection)
PLAIN_NUMBER = re.compile(r"[-+]?[0-9][0-9,]*(\.[0-9]+)?")


def csv_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: one starting like a formula gets a leading apostrophe, as OWASP
    recommends (https://owasp.org/www-community/attacks/CSV_Injection); numbers (e.g. -1.5) stay numbers."""
    if not text.startswith(FORMULA_PREFIXES) or PLAIN_NUMBER.fullmatch(text):
        return text
    return "'" + text


def csv_text(frame: pd.DataFrame) -> str:
    """The CSV download of a table of text cells, its headers and cells neutralised with `csv_cell`."""
    safe = frame.map(lambda cell: csv_cell(str(cell)))
    safe.columns = [csv_cell(str(name)) for name in frame.columns]
    safe.index = [csv_cell(str(name)) for name in frame.index]
    return safe.to_csv()


def comparison_records(entries: Sequence[tuple[str, Breakdown, GpuFit]],
                       links: Sequence[Mapping[str, str]]) -> list[dict]:
    """The JSON export: per scenario its name, link parameters, breakdown in bytes, GPU fit and assumptions."""
    return [{
        "name": name,
        "link_params": dict(link),
        **b.to_dict(),
        "fit": {"gpu": fit.gpu.id, "gpus_needed": fit.count, "per_gpu_bytes": fit.per_gpu_bytes,
                "headroom_bytes": fit.headroom_bytes, "note": fit.note},
        "assumptions": list(b.assumptions),
    } for (name, b, fit), link in zip(entries, links)]


def sweep_values(current: int, low: int, high: int) -> list[int]:
    """Powers of two from `low` up to `high`, then `high` and `current`: the x values of a memory curve."""
    values = {current, high}
    value = low
    while value <= high:
        values.add(value)
        value *= 2
    return sorted(values)


def describe(page: str, model_name: str, state: Mapping, row_label: str) -> str:
    """A default name for a compared scenario, e.g. 'Llama 3.1 8B · Inference (16-bit) · 8,192 tok x 4'."""
    if page == "inference":
        load = f"{state['seq_len']:,} tok × {state['concurrency']}"
    else:
        load = f"b{state['batch_size']} × {state['seq_len']:,} tok"
    return f"{model_name} · {row_label} · {load}"


def speed_frame(entries: Sequence[tuple[Gpu, int | None, object | None]], training: bool) -> pd.DataFrame:
    """One line per GPU: those that hold the row first, then those that do not, each lowest memory bandwidth first;
    the GPUs the row needs and its speed on them (`estimator.speed`: a Speed for inference, a TrainingSpeed for
    fine-tuning); empty cells where it does not fit. A GPU is named short with its memory, and with its variant in
    parentheses where two would read the same (Apple's M1 8 GB with 7 or 8 GPU cores); an inference count past one
    server says how many it spans ("16 (2 servers)": the network between them is not modelled)."""
    def short(gpu: Gpu) -> str:
        return f"{short_gpu_name(gpu.name)} {gpu.memory_gb:g} GB"

    shared = {label for label in map(short, (e[0] for e in entries))
              if sum(short(e[0]) == label for e in entries) > 1}
    records = []
    for gpu, count, rate in sorted(entries, key=lambda e: (e[1] is None, e[0].bandwidth_gb_s, e[0].name)):
        variant = " ".join(re.findall(r"\(.*?\)", gpu.name))
        spans = 1 if training or count is None else servers(gpu, count)
        line = {"GPU": f"{short(gpu)} {variant}" if short(gpu) in shared and variant else short(gpu),
                "GPUs": "does not fit" if count is None else f"{count} ({spans} servers)" if spans > 1 else str(count)}
        if training:
            epoch = getattr(rate, "epoch_time_s", None)
            line.update({"Tokens/s per GPU": getattr(rate, "tokens_per_s", None),
                         "Step (s)": getattr(rate, "step_time_s", None),
                         "Epoch (h)": None if epoch is None else epoch / 3600})
        else:
            line.update({"Decode (tokens/s)": getattr(rate, "decode_tokens_per_s", None),
                         "All sequences (tokens/s)": getattr(rate, "throughput_tokens_per_s", None),
                         "Prefill (tokens/s)": getattr(rate, "prefill_tokens_per_s", None),
                         "TTFT (s)": getattr(rate, "ttft_s", None)})
        records.append(line)
    frame = pd.DataFrame.from_records(records)
    if training and frame["Epoch (h)"].isna().all():  # no dataset size given: no epoch to show
        frame = frame.drop(columns="Epoch (h)")
    return frame
