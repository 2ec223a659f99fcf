"""Command line: `python -m estimator inference|finetune|params|models|gpus [--json]`.

The same scenarios and functions as the web app, so the numbers are the same. This interface is relied on
by users' scripts: option names, JSON keys and exit codes are stable (errors: message on stderr, exit 2).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from . import catalog
from .architecture import Architecture, parameter_counts
from .breakdown import COMPONENTS, Breakdown
from .finetune import estimate_finetune, finetune_rows
from .formats import WEIGHT_FORMATS
from .hardware import fit, max_seq_len, with_gpus
from .hf_config import MAX_CONFIG_CHARS, architecture_from_config, parse_config_text
from .inference import estimate_inference, inference_rows
from .kv_cache import KV_DTYPE_BYTES, kv_bytes_per_token
from .scenarios import DEFAULT_OVERHEAD_GB, METHODS, FinetuneScenario, InferenceScenario, Model, ParamCount
from .training import OPTIMIZER_IMPLS, OPTIMIZERS, REGIMES, TECHNIQUES
from .units import GB


class UsageError(Exception):
    """A user error the CLI reports on stderr with exit code 2."""


def _model_options(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("model (one of)")
    src.add_argument("--params", type=float, metavar="B", help="total parameters in billions (quick method)")
    src.add_argument("--active-params", type=float, metavar="B", help="active parameters in billions (MoE)")
    src.add_argument("--model", metavar="ID", help="catalog model id (see `models`)")
    src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json")


def _shared_options(p: argparse.ArgumentParser) -> None:
    _model_options(p)
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="quick (reference rule of thumb) or detailed (architecture); default: detailed when known")
    p.add_argument("--batch", type=int, default=1, help="sequences per batch (default 1)")
    p.add_argument("--seq-len", type=int, default=2048, help="tokens per sequence (default 2048)")
    p.add_argument("--no-flash-attention", action="store_true", help="eager attention (s x s scores)")
    p.add_argument("--overhead-gb", type=float, default=DEFAULT_OVERHEAD_GB, help="runtime overhead per GPU")
    p.add_argument("--gpu", metavar="ID", help="catalog GPU to check the fit on (see `gpus`)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m estimator", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    inf = sub.add_parser("inference", help="memory to serve a model")
    _shared_options(inf)
    inf.add_argument("--concurrency", type=int, default=1, help="concurrent requests (default 1)")
    inf.add_argument("--weights", choices=list(WEIGHT_FORMATS), help="one weight format instead of the 16/8/4-bit table")
    inf.add_argument("--kv-dtype", choices=list(KV_DTYPE_BYTES), default="bf16")
    inf.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs")
    inf.add_argument("--prefill-chunk", type=int, default=0,
                     help="tokens per prefill forward (vLLM max_num_batched_tokens); 0 = whole sequence")

    ft = sub.add_parser("finetune", help="memory to fine-tune a model")
    _shared_options(ft)
    ft.add_argument("--technique", choices=TECHNIQUES, help="one technique instead of the full/LoRA/QLoRA table")
    ft.add_argument("--optimizer", choices=list(OPTIMIZERS), default="adamw")
    ft.add_argument("--param-bits", type=int, choices=(32, 16, 8, 4), default=16, help="quick: weight precision")
    ft.add_argument("--regime", choices=list(REGIMES), default="pure-16bit")
    ft.add_argument("--optimizer-state-bits", type=int, choices=(32, 16), default=32)
    ft.add_argument("--optimizer-impl", choices=OPTIMIZER_IMPLS, default="fused",
                    help="torch optimizer step: fused (no temporaries), foreach (CUDA default), single-tensor")
    ft.add_argument("--adapter-bits", type=int, choices=(32, 16), default=32,
                    help="LoRA weights in fp32 (peft's default) or 16-bit")
    ft.add_argument("--lora-rank", type=int, default=16)
    ft.add_argument("--lora-targets", default="q,v", help="q,v | attention | all-linear | NAMES")
    ft.add_argument("--grad-checkpointing", action="store_true")
    ft.add_argument("--gpus", type=int, default=1, help="data-parallel GPUs")
    ft.add_argument("--zero", type=int, choices=(0, 1, 2, 3), default=0, help="ZeRO stage (FSDP: 3 = FULL_SHARD)")
    ft.add_argument("--offload-optimizer", action="store_true")

    params = sub.add_parser("params", help="parameter counts and KV bytes per token of an architecture")
    params.add_argument("--model", metavar="ID")
    params.add_argument("--config", metavar="PATH")
    params.add_argument("--json", action="store_true")

    tr = sub.add_parser("trace", help="measure a scenario by running the real HF model code with fake tensors "
                                      "(needs requirements-validation.txt)")
    tr.add_argument("kind", choices=("inference", "training"))
    tr.add_argument("--model", metavar="ID")
    tr.add_argument("--config", metavar="PATH")
    tr.add_argument("--batch", type=int, default=1)
    tr.add_argument("--seq-len", type=int, default=512, help="training sequence or inference prompt length")
    tr.add_argument("--concurrency", type=int, default=1)
    tr.add_argument("--decode-steps", type=int, default=16)
    tr.add_argument("--technique", choices=("full", "lora"), default="full")
    tr.add_argument("--lora-rank", type=int, default=16)
    tr.add_argument("--lora-targets", default="q,v")
    tr.add_argument("--grad-checkpointing", action="store_true")
    tr.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa")
    tr.add_argument("--layers", metavar="LO,HI", help="trace LO and HI layers at full width and extrapolate "
                                                        "(for large models, e.g. 2,3)")
    tr.add_argument("--json", action="store_true")

    val = sub.add_parser("validate", help="run the validation matrix and print its summary")
    val.add_argument("--fast", action="store_true", help="only the small CI subset")
    val.add_argument("--summary", action="store_true", help="summarise the committed results without tracing")

    for name, text in (("models", "the model catalog"), ("gpus", "the GPU catalog")):
        sub.add_parser(name, help=f"list {text}").add_argument("--json", action="store_true")
    return parser


def _read_config(path: str) -> Architecture:
    return architecture_from_config(_read_config_dict(path), Path(path).parent.name or Path(path).stem)


def _read_config_dict(path: str) -> dict:
    """A config.json file's parsed fields. Only a regular file is read: it is opened without blocking and
    checked on the open descriptor, so a FIFO, a device or a directory is refused at once, never waited on."""
    if not path:
        raise UsageError("--config needs the path of a config.json file")
    too_large = UsageError(f"{path}: config.json is too large (limit {MAX_CONFIG_CHARS:,} bytes)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise UsageError(f"{path}: not a regular file; give the path of a config.json")
            if info.st_size > MAX_CONFIG_CHARS:
                raise too_large
            text = handle.read(MAX_CONFIG_CHARS + 1)  # the file may have grown since fstat
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
    if len(text) > MAX_CONFIG_CHARS:
        raise too_large
    return parse_config_text(text)


def _model(args: argparse.Namespace) -> Model:
    given = [flag for flag, value in (("--params", getattr(args, "params", None)), ("--model", args.model),
                                      ("--config", args.config)) if value is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of --params, --model or --config" if given or hasattr(args, "params")
                         else "give --model or --config")
    if args.config is not None:
        return _read_config(args.config)
    if args.model is not None:
        return catalog.model(args.model).architecture
    return ParamCount.from_billions(args.params, args.active_params)


def _inference_scenario(args: argparse.Namespace) -> InferenceScenario:
    return InferenceScenario(
        model=_model(args), weights=args.weights or "bf16", kv_dtype=args.kv_dtype, batch_size=args.batch,
        concurrency=args.concurrency, seq_len=args.seq_len, flash_attention=not args.no_flash_attention,
        tensor_parallel=args.tp, prefill_chunk=args.prefill_chunk, overhead_gb=args.overhead_gb, method=args.method)


def _finetune_scenario(args: argparse.Namespace) -> FinetuneScenario:
    return FinetuneScenario(
        model=_model(args), technique=args.technique or "full", optimizer=args.optimizer, param_bits=args.param_bits,
        regime=args.regime, optimizer_state_bits=args.optimizer_state_bits, optimizer_impl=args.optimizer_impl,
        adapter_bits=args.adapter_bits, batch_size=args.batch,
        seq_len=args.seq_len, lora_rank=args.lora_rank, lora_targets=args.lora_targets,
        gradient_checkpointing=args.grad_checkpointing, flash_attention=not args.no_flash_attention,
        num_gpus=args.gpus, zero_stage=args.zero, offload_optimizer=args.offload_optimizer,
        overhead_gb=args.overhead_gb, method=args.method)


def scenario_inputs(s: InferenceScenario | FinetuneScenario) -> dict:
    """The scenario's fields as JSON values; the model as its counts (and name when known)."""
    inputs = {name: value for name, value in vars(s).items() if name != "model"}
    total, active = (parameter_counts(s.model).total, parameter_counts(s.model).active) \
        if isinstance(s.model, Architecture) else (s.model.total_params, s.model.active_params)
    inputs["model"] = {"name": s.model.name, "total_params": total, "active_params": active}
    inputs["method"] = s.resolved_method
    return inputs


