"""Which GPUs fit a scenario and how many are needed; the largest context or concurrency that fits.

GPU counts use the same sharding as the estimate itself (tensor parallelism for inference, ZeRO for
training), never total / memory: a 70B model at 16-bit does not fit 2 x 80 GB just because 140 < 160.
Inference counts are powers of two that divide the attention heads (vLLM requires it), up to a GPU's own limit
(`max_devices`: Macs combine only over Thunderbolt 5, at most 4).
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
    count: int | None  # GPUs needed with the scenario's own sharding, None when no count up to 512 fits
    per_gpu_bytes: int  # memory per GPU at that count (at 1 GPU when nothing fits)
    headroom_bytes: int  # capacity left on each GPU (negative when it does not fit)
    note: str = ""  # e.g. "ZeRO-2" (the sharding that fits), "ZeRO-3: 4 GPUs" (when it does not: what would)
    zero3_count: int | None = None  # training that does not fit with its own sharding: the fewest GPUs with ZeRO-3


def with_gpus(s: Scenario, count: int, zero_stage: int | None = None) -> Scenario:
    """The scenario spread over `count` GPUs: tensor parallel for inference, data parallel for training with the
    scenario's own ZeRO stage (or `zero_stage`)."""
    if isinstance(s, InferenceScenario):
        return replace(s, tensor_parallel=count)
    return replace(s, num_gpus=count, zero_stage=s.zero_stage if zero_stage is None else zero_stage)


def valid_counts(s: Scenario, gpu: Gpu | None = None) -> Sequence[int]:
    """The GPU counts a fit tries: tensor-parallel sizes that divide the heads; training: one GPU without ZeRO; at
    most `gpu.max_devices`. Fine-tuning on Apple chips is one Mac: MLX trains across Macs by data parallelism, each
    Mac holding the whole model (WWDC26 session 233, https://developer.apple.com/videos/play/wwdc2026/233/), and
    ZeRO / FSDP need torch.distributed collectives that Apple GPUs lack (pytorch/pytorch#189853)."""
    if isinstance(s, InferenceScenario) and isinstance(s.model, Architecture):
        counts = [n for n in GPU_COUNTS if s.model.num_heads % n == 0]
    elif isinstance(s, FinetuneScenario) and (s.zero_stage == 0 or (gpu and gpu.kind == "apple")):
        counts = list(GPU_COUNTS[:1])  # replicas hold the same bytes: one GPU or none
    else:
        counts = list(GPU_COUNTS)
    return [n for n in counts if gpu is None or gpu.max_devices is None or n <= gpu.max_devices]


def _fewest(s: Scenario, row: RowFunction, gpu: Gpu) -> tuple[int | None, int]:
    """(the fewest GPUs of `valid_counts` that hold row(s) on each, their bytes per GPU); (None, bytes at 1 GPU)
    when none does."""
    first = None
    for count in valid_counts(s, gpu):
        per_gpu = row(with_gpus(s, count)).total
        first = first or per_gpu
        if per_gpu <= gpu.memory_bytes:
            return count, per_gpu
    return None, first


def fit(s: Scenario, row: RowFunction, gpu: Gpu) -> GpuFit:
    """The smallest number of `gpu` that holds row(s) on every GPU, with the scenario's own sharding (training
    with ZeRO 0 holds the same bytes on every replica: one GPU or none). When training does not fit that way,
    `zero3_count` says how many GPUs would with ZeRO-3 (a suggestion, not the fit)."""
    count, per_gpu = _fewest(s, row, gpu)
    training = isinstance(s, FinetuneScenario)
    if count is not None:
        note = f"ZeRO-{s.zero_stage}" if training and count > 1 else ""
        return GpuFit(gpu, count, per_gpu, gpu.memory_bytes - per_gpu, note)
    zero3 = _fewest(replace(s, zero_stage=3), row, gpu)[0] if training and s.zero_stage < 3 else None
    note = f"ZeRO-3: {zero3} GPUs" if zero3 else _stopped(s, gpu)
    return GpuFit(gpu, None, per_gpu, gpu.memory_bytes - per_gpu, note, zero3)


def _stopped(s: Scenario, gpu: Gpu) -> str:
    """Why the fit tried no more of `gpu`, where the GPU's own limit (not the scenario) left counts out."""
    if len(valid_counts(s, gpu)) == len(valid_counts(s)):
        return ""
    if isinstance(s, FinetuneScenario) and gpu.kind == "apple":
        return "fine-tuning runs on one Mac"
    return gpu.max_devices_note


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
