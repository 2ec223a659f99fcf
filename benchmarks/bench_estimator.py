"""Speed of the estimator on one core: detailed estimates per second and a 512-point context sweep.

Targets (issue 2): at least 20,000 detailed estimates/s, and a 512-point memory-vs-context sweep in under
25 ms; (issue 13) at least 10,000 engine start-up estimates/s (`serve`, vLLM); (issue 17) the speed model leaves the
estimate alone (`estimate_inference` computes no speed: the first column is its rate) and computes a row's speed on a
GPU (`estimator.speed.row_speed`) at least 20,000 times/s; the estimate and its speed together are shown too.
Run: `.venv/bin/python benchmarks/bench_estimator.py` (pins itself to one CPU where it can).
Each figure is the best of several repeats, so background noise does not count against the code.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere without installing

import estimator as est  # noqa: E402
from estimator.engines import ServeScenario, serve  # noqa: E402
from estimator.inference import detailed_inference  # noqa: E402
from estimator.speed import row_speed  # noqa: E402

TARGET_PER_SECOND = 20_000
TARGET_SWEEP_MS = 25.0
TARGET_SERVE_PER_SECOND = 10_000
MODELS = ("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3", "google/gemma-3-27b-it")


def _best(repeats: int, run) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def estimates_per_second(model_id: str, n: int = 20_000) -> float:
    """Build a new scenario (validation included) and estimate it, n times with varying lengths."""
    a = est.model(model_id).architecture
    est.estimate_inference(est.InferenceScenario(a))  # warm the per-architecture caches

    def run():
        for i in range(n):
            est.estimate_inference(est.InferenceScenario(a, seq_len=1024 + i, concurrency=1 + i % 8))

    return n / _best(3, run)


def speeds_per_second(model_id: str, n: int = 20_000) -> tuple[float, float]:
    """(speeds/s, estimates with their speed/s): `row_speed` on an H100 for n scenarios of varying length and
    concurrency, alone and after the estimate of the same scenario."""
    a = est.model(model_id).architecture
    gpu = est.gpu("h100-sxm")
    row_speed(est.InferenceScenario(a), "bf16", gpu)  # warm the per-architecture caches
    scenarios = [est.InferenceScenario(a, seq_len=1024 + i, concurrency=1 + i % 8) for i in range(n)]

    def alone():
        for s in scenarios:
            row_speed(s, "bf16", gpu)

    def both():
        for i in range(n):
            s = est.InferenceScenario(a, seq_len=1024 + i, concurrency=1 + i % 8)
            est.estimate_inference(s)
            row_speed(s, "bf16", gpu)

    return n / _best(3, alone), n / _best(3, both)


def serve_per_second(model_id: str, n: int = 5_000) -> float:
    """Build a new engine scenario (validation included) and estimate vLLM's start-up, n times with varying
    max_model_len and utilization."""
    a = est.model(model_id).architecture
    serve(ServeScenario(a, engine="vllm"))

    def run():
        for i in range(n):
            serve(ServeScenario(a, engine="vllm", max_model_len=1024 + i, gpu_memory_utilization=0.8 + i % 10 / 100))

    return n / _best(3, run)


def sweep_ms(model_id: str, points: int = 512) -> float:
    """Memory vs context length: 512 detailed estimates from 1K tokens to the model's maximum."""
    a = est.model(model_id).architecture
    s = est.InferenceScenario(a)
    top = a.max_position_embeddings or 131_072
    lengths = [max(1, top * (i + 1) // points) for i in range(points)]
    row = lambda variant: detailed_inference(variant, "bf16", "16-bit")  # noqa: E731
    est.sweep(s, row, "seq_len", lengths[:2])
    return 1000 * _best(5, lambda: est.sweep(s, row, "seq_len", lengths))


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {platform.machine()}, one core")
    print("| model | detailed estimates/s | speeds/s | estimate + speed /s | 512-point sweep (ms) | "
          "vLLM serve estimates/s |")
    print("|---|---|---|---|---|---|")
    ok = True
    for model_id in MODELS:
        rate, (speeds, both) = estimates_per_second(model_id), speeds_per_second(model_id)
        ms, served = sweep_ms(model_id), serve_per_second(model_id)
        ok &= min(rate, speeds) >= TARGET_PER_SECOND and ms < TARGET_SWEEP_MS and served >= TARGET_SERVE_PER_SECOND
        print(f"| {model_id} | {rate:,.0f} | {speeds:,.0f} | {both:,.0f} | {ms:.1f} | {served:,.0f} |")
    print(f"\ntargets: >= {TARGET_PER_SECOND:,} estimates/s and speeds/s, sweep < {TARGET_SWEEP_MS:g} ms, >= "
          f"{TARGET_SERVE_PER_SECOND:,} serve estimates/s: {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
