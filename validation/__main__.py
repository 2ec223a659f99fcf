"""python -m validation [--fast] [--only CASE ...] [--out PATH] [--summary]
python -m validation trace inference|training (--model ID | --config PATH) [options]
python -m validation engines          (the engine estimates vs published start-up logs: engine_results.csv)
python -m validation objectives       (DPO / ORPO / KTO / GRPO estimates vs published records: published/objectives.csv)
python -m validation recipes          (the fine-tuning estimate under each framework's preset vs published recipe
                                       peaks: recipes_results.csv)
python -m validation speed [--derive] (the speed model vs published speed measurements: speed_results.csv)

The first form runs the validation matrix (or its fast CI subset), writes the rows (the full matrix:
validation/results.csv) and prints the summary: median and worst error per component; --summary prints the
summary of the committed results without tracing anything. `trace` measures one scenario by running the real
Hugging Face model code with fake tensors and prints each component next to the estimate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from estimator.cli import Parser, UsageError, read_config_file

from . import install_hint, load_results, missing_dependencies, run_matrix, summary_markdown


def run(argv: list[str]) -> int:
    parser = Parser(prog="python -m validation", description="Run the validation matrix and print its summary.")
    parser.add_argument("--fast", action="store_true", help="only the CI subset (small dimensions)")
    parser.add_argument("--only", nargs="+", default=(), metavar="CASE", help="run these cases only")
    parser.add_argument("--out", help="write the rows here (default: results.csv for the full matrix)")
    parser.add_argument("--summary", action="store_true", help="summarise the committed results.csv and exit")
    args = parser.parse_args(argv)
    if args.summary:
        print(summary_markdown(load_results()))
        return 0
    if missing_dependencies():
        print(install_hint(), file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows = run_matrix(fast=args.fast, write=args.out, only=args.only,
                      log=lambda line: print(line, file=sys.stderr, flush=True))
    print(summary_markdown(rows))
    print(f"\n{len(rows)} rows in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


def trace_parser() -> argparse.ArgumentParser:
    tr = Parser(prog="python -m validation trace", description="Measure a scenario by running the real HF model "
                                                                 "code with fake tensors.")
    tr.add_argument("kind", choices=("inference", "training"))
    tr.add_argument("--model", metavar="ID", help="catalog model id")
    tr.add_argument("--config", metavar="PATH", help="a Hugging Face config.json")
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
    return tr


def trace(argv: list[str]) -> int:
    from estimator import catalog
    from estimator.hf_config import architecture_from_config

    args = trace_parser().parse_args(argv)
    try:
        if (args.model is None) == (args.config is None):
            raise ValueError("give exactly one of --model or --config")
        config = catalog.raw_config(args.model) if args.model is not None else read_config_file(args.config)
        architecture_from_config(config)  # a clear error before any tracing
    except (ValueError, UsageError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if missing_dependencies():
        print(install_hint(), file=sys.stderr)
        return 2
    from . import compare
    from . import trace as tracing

    if args.kind == "inference":
        options = dict(batch=args.batch, concurrency=args.concurrency, prefill_len=args.seq_len,
                       decode_steps=args.decode_steps, attn_impl=args.attn)
        measure, estimate = tracing.trace_inference, compare.estimate_inference(config, **options)
    else:
        options = dict(batch=args.batch, seq=args.seq_len, technique=args.technique, lora_rank=args.lora_rank,
                       lora_targets=args.lora_targets, gradient_checkpointing=args.grad_checkpointing,
                       attn_impl=args.attn)
        measure, estimate = tracing.trace_training, compare.estimate_training(config, **options)
    if args.layers:
        low, high = (int(n) for n in args.layers.split(","))
        measured = tracing.trace_scaled(measure, config, (low, high), **options)
    else:
        measured = measure(config, **options)
    rows = compare.rows("cli", str(config.get("model_type")), args.kind, args.kind, estimate, measured)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'component':<24}{'estimate (B)':>18}{'measured (B)':>18}{'error':>10}")
    for row in rows:
        print(f"{row['component']:<24}{row['estimate_bytes']:>18,}{row['measured_bytes']:>18,}"
              f"{row['error_pct']:>+9.2f}%")
    return 0


def validate_engines(argv: list[str]) -> int:
    """Compare the engine estimates with the published start-up logs; write validation/engine_results.csv."""
    parser = Parser(prog="python -m validation engines", description=validate_engines.__doc__)
    parser.add_argument("--no-write", action="store_true", help="print the summary without writing the CSV")
    parser.add_argument("--graphs", action="store_true",
                        help="also print the derivation of vLLM's CUDA-graph constants, capture by capture and "
                        "estimate by estimate")
    args = parser.parse_args(argv)
    from . import engines

    rows = engines.run(write=not args.no_write)
    print(engines.summary(rows))
    if args.graphs:
        print()
        print(engines.graph_derivation())
        print()
        print(engines.estimate_derivation())
    return 0


def validate_objectives(argv: list[str]) -> int:
    """Compare the post-training objectives' estimates with validation/published/objectives.csv (no torch)."""
    Parser(prog="python -m validation objectives", description=validate_objectives.__doc__).parse_args(argv)
    from . import objectives

    print(objectives.published_summary(objectives.compare_published()))
    return 0


def validate_recipes(argv: list[str]) -> int:
    """Compare the fine-tuning estimate under each framework's preset with published recipe peaks; write
    validation/recipes_results.csv."""
    parser = Parser(prog="python -m validation recipes", description=validate_recipes.__doc__)
    parser.add_argument("--no-write", action="store_true", help="print the summary without writing the CSV")
    args = parser.parse_args(argv)
    from . import recipes

    rows = recipes.run(write=not args.no_write)
    for row in rows:
        print(f"{row['record']:<52} {row['measured_gib']:>7.2f} GiB  est {row['estimate_gib']:>7.2f}  "
              f"{row['error_pct']:+7.1f}%  {row['peak_phase']}")
    print()
    print(recipes.summary(rows))
    return 0


def validate_speed(argv: list[str]) -> int:
    """Compare the speed model with validation/published/speed.csv, offload.csv and host_speed.csv; write
    validation/speed_results.csv, offload_results.csv and host_speed_results.csv."""
    parser = Parser(prog="python -m validation speed", description=validate_speed.__doc__)
    parser.add_argument("--derive", action="store_true",
                        help="first rewrite estimator/data/speed.json (the efficiencies) from the records")
    parser.add_argument("--no-write", action="store_true", help="print the summary without writing the CSV")
    args = parser.parse_args(argv)
    from . import host_speed, offload, speed

    rows = speed.run(derive_first=args.derive, write=not args.no_write)
    print(speed.summary(rows))
    for module in (offload, host_speed):
        compared = module.results(module.cases())
        if not args.no_write and compared:
            module.write_results(compared)
        print("\n" + module.summary(compared))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    commands = {"trace": trace, "engines": validate_engines, "objectives": validate_objectives,
                "recipes": validate_recipes, "speed": validate_speed}
    return commands[argv[0]](argv[1:]) if argv[:1] and argv[0] in commands else run(argv)


if __name__ == "__main__":
    sys.exit(main())
