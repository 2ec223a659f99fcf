"""Command line: `python -m estimator inference|finetune|serve|params|models|gpus [--json]` (installed: `llm-memory`).

The same scenarios and functions as the web app, so the numbers are the same: every scenario option is derived
from the input declarations (`inputs.py`), with the parser the share links use. This interface is relied on by
users' scripts: option names, JSON keys and exit codes are stable (errors: one line on stderr, exit 2).
Tracing the real model code is the optional validation package's command: `python -m validation trace ...`.
For a config whose quantization_config names a format (--config or --model), the `inference` table starts with a
row in the checkpoint's own format ("checkpoint": its layout and the modules it leaves 16-bit,
estimator/checkpoint.py); `--weights checkpoint` prints that row alone, `--weights <format>` another format.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from dataclasses import replace
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from . import catalog, hub
from .architecture import Architecture, parameter_counts
from .advice import Suggestion, best, finetune_advice, inference_advice
from .breakdown import COMPONENTS, Breakdown
from .checks import quoted
from .engines import ServeScenario, import_command, serve
from .engines.command import model_reference
from .formats import CHECKPOINT
from .finetune import estimate_finetune, finetune_rows
from .frameworks import with_framework
from .hardware import fit, max_seq_len, with_gpus
from .hf_config import MAX_CONFIG_CHARS, architecture_from_config, parse_config_text
from .inference import estimate_inference, inference_rows
from .inputs import Input, inputs
from .kv_cache import kv_bytes_per_token
from .scenarios import (ACTIVE_PARAMS, AUTO, CATALOG_MODEL, PARAMS, TARGET_GPU, FinetuneScenario, InferenceScenario,
                        Model, ParamCount)
from .speed import row_speed, serve_speed
from .units import GB


class UsageError(Exception):
    """A user error the CLI reports on stderr with exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: `error: argument --seq-len: ...` and exit code 2, no usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def _option(group, dest: str, spec: Input, show_default: bool = True) -> None:
    """The command-line option of a declared input: its flag, its parser (the one the share links use, so both
    accept the same text) and its help. Unset options stay None: the scenario's own default applies."""
    shown = ("on" if spec.default else "off") if isinstance(spec.default, bool) else spec.format(spec.default)
    default = f" (default: {shown})" if show_default and not spec.optional and AUTO not in spec.choices else ""
    if spec.kind is bool and spec.text is None:
        group.add_argument(spec.flag, dest=dest, action=argparse.BooleanOptionalAction, default=None,
                           help=spec.help + default)
        return
    metavar = "{" + ",".join(map(str, spec.choices)) + "}" if 0 < len(spec.choices) <= 12 else \
        (spec.unit or dest).upper().replace(" ", "_")
    group.add_argument(spec.flag, dest=dest, type=_parser(spec), default=None, metavar=metavar,
                       help=spec.help + default + _aliases_help(spec))


def _aliases_help(spec: Input) -> str:
    """' Also accepted: fp16, half = bf16; 4bit, int4 = awq-4bit' (the input's aliases; any case)."""
    by_choice: dict[str, list[str]] = {}
    for alias, choice in spec.aliases.items():
        by_choice.setdefault(choice, []).append(alias)
    if not by_choice:
        return ""
    return " Also accepted (any case): " + "; ".join(f"{', '.join(words)} = {choice}"
                                                     for choice, words in by_choice.items()) + "."


def _parser(spec: Input):
    def parse(text: str) -> object:
        try:
            return spec.parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err) if spec.text else f"{err} (got {quoted(text)})") from None
    return parse


def _model_options(p: argparse.ArgumentParser, counts: bool = True) -> None:
    src = p.add_argument_group("model (one of)")
    if counts:
        _option(src, "params", PARAMS, show_default=False)
        _option(src, "active_params", ACTIVE_PARAMS)
    _option(src, "model", CATALOG_MODEL, show_default=False)
    src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json")
    src.add_argument("--gguf", metavar="PATH", help="a .gguf file, read from its header only: the architecture and "
                                                   "every tensor's type, so the weights are exact for any quant mix")
    p.add_argument("--mmproj", metavar="PATH", help="with --gguf: its vision projector file (mmproj-*.gguf)")


