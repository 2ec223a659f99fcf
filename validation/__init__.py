"""Validation harness: trace real Hugging Face model code with fake tensors and compare with the estimate.

    from validation import load_results, summary          # no torch needed
    rows = load_results()                                   # validation/results.csv, committed
    summary(rows)                                           # median and worst |error| per component

    from validation.trace import trace_inference, trace_training   # needs requirements-validation.txt
    from validation import run_matrix                               # python -m validation [--fast]

torch, transformers and peft are optional: importing this package does not import them, and
`missing_dependencies()` / `install_hint()` say what to install.
"""

from __future__ import annotations

import csv
import importlib.util
import statistics
from pathlib import Path

RESULTS_CSV = Path(__file__).with_name("results.csv")
ENGINE_RESULTS_CSV = Path(__file__).with_name("engine_results.csv")
REQUIREMENTS = "requirements-validation.txt"
OPTIONAL_PACKAGES = ("torch", "transformers", "peft")


def missing_dependencies() -> list[str]:
    """The optional packages tracing needs that are not installed."""
    return [name for name in OPTIONAL_PACKAGES if importlib.util.find_spec(name) is None]


def install_hint(missing: list[str] | None = None) -> str:
    """One paragraph telling the user how to install what tracing needs."""
    missing = missing_dependencies() if missing is None else missing
    names = list(missing) or list(OPTIONAL_PACKAGES)
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return (f"Tracing needs {listed}, which the estimator itself does not. Install the pinned versions with\n"
            f"    pip install -r {REQUIREMENTS}\n"
            "(torch==2.13.0 there should be the CPU build: where pip would pick the multi-GB CUDA wheel, install\n"
            "torch 2.13.0 from PyTorch's CPU-only wheel index first).")


def require_dependencies() -> None:
    """Raise ImportError with `install_hint()` when an optional package is missing."""
    missing = missing_dependencies()
    if missing:
        raise ImportError(install_hint(missing))


def load_results(path: str | Path = RESULTS_CSV) -> list[dict]:
    """Rows of results.csv with typed values: case, family, scenario, component (str), estimate_bytes,
    measured_bytes (int), error_pct (float). Needs no torch."""
    with open(path, newline="", encoding="utf-8") as f:
        return [{**r, "estimate_bytes": int(r["estimate_bytes"]), "measured_bytes": int(r["measured_bytes"]),
                 "error_pct": float(r["error_pct"])} for r in csv.DictReader(f)]


def load_engine_results(path: str | Path = ENGINE_RESULTS_CSV) -> list[dict]:
    """Rows of engine_results.csv (`python -m validation engines`: each engine's estimate next to what a published
    start-up log printed) with typed values: logged, estimate, error_pct (float)."""
    with open(path, newline="", encoding="utf-8") as f:
        return [{**r, "logged": float(r["logged"]), "estimate": float(r["estimate"]),
                 "error_pct": float(r["error_pct"])} for r in csv.DictReader(f)]


SPLIT_BY_KIND = ("activations", "logits", "peak")  # different quantities in inference and training rows


def summary(rows: list[dict], include_variants: bool = False) -> dict[str, dict]:
    """{component: {"cases", "median_abs_error_pct", "worst_error_pct", "worst_case"}} over the rows
    (variants, whose settings the estimator cannot express, are left out unless asked for). Activations,
    logits and peak are summarised separately for inference and training: "peak (inference)"."""
    by_component: dict[str, list[dict]] = {}
    for r in rows:
        if r["measured_bytes"] == 0 and r["estimate_bytes"] == 0:
            continue
        if not include_variants and "[variant:" in r["scenario"]:
            continue
        name = r["component"]
        if name in SPLIT_BY_KIND:
            name = f"{name} ({r['scenario'].split(' ', 1)[0]})"
        by_component.setdefault(name, []).append(r)
    out = {}
    for name, items in by_component.items():
        worst = max(items, key=lambda r: abs(r["error_pct"]))
        out[name] = {"cases": len(items), "median_abs_error_pct": statistics.median(abs(r["error_pct"]) for r in items),
                     "worst_error_pct": worst["error_pct"], "worst_case": worst["case"]}
    return out


def summary_markdown(rows: list[dict]) -> str:
    """The summary as a Markdown table (for the README)."""
    lines = ["| component | cases | median abs. error | worst error (case) |", "|---|---:|---:|---|"]
    for name, s in summary(rows).items():
        lines.append(f"| {name} | {s['cases']} | {s['median_abs_error_pct']:.2f}% | "
                     f"{s['worst_error_pct']:+.2f}% ({s['worst_case']}) |")
    return "\n".join(lines)


def run_matrix(fast: bool = False, write=None, only=(), log=None) -> list[dict]:
    """Trace the validation matrix and compare (see `validation.matrix.run_matrix`); needs the optional packages."""
    require_dependencies()
    from .matrix import run_matrix as _run

    return _run(fast=fast, write=write, only=only, log=log)


__all__ = ["RESULTS_CSV", "install_hint", "load_results", "missing_dependencies", "require_dependencies",
           "run_matrix", "summary", "summary_markdown"]