def _rows(args: argparse.Namespace) -> tuple[InferenceScenario | FinetuneScenario, tuple[tuple[str, object], ...]]:
    """The scenario and its (label, row function) pairs: one row when a format/technique is given."""
    if args.command == "inference":
        s = _inference_scenario(args)
        return s, ((s.weights, estimate_inference),) if args.weights else inference_rows(s)
    s = _finetune_scenario(args)
    return s, ((s.technique, estimate_finetune),) if args.technique else finetune_rows(s)


def _gpu_report(gpu_id: str, s, rows) -> dict:
    """How many of the GPU each row needs, and the longest sequence that fits on that many."""
    g = catalog.gpu(gpu_id)
    report = {"id": g.id, "name": g.name, "memory_bytes": g.memory_bytes, "rows": []}
    for label, row in rows:
        fitted = fit(s, row, g)
        longest = max_seq_len(with_gpus(s, fitted.count), row, g.memory_bytes) if fitted.count else 0
        report["rows"].append({"scenario": label, "gpus_needed": fitted.count, "per_gpu_bytes": fitted.per_gpu_bytes,
                               "max_seq_len": longest})
    return report


def _print_table(s, rows: tuple[Breakdown, ...], gpu: dict | None) -> None:
    names = [n for n in COMPONENTS if any(r.component(n) or n in dict(r.components) for r in rows)]
    header = ["scenario", *names, "total"]
    body = [[r.scenario, *(f"{r.component(n) / GB:.2f}" for n in names), f"{r.total / GB:.2f}"] for r in rows]
    widths = [max(len(str(line[i])) for line in [header, *body]) for i in range(len(header))]
    name = s.model.name or f"{scenario_inputs(s)['model']['total_params'] / 1e9:g}B-parameter model"
    title = f"{name}: {s.resolved_method} method, GB per GPU (1 GB = 10^9 bytes)"
    print(title)
    for line in [header, *body]:
        print("  ".join(str(cell).rjust(w) if i else str(cell).ljust(w) for i, (cell, w) in enumerate(zip(line, widths))))
    for r in rows:
        if r.peak_phase:
            print(f"{r.scenario}: peak at {r.peak_phase}" + (f"; {r.host_bytes / GB:.2f} GB in CPU memory"
                                                              if r.host_bytes else ""))
    if gpu:
        print(f"\nOn {gpu['name']} ({gpu['memory_bytes'] / GB:.1f} GB usable):")
        for row in gpu["rows"]:
            needed = row["gpus_needed"]
            print(f"  {row['scenario']}: " + (f"{needed} GPU(s)" if needed else "does not fit") +
                  f", longest sequence that fits: {row['max_seq_len']:,} tokens")
    print("\nAssumptions:")
    for note in rows[0].assumptions:
        print(f"  - {note}")