def _scenario_options(p: argparse.ArgumentParser, scenario: type) -> None:
    """The model options, every declared input of `scenario`, the GPU to fit on and --json."""
    _model_options(p)
    group = p.add_argument_group("scenario")
    for name, spec in inputs(scenario).items():
        _option(group, name, spec)
    _option(p, "gpu", TARGET_GPU, show_default=False)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def build_parser() -> argparse.ArgumentParser:
    command = Path(sys.argv[0]).name
    prog = "python -m estimator" if command in ("__main__.py", "") or command.startswith("python") else command
    parser = Parser(prog=prog, description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _scenario_options(sub.add_parser("inference", help="memory to serve a model"), InferenceScenario)
    _scenario_options(sub.add_parser("finetune", help="memory to fine-tune a model"), FinetuneScenario)
    serve = sub.add_parser("serve", help="an engine's start-up: KV-cache tokens, concurrency, memory per GPU")
    _model_options(serve, counts=False)
    group = serve.add_argument_group("engine")
    for name, spec in inputs(ServeScenario).items():
        _option(group, name, spec, show_default=name != "gpu")
    serve.add_argument("--command", dest="engine_command", metavar="TEXT",
                       help='an engine command line to import, e.g. "vllm serve Qwen/Qwen3-8B --tensor-parallel-size '
                            '2" (unknown options are ignored with a note); the options given here override it')
    serve.add_argument("--json", action="store_true", help="machine-readable output")
    params = sub.add_parser("params", help="parameter counts and KV bytes per token of an architecture")
    _model_options(params, counts=False)
    params.add_argument("--json", action="store_true")
    for name, text in (("models", "the model catalog"), ("gpus", "the GPU catalog")):
        sub.add_parser(name, help=f"list {text}").add_argument("--json", action="store_true")
    return parser


def _read_config(path: str) -> Architecture:
    return architecture_from_config(read_config_file(path), Path(path).parent.name or Path(path).stem)


def read_config_file(path: str) -> dict:
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
    if args.mmproj is not None and args.gguf is None:
        raise UsageError("--mmproj goes with --gguf (the model file it projects images into)")
    given = [flag for flag, value in (("--params", getattr(args, "params", None)), ("--model", args.model),
                                      ("--config", args.config), ("--gguf", args.gguf)) if value is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of --params, --model, --config or --gguf" if given or
                         hasattr(args, "params") else "give --model, --config or --gguf")
    if args.gguf is not None:
        return hub.read_gguf_file(args.gguf, args.mmproj).architecture
    if args.config is not None:
        return _read_config(args.config)
    if args.model is not None:
        return hub.resolve(args.model).architecture
    return ParamCount.from_billions(args.params, args.active_params)


def _scenario(args: argparse.Namespace, cls: type) -> InferenceScenario | FinetuneScenario:
    """The scenario of the command line: the options given, the scenario's defaults for the rest."""
    given = {name: getattr(args, name) for name in inputs(cls) if getattr(args, name) is not None}
    if cls is FinetuneScenario:  # the framework's preset fills what the command line does not set
        given = with_framework(given)
    return cls(model=_model(args), **given)


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
        s = _scenario(args, InferenceScenario)
        return s, ((s.weights, estimate_inference),) if args.weights else inference_rows(s)
    s = _scenario(args, FinetuneScenario)
    return s, ((s.technique, estimate_finetune),) if args.technique else finetune_rows(s)


def _gpu_report(gpu_id: str, s, rows) -> dict:
    """How many of the GPU each row needs, and the longest sequence that fits on that many."""
    g = catalog.gpu(gpu_id)
    report = {"id": g.id, "name": g.name, "memory_bytes": g.memory_bytes, "rows": []}
    for label, row in rows:
        fitted = fit(s, row, g)
        longest = max_seq_len(with_gpus(s, fitted.count), row, g.memory_bytes) if fitted.count else 0
        entry = {"scenario": label, "gpus_needed": fitted.count, "per_gpu_bytes": fitted.per_gpu_bytes,
                 "max_seq_len": longest}
        if fitted.note:
            entry["note"] = fitted.note
        tip = None if fitted.count else _mildest_change(s, rows, label, g)
        if tip is not None:
            entry["advice"] = {"change": tip.change, "gpus": tip.fit.count, "per_gpu_bytes": tip.fit.per_gpu_bytes}
        report["rows"].append(entry)
    return report


def _mildest_change(s, rows, label: str, g: catalog.Gpu) -> Suggestion | None:
    """What would make row `label` fit (the page's "mildest change that fits", estimator/advice.py)."""
    if isinstance(s, InferenceScenario):
        return best(inference_advice(s, rows, label, g))
    return best(finetune_advice(replace(s, technique=label), g))


def _print_table(s, rows: tuple[Breakdown, ...], gpu: dict | None) -> None:
    names = [n for n in COMPONENTS if any(r.component(n) or n in dict(r.components) for r in rows)]
    header = ["scenario", *names, "total"]
    body = [[r.row, *(f"{r.component(n) / GB:.2f}" for n in names), f"{r.total / GB:.2f}"] for r in rows]
    widths = [max(len(str(line[i])) for line in [header, *body]) for i in range(len(header))]
    name = s.model.name or f"{scenario_inputs(s)['model']['total_params'] / 1e9:g}B-parameter model"
    title = f"{name}: {s.resolved_method} method, GB per GPU (1 GB = 10^9 bytes)"
    print(title)
    for line in [header, *body]:
        print("  ".join(str(cell).rjust(w) if i else str(cell).ljust(w)
                        for i, (cell, w) in enumerate(zip(line, widths))))
    for r in rows:
        if r.peak_phase:
            print(f"{r.row}: peak at {r.peak_phase}" + (f"; {r.host_bytes / GB:.2f} GB in CPU memory"
                                                              if r.host_bytes else ""))
    if gpu:
        print(f"\nOn {gpu['name']} ({gpu['memory_bytes'] / GB:.1f} GB usable):")
        for row in gpu["rows"]:
            needed = row["gpus_needed"]
            longest = row["max_seq_len"]
            print(f"  {row['scenario']}: " + (f"{needed} GPU(s)" if needed else "does not fit") +
                  (f" ({row['note']})" if row.get("note") and not row.get("advice") else "") +
                  (f", longest sequence that fits: {longest:,} tokens" if longest else
                   (", but does not fit at any length" if needed else " at any length")) + _advice_text(row))
    print("\nAssumptions:")
    for note in rows[0].assumptions:
        print(f"  - {note}")


def _advice_text(row: dict) -> str:
    """'; mildest change that fits: AdamW 8-bit: 21.40 GB per GPU' for a row that does not fit, else ''."""
    tip = row.get("advice")
    if not tip:
        return ""
    where = f" on {tip['gpus']} GPUs" if tip["gpus"] > 1 else ""
    return f"; mildest change that fits: {tip['change']}: {tip['per_gpu_bytes'] / GB:.2f} GB per GPU{where}"


def _estimate(args: argparse.Namespace) -> None:
    s, row_functions = _rows(args)
    rows = tuple(row(s) for _, row in row_functions)
    gpu = _gpu_report(args.gpu, s, row_functions) if args.gpu is not None else None
    speeds = [row_speed(with_gpus(s, fitted["gpus_needed"]), label, catalog.gpu(args.gpu)) if fitted["gpus_needed"]
              else None for (label, _), fitted in zip(row_functions, gpu["rows"])] if gpu else []
    if args.json:
        out = {"method": s.resolved_method, "inputs": scenario_inputs(s), "rows": [r.to_dict() for r in rows]}
        for row, rate in zip(out["rows"], speeds):
            row["speed"] = rate.to_dict() if rate is not None else None
        if gpu:
            out["gpu"] = gpu
        print(json.dumps(out, indent=2))
    else:
        _print_table(s, rows, gpu)
        _print_speeds(rows, speeds, gpu)


def _print_speeds(rows: tuple[Breakdown, ...], speeds: list, gpu: dict | None) -> None:
    """Speed per row on the --gpu, and the assumptions of the first row that has one."""
    known = [(r, rate) for r, rate in zip(rows, speeds) if rate is not None]
    if not known:
        return
    print(f"\nSpeed on {gpu['name']} (on the GPUs each row needs; none for a row that does not fit):")
    for r, rate in known:
        if hasattr(rate, "decode_tokens_per_s"):
            print(f"  {r.row}: prefill {rate.prefill_tokens_per_s:,.0f} tokens/s (TTFT {rate.ttft_s:.3g} s), decode "
                  f"{rate.decode_tokens_per_s:,.1f} tokens/s per sequence, {rate.throughput_tokens_per_s:,.1f} in all"
                  f" ({rate.bound}-bound)")
        else:
            epoch = f", epoch {rate.epoch_time_s / 3600:,.2f} h" if rate.epoch_time_s is not None else ""
            print(f"  {r.row}: {rate.tokens_per_s:,.0f} tokens/s per GPU, step {rate.step_time_s:.3g} s{epoch}")
    print("Speed assumptions:")
    for note in known[0][1].assumptions:
        print(f"  - {note}")


def _serve(args: argparse.Namespace) -> None:
    """`serve`: the engine's start-up report. A command that would not start still exits 0: its error text is in
    the warnings, with the numbers that explain it."""
    imported = import_command(args.engine_command) if args.engine_command is not None else None
    fields = dict(imported.fields) if imported else {}
    if args.model is None and args.config is None and args.gguf is None and imported is not None and imported.model:
        args.model, kind = model_reference(imported.model, imported.engine)
        ref = hub.parse_ref(imported.model)
        if not args.model and ref:  # a Hub id (llama-server -hf org/repo:Q4_K_M): a GGUF's own tensors
            args.model, kind = imported.model, CHECKPOINT if ref.quant else None
        if not args.model:
            raise UsageError(f"the command's model {imported.model[:80]!r} is not in the catalog nor a Hub id: give "
                             "--model ID or --config PATH")
        if kind:  # a GGUF file's or an Ollama tag's type
            fields.setdefault("weights", kind)
    if [args.model, args.config, args.gguf].count(None) != 2:
        raise UsageError("give exactly one of --model, --config or --gguf (or a --command naming a catalog model)")
    if args.gpu is None:
        raise UsageError("--gpu is required: an engine's budget is a fraction of a real GPU (see `gpus`)")
    model_id = hub.model_id(args.model) if args.model is not None else ""
    model_id = (hub.parse_ref(model_id) or hub.ModelRef(model_id)).repo_id  # the engine's command names the repo
    if imported:
        fields["engine"] = imported.engine
    fields.update({name: getattr(args, name) for name in inputs(ServeScenario) if getattr(args, name) is not None})
    s = ServeScenario(model=_model(args), model_id=model_id, **fields)
    report = serve(s)
    notes = [f"ignored from the command: {' '.join(imported.ignored)}"] if imported and imported.ignored else []
    if args.json:
        inputs_json = {name: value for name, value in vars(s).items() if name not in ("model", "model_id")}
        inputs_json["model"] = {"name": s.model.name, "id": model_id}
        out = report.to_dict(inputs_json)
        out["assumptions"] = notes + out["assumptions"]
        out["speed"] = serve_speed(s, report).to_dict() if report.starts else None  # no speed for a refusal
        print(json.dumps(out, indent=2))
        return
    print(f"{s.model.name} on {report.gpus} x {catalog.gpu(s.gpu).name}, {s.engine} (GiB per GPU):")
    for name, size in report.per_gpu:
        print(f"  {name:<12} {size / 2**30:8.2f}")
    print(f"  {'budget':<12} {report.budget_bytes / 2**30:8.2f} of {report.gpu_bytes / 2**30:.2f}")
    if report.host_bytes:
        print(f"  {'host RAM':<12} {report.host_bytes / 2**30:8.2f}")
    print(f"KV-cache tokens: {report.kv_cache_tokens:,}; maximum concurrency at {report.max_model_len:,} tokens: "
          f"{report.max_concurrency:.2f}x; longest request that fits: {report.max_model_len_that_fits:,}")
    print("\nThe engine would log:")
    for line in report.log:
        print(f"  {line}")
    for warning in report.warnings:
        print(f"\nwarning: {warning}")
    if report.starts:
        rate = serve_speed(s, report)
        print(f"\nSpeed: prefill {rate.prefill_tokens_per_s:,.0f} tokens/s (pp512), decode "
              f"{rate.decode_tokens_per_s:,.1f} tokens/s (tg128, batch 1), {rate.throughput_tokens_per_s:,.1f} "
              "tokens/s over the concurrent requests")
    print(f"\nCommand: {report.command}")
    print("\nAssumptions:")
    for note in notes + list(report.assumptions):
        print(f"  - {note}")


def _params(args: argparse.Namespace) -> None:
    if [args.model, args.config, args.gguf].count(None) != 2:
        raise UsageError("give exactly one of --model, --config or --gguf")
    if args.mmproj is not None and args.gguf is None:
        raise UsageError("--mmproj goes with --gguf (the model file it projects images into)")
    resolved = hub.resolve(args.model) if args.model is not None else \
        hub.read_gguf_file(args.gguf, args.mmproj) if args.gguf is not None else None
    a = resolved.architecture if resolved else _read_config(args.config)
    counts = parameter_counts(a)
    out = {"total_params": counts.total, "active_params": counts.active,
           "kv_cache_bytes_per_token": kv_bytes_per_token(a)}
    if resolved and resolved.source != hub.CATALOG:  # where the numbers come from, and what the checkpoint stores
        out.update(source=resolved.source, id=str(resolved.ref), commit=resolved.commit,
                   stored_bytes=dict(resolved.stored_bytes))
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            shown = ", ".join(f"{size:,} {dtype}" for dtype, size in value.items()) if isinstance(value, dict) \
                else f"{value:,}" if isinstance(value, int) else value
            print(f"{key}: {shown}")


def _list(args: argparse.Namespace) -> None:
    if args.command == "models":
        items = [{"id": m.id, "name": m.name, "total_params": parameter_counts(m.architecture).total,
                  "active_params": parameter_counts(m.architecture).active, "source": m.source}
                 for m in catalog.models()]
        lines = [f"{'id':<48} {'parameters':>11}"]
        lines += [f"{m['id']:<48} {m['total_params'] / 1e9:>9.2f} B" for m in items]
    else:
        items = [{"id": g.id, "name": g.name, "memory_bytes": g.memory_bytes, "bandwidth_gb_s": g.bandwidth_gb_s,
                  "bf16_tflops": g.bf16_tflops, "source": g.source} for g in catalog.gpus()]
        lines = [f"{'id':<26} {'usable':>10}  name"]
        lines += [f"{g['id']:<26} {g['memory_bytes'] / GB:>7.1f} GB  {g['name']}" for g in items]
    print(json.dumps(items, indent=2) if args.json else "\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a bad option (2, its message already on stderr)
        return int(done.code or 0)
    handler = {"inference": _estimate, "finetune": _estimate, "serve": _serve, "params": _params, "models": _list,
               "gpus": _list}
    try:
        handler[args.command](args)
    except (ValueError, UsageError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as `cat` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        return 1
    return 0
