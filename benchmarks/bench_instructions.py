"""Instructions per call of the estimate, the speed and the vLLM start-up estimate, counted by valgrind's callgrind.

    python benchmarks/bench_instructions.py [--calls 1000]

Timings (bench_estimator.py) swing by 2x on a shared machine; instruction counts do not: the same code, inputs and
interpreter give the same count whatever else runs (string hashing fixed by PYTHONHASHSEED=0). Each workload runs
twice under callgrind, with no calls and with `--calls` calls (Llama 3.1 8B, lengths 1,024 + i, as
bench_estimator.py), and the difference / calls is printed, so that start-up and imports drop out. Compare two commits
by running it in each checkout. Needs valgrind (`apt-get install -y valgrind`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("estimate", "speed", "serve")


def work(which: str, calls: int) -> None:
    """The workload callgrind counts (run in a child process)."""
    sys.path.insert(0, str(ROOT))
    import estimator as est
    from estimator.engines import ServeScenario, serve
    from estimator.speed import row_speed

    a = est.model("meta-llama/Llama-3.1-8B").architecture
    gpu = est.gpu("h100-sxm")
    for i in range(calls):
        s = est.InferenceScenario(a, seq_len=1024 + i)
        if which == "estimate":
            est.estimate_inference(s)
        elif which == "speed":
            row_speed(s, "bf16", gpu)
        else:
            serve(ServeScenario(a, engine="vllm", max_model_len=1024 + i, gpu_memory_utilization=0.8 + i % 10 / 100))


def instructions(which: str, calls: int) -> int:
    """Instructions callgrind counts for the whole child process."""
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          __file__, "--work", which, "--calls", str(calls)],
                         capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONHASHSEED": "0"}).stderr  # string hashes, dict order: fixed
    return int(re.search(r"Collected : (\d+)", out).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--work", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.work:
        work(args.work, args.calls)
        return
    if not shutil.which("valgrind"):
        sys.exit("valgrind not found: apt-get install -y valgrind")
    print("| call | instructions per call |\n|---|---|")
    for which in WORKLOADS:
        per_call = (instructions(which, args.calls) - instructions(which, 0)) // args.calls
        print(f"| {which} | {per_call:,} |")


if __name__ == "__main__":
    main()