def _estimate(args: argparse.Namespace) -> None:
    s, row_functions = _rows(args)
    rows = tuple(row(s) for _, row in row_functions)
    gpu = _gpu_report(args.gpu, s, row_functions) if args.gpu is not None else None
    if args.json:
        out = {"method": s.resolved_method, "inputs": scenario_inputs(s), "rows": [r.to_dict() for r in rows]}
        if gpu:
            out["gpu"] = gpu
        print(json.dumps(out, indent=2))
    else:
        _print_table(s, rows, gpu)


def _params(args: argparse.Namespace) -> None:
    if (args.model is None) == (args.config is None):
        raise UsageError("give exactly one of --model or --config")
    a = _read_config(args.config) if args.config is not None else catalog.model(args.model).architecture
    counts = parameter_counts(a)
    out = {"total_params": counts.total, "active_params": counts.active, "kv_cache_bytes_per_token": kv_bytes_per_token(a)}
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            print(f"{key}: {value:,}")


def _list(args: argparse.Namespace) -> None:
    if args.command == "models":
        items = [{"id": m.id, "name": m.name, "total_params": parameter_counts(m.architecture).total,
                  "active_params": parameter_counts(m.architecture).active, "source": m.source}
                 for m in catalog.models()]
        lines = [f"{m['id']:<48} {m['total_params'] / 1e9:>9.2f} B" for m in items]
    else:
        items = [{"id": g.id, "name": g.name, "memory_bytes": g.memory_bytes, "bandwidth_gb_s": g.bandwidth_gb_s,
                  "bf16_tflops": g.bf16_tflops, "source": g.source} for g in catalog.gpus()]
        lines = [f"{g['id']:<26} {g['memory_bytes'] / GB:>7.1f} GB  {g['name']}" for g in items]
    print(json.dumps(items, indent=2) if args.json else "\n".join(lines))


