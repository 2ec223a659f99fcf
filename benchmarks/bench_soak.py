"""Soak check (issue 6): thousands of consecutive reruns in one AppTest session must not grow memory.

One session of the real app (AppTest, no browser) changes an input on every rerun, cycling through the inputs
people touch (sequence length, concurrency, KV dtype, weight format, unit, row, model source, catalog model,
page switches), and the process's resident memory (RSS) is read every 100 reruns. The inputs cycle through a
fixed set of values, so after the warm-up every cache (st.cache_data, the estimator's lru caches) is full and any
further growth is a leak. Target: 2,000 reruns grow RSS by less than 50 MB.

Run: `.venv/bin/python benchmarks/bench_soak.py [RERUNS]` (default 2,000). tests/test_soak.py runs a shorter
soak with a proportional bound.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from anywhere without installing

from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(ROOT / "app.py")
TARGET_MB_PER_2000 = 50.0
MODELS = ("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "mistralai/Mixtral-8x7B-v0.1", "google/gemma-3-27b-it")


def rss_mb() -> float:
    """Resident memory of this process, in MB (10^6 bytes)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _segmented(at: AppTest, key: str):
    return next(w for w in at.button_group if w.key == key)


ROUND = 40  # reruns per round: 20 on Inference, then 20 on Fine-tuning


def _step(at: AppTest, i: int, vary: bool) -> None:
    """Change one input, then rerun. Rerun i is step i % ROUND of a round: switch page, change a number, a
    choice, the unit, the row, the model source and the catalog model. With `vary`, each round picks other
    values (so the caches fill up to their bounds); without, every round repeats the same inputs (so after
    the first round everything is cached and any growth is a leak)."""
    step, shift = i % ROUND, (i // ROUND if vary else 0)
    page = "inference" if step < ROUND // 2 else "finetune"
    local = step % (ROUND // 2)

    def pick(values):
        return values[(local + shift) % len(values)]

    if local == 0:
        at.switch_page(f"views/{page}.py")
    elif local == 10:
        _segmented(at, f"{page}.src").set_value("catalog")
    elif local == 13:
        at.selectbox(key=f"{page}.model").set_value(pick(MODELS))
    elif local == 16:
        _segmented(at, f"{page}.src").set_value("params")
    elif local % 5 == 0:
        at.number_input(key=f"{page}.seq_len").set_value(pick((1024, 2048, 4096, 8192, 16384, 32768)))
    elif local % 5 == 1:
        at.number_input(key="inference.concurrency" if page == "inference" else "finetune.batch_size").set_value(
            pick((1, 2, 4, 8)))
    elif local % 5 == 2 and page == "inference":
        at.selectbox(key="inference.kv_dtype").set_value(pick(("bf16", "fp8", "q8_0")))
    elif local % 5 == 2:
        at.selectbox(key="finetune.optimizer").set_value(pick(("adamw", "sgd", "adamw-8bit")))
    elif local % 5 == 3:
        _segmented(at, f"{page}.unit").set_value(pick(("GB", "GiB")))
    elif page == "inference":
        at.selectbox(key="inference.weights").set_value(pick((None, "q4_k_m", "fp8")))
    else:
        at.selectbox(key="finetune.technique").set_value(pick(("full", "lora", "qlora-4bit")))
    at.run()
    if at.exception or at.error:
        raise AssertionError(f"rerun {i}: {[e.value for e in at.exception]} {[e.value for e in at.error]}")


def soak(reruns: int = 2000, warmup: int = 2 * ROUND, every: int = 100, vary: bool = True) -> dict:
    """`warmup` reruns, then `reruns` more; RSS (MB) at the start of the measured part and every `every`."""
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    for i in range(warmup):
        _step(at, i, vary)
    gc.collect()
    start_mb, samples, started = rss_mb(), [], time.perf_counter()
    for i in range(warmup, warmup + reruns):
        _step(at, i, vary)
        if (i - warmup + 1) % every == 0:
            gc.collect()
            samples.append(round(rss_mb() - start_mb, 1))
    elapsed = time.perf_counter() - started
    gc.collect()
    end_mb = rss_mb()
    return {"reruns": reruns, "warmup": warmup, "seconds": round(elapsed, 1),
            "ms_per_rerun": round(1000 * elapsed / reruns, 1), "rss_start_mb": round(start_mb, 1),
            "rss_end_mb": round(end_mb, 1), "growth_mb": round(end_mb - start_mb, 1), "growth_every_mb": samples}


def main() -> int:
    reruns = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    result = soak(reruns, warmup=300)
    bound = TARGET_MB_PER_2000 * reruns / 2000
    print(f"{result['reruns']:,} reruns after {result['warmup']} warm-up reruns in {result['seconds']} s "
          f"({result['ms_per_rerun']} ms each)")
    print(f"RSS {result['rss_start_mb']} MB -> {result['rss_end_mb']} MB: growth {result['growth_mb']} MB "
          f"(target < {bound:g} MB)")
    print(f"growth every 100 reruns (MB since start): {result['growth_every_mb']}")
    return 0 if result["growth_mb"] < bound else 1


if __name__ == "__main__":
    sys.exit(main())
