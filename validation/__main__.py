"""python -m validation [--fast] [--only CASE ...] [--out PATH] [--summary]

Runs the validation matrix (or its fast CI subset), writes the rows (the full matrix: validation/results.csv)
and prints the summary: median and worst error per component. --summary prints the summary of the committed
results without tracing anything.
"""

from __future__ import annotations

import argparse
import sys
import time

from . import install_hint, load_results, missing_dependencies, run_matrix, summary_markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m validation", description=__doc__.split("\n\n")[1])
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


if __name__ == "__main__":
    sys.exit(main())