def _validation():
    """The optional validation package, or a UsageError saying how to install what it needs."""
    import validation

    if validation.missing_dependencies():
        raise UsageError(validation.install_hint())
    return validation


def _trace(args: argparse.Namespace) -> None:
    if (args.model is None) == (args.config is None):
        raise UsageError("give exactly one of --model or --config")
    config = catalog.raw_config(args.model) if args.model is not None else _read_config_dict(args.config)
    architecture_from_config(config)  # a clear error before any tracing
    _validation()
    from validation import compare, trace

    if args.kind == "inference":
        options = dict(batch=args.batch, concurrency=args.concurrency, prefill_len=args.seq_len,
                       decode_steps=args.decode_steps, attn_impl=args.attn)
        measure, estimate = trace.trace_inference, compare.estimate_inference(config, **options)
    else:
        options = dict(batch=args.batch, seq=args.seq_len, technique=args.technique, lora_rank=args.lora_rank,
                       lora_targets=args.lora_targets, gradient_checkpointing=args.grad_checkpointing,
                       attn_impl=args.attn)
        measure, estimate = trace.trace_training, compare.estimate_training(config, **options)
    if args.layers:
        low, high = (int(n) for n in args.layers.split(","))
        measured = trace.trace_scaled(measure, config, (low, high), **options)
    else:
        measured = measure(config, **options)
    rows = compare.rows("cli", str(config.get("model_type")), args.kind, args.kind, estimate, measured)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'component':<24}{'estimate (B)':>18}{'measured (B)':>18}{'error':>10}")
    for row in rows:
        print(f"{row['component']:<24}{row['estimate_bytes']:>18,}{row['measured_bytes']:>18,}"
              f"{row['error_pct']:>+9.2f}%")


def _validate(args: argparse.Namespace) -> None:
    import validation

    if args.summary:
        print(validation.summary_markdown(validation.load_results()))
        return
    rows = _validation().run_matrix(fast=args.fast, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(validation.summary_markdown(rows))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = {"inference": _estimate, "finetune": _estimate, "params": _params, "models": _list, "gpus": _list,
               "trace": _trace, "validate": _validate}
    try:
        handler[args.command](args)
    except (ValueError, UsageError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as `cat` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        return 1
    return 0
