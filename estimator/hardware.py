"""Which GPUs fit a scenario and how many are needed; the largest context or concurrency that fits.

GPU counts use the same sharding as the estimate itself (tensor parallelism for inference, ZeRO for
training), never total / memory: a 70B model at 16-bit does not fit 2 x 80 GB just because 140 < 160.
Inference counts are powers of two that divide the attention heads (vLLM requires it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .architecture import Architecture
from .breakdown import Breakdown
from .catalog import Gpu
from .scenarios import MAX_CONCURRENCY, MAX_SEQ_LEN, FinetuneScenario, InferenceScenario

Scenario = InferenceScenario | FinetuneScenario
RowFunction = Callable[[Scenario], Breakdown]
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class GpuFit:
    gpu: Gpu
    count: int | None  # GPUs needed, None when no count up to 512 fits
    per_gpu_bytes: int  # memory per GPU at that count (at 1 GPU when nothing fits)
    headroom_bytes: int  # capacity left on each GPU (negative when it does not fit)
    note: str = ""  # e.g. "with ZeRO-3"


def with_gpus(s: Scenario, count: int) -> Scenario:
    """The scenario spread over `count` GPUs: tensor parallel for inference, data parallel for training
    (ZeRO-3 when the scenario itself does not shard, since replicas alone never reduce memory)."""
    if isinstance(s, InferenceScenario):
        return replace(s, tensor_parallel=count)
    stage = s.zero_stage if s.zero_stage or count == 1 else 3
    return replace(s, num_gpus=count, zero_stage=stage)


def _valid_counts(s: Scenario) -> Sequence[int]:
    if isinstance(s, InferenceScenario) and isinstance(s.model, Architecture):
        return [n for n in GPU_COUNTS if s.model.num_heads % n == 0]
    return GPU_COUNTS


def fit(s: Scenario, row: RowFunction, gpu: Gpu) -> GpuFit:
    """The smallest number of `gpu` that holds row(s) on every GPU."""
    first = None
    for count in _valid_counts(s):
        spread = with_gpus(s, count)
        per_gpu = row(spread).total
        first = first or per_gpu
        if per_gpu <= gpu.memory_bytes:
            note = "with ZeRO-3" if isinstance(s, FinetuneScenario) and count > 1 and not s.zero_stage else ""
            return GpuFit(gpu, count, per_gpu, gpu.memory_bytes - per_gpu, note)
    return GpuFit(gpu, None, first, gpu.memory_bytes - first, "does not fit")


def fit_table(s: Scenario, row: RowFunction, gpus: Sequence[Gpu]) -> list[GpuFit]:
    return [fit(s, row, g) for g in gpus]


def _largest(s: Scenario, row: RowFunction, field: str, high: int, capacity: int) -> int:
    """Largest value of integer `field` in [1, high] whose per-GPU total fits `capacity` (0 if none).
    Memory never decreases as the field grows, so a binary search is exact."""
    if row(replace(s, **{field: 1})).total > capacity:
        return 0
    low = 1
    while low < high:
        mid = (low + high + 1) // 2
        if row(replace(s, **{field: mid})).total <= capacity:
            low = mid
        else:
            high = mid - 1
    return low


def max_seq_len(s: Scenario, row: RowFunction, capacity_bytes: int) -> int:
    """The longest sequence that fits `capacity_bytes` per GPU, at the scenario's GPU count."""
    return _largest(s, row, "seq_len", MAX_SEQ_LEN, capacity_bytes)


def max_concurrency(s: InferenceScenario, row: RowFunction, capacity_bytes: int) -> int:
    """The most concurrent requests that fit `capacity_bytes` per GPU."""
    return _largest(s, row, "concurrency", MAX_CONCURRENCY, capacity_bytes)


def sweep(s: Scenario, row: RowFunction, field: str, values: Sequence[int]) -> list[Breakdown]:
    """row(s) for each value of `field` (memory vs sequence length, concurrency or batch)."""
    return [row(replace(s, **{field: v})) for v in values]
