"""What would make a scenario fit a GPU: single changes, each with the memory the estimator computes for it.

Fine-tuning, from the mildest change to the largest: gradient checkpointing (slower steps, same result),
micro-batch 1 with gradient accumulation (the same effective batch), an 8-bit optimizer, a shorter sequence,
QLoRA instead of LoRA (LoRA instead of full fine-tuning), and more GPUs with ZeRO-3. Inference: a smaller weight
format, an FP8 KV cache, a shorter context, fewer concurrent requests. Each suggestion is the scenario with that
one change and its `GpuFit` on the target GPU (the changed scenario's own sharding, as `hardware.fit` counts);
when no change of the recipe alone fits, one more suggestion combines them.

    for tip in finetune_advice(s, gpu("rtx-4090")):
        print(tip.change, tip.fit.per_gpu_bytes, tip.fits)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .breakdown import Breakdown
from .catalog import Gpu
from .finetune import estimate_finetune
from .formats import WEIGHT_FORMATS
from .hardware import GpuFit, fit, max_seq_len, valid_counts, with_gpus
from .inference import DETAILED_ROWS
from .kv_cache import KV_DTYPE_BYTES
from .scenarios import FinetuneScenario, InferenceScenario, gradient_checkpointing
from .training import OPTIMIZERS, TECHNIQUE_LABELS

Scenario = InferenceScenario | FinetuneScenario
RowFunction = Callable[[Scenario], Breakdown]
ADAM = ("adamw",)  # optimizers whose 8-bit bitsandbytes version keeps the same two states
SEQ_STEP = 128  # a suggested sequence length is rounded down to this many tokens
# the fields `finetune_changes` set
CHANGED = ("grad_accum", "gradient_checkpointing", "batch_size", "optimizer", "technique")


@dataclass(frozen=True)
class Suggestion:
    change: str  # in words, e.g. "Micro-batch 1 with 4 gradient-accumulation steps (same effective batch)"
    scenario: Scenario  # the scenario with the change
    fit: GpuFit  # the changed scenario on the target GPU
    row: str = ""  # inference: the table row (weight format) it uses; fine-tuning: the scenario's technique

    @property
    def fits(self) -> bool:
        return self.fit.count is not None


def _suggest(change: str, s: Scenario, row: RowFunction, gpu: Gpu, before: int, label: str = "") -> Suggestion | None:
    """The suggestion, or None when the change is not valid for this scenario or saves nothing."""
    try:
        placed = fit(s, row, gpu)
    except ValueError:  # e.g. the quick method has no 8-bit optimizer
        return None
    if placed.count is None and placed.per_gpu_bytes >= before:
        return None
    return Suggestion(change, s, placed, label or getattr(s, "technique", ""))


def _longest(s: Scenario, row: RowFunction, gpu: Gpu) -> int:
    """The longest sequence that fits one `gpu` at the scenario's own GPU count, in SEQ_STEP tokens when longer."""
    longest = max_seq_len(s, row, gpu.memory_bytes)
    return longest - longest % SEQ_STEP if longest >= SEQ_STEP else longest


def finetune_changes(s: FinetuneScenario) -> list[tuple[str, str, FinetuneScenario]]:
    """(change, in short, changed scenario) of the single changes that can lower the memory of `s` (its own
    technique), mildest first, except the sequence length and ZeRO-3 (they depend on the GPU: `finetune_advice`)."""
    changes = []
    if not gradient_checkpointing(s.gradient_checkpointing, s.technique):
        changes.append(("Gradient checkpointing on (about a third slower, same result)", "gradient checkpointing",
                        replace(s, gradient_checkpointing=True)))
    if s.batch_size > 1 and not s.optimizer_in_backward:  # stepping in backward cannot accumulate gradients
        steps = s.batch_size * s.grad_accum  # the accumulated gradients live beside the next micro-batch
        changes.append((f"Micro-batch 1 with {steps} gradient-accumulation steps (same effective batch)",
                        f"micro-batch 1 x {steps} accumulation steps", replace(s, batch_size=1, grad_accum=steps)))
    if s.optimizer in ADAM:
        changes.append((f"{OPTIMIZERS['adamw-8bit'].label} optimizer", "AdamW 8-bit",
                        replace(s, optimizer="adamw-8bit")))
    smaller = {"full": "lora", "lora": "qlora-4bit", "qlora-8bit": "qlora-4bit"}.get(s.technique)
    if smaller:
        changes.append((f"{TECHNIQUE_LABELS[smaller]} instead of {TECHNIQUE_LABELS[s.technique]}",
                        TECHNIQUE_LABELS[smaller], replace(s, technique=smaller)))
    return changes


def finetune_advice(s: FinetuneScenario, gpu: Gpu) -> list[Suggestion]:
    """What would make fine-tuning `s` (its own technique) fit `gpu`, mildest change first; [] when it fits."""
    row = estimate_finetune
    now = fit(s, row, gpu)
    if now.count is not None:
        return []
    before = now.per_gpu_bytes
    tips = [_suggest(change, changed, row, gpu, before) for change, _, changed in finetune_changes(s)]
    same_shape = [tip for tip in tips if tip is not None]  # the same data and GPUs, a different recipe
    longest = _longest(s, row, gpu)
    if 0 < longest < s.seq_len:
        tips.insert(3 if len(tips) >= 3 else len(tips),
                    _suggest(f"Sequences of at most {longest:,} tokens", replace(s, seq_len=longest), row, gpu, before))
    if s.zero_stage < 3 and now.zero3_count:
        tips.append(_suggest(f"{now.zero3_count} GPUs with ZeRO-3 (FSDP FULL_SHARD)",
                             replace(s, zero_stage=3), row, gpu, before))
    tips = [tip for tip in tips if tip is not None]
    if not any(tip.fits for tip in same_shape):  # only shorter sequences or more GPUs fit, or nothing does
        tips.append(_combined(s, row, gpu, before))
    return [tip for tip in tips if tip is not None]


def _combined(s: FinetuneScenario, row: RowFunction, gpu: Gpu, before: int) -> Suggestion | None:
    """Every single change at once (with ZeRO-3 when it helps), then the longest sequence that fits that way."""
    changed, words = s, []
    for _, short, step in finetune_changes(s):
        words.append(short)
        changed = replace(changed, **{name: getattr(step, name) for name in CHANGED if getattr(step, name) !=
                                      getattr(s, name)})
    if changed.zero_stage < 3 and fit(changed, row, gpu).count is None:
        changed, words = replace(changed, zero_stage=3), [*words, "ZeRO-3"]
    if fit(changed, row, gpu).count is None:
        longest = _longest(changed, row, gpu)
        if not 0 < longest < changed.seq_len:
            return None
        changed, words = replace(changed, seq_len=longest), [*words, f"sequences of at most {longest:,} tokens"]
    return _suggest("All together: " + " + ".join(words), changed, row, gpu, before)


def inference_advice(s: InferenceScenario, rows: Sequence[tuple[str, RowFunction]], current: str,
                     gpu: Gpu) -> list[Suggestion]:
    """What would make serving row `current` of `rows` ((label, row function) as `inference_rows` gives them)
    fit `gpu`: another row's smaller weight format, an FP8 KV cache, a shorter context, fewer concurrent
    requests; [] when it fits."""
    by_label = dict(rows)
    row = by_label[current]
    now = fit(s, row, gpu)
    if now.count is not None:
        return []
    before = now.per_gpu_bytes
    tips = []
    for label, other in rows:
        if label != current:
            tips.append(_suggest(f"Weights in {_format_name(s, label)}", s, other, gpu, before, label))
    if KV_DTYPE_BYTES[s.kv_dtype] > KV_DTYPE_BYTES["fp8"] and s.resolved_method == "detailed":
        tips.append(_suggest("KV cache in FP8", replace(s, kv_dtype="fp8"), row, gpu, before, current))
    if s.concurrency > 1:
        tips.append(_suggest("One request at a time", replace(s, concurrency=1), row, gpu, before, current))
    longest = max(_longest(with_gpus(s, count), row, gpu) for count in valid_counts(s, gpu))  # at any GPU count
    if 0 < longest < s.seq_len:
        tips.append(_suggest(f"Context of at most {longest:,} tokens", replace(s, seq_len=longest), row, gpu, before,
                             current))
    return [tip for tip in tips if tip is not None]


def _format_name(s: InferenceScenario, label: str) -> str:
    """How a suggestion names a row's weights: its format ('AWQ 4-bit, group 128') in the detailed method,
    the row's bits ('4-bit') in the quick one."""
    formats = dict(DETAILED_ROWS)
    if s.resolved_method == "detailed" and label in formats:
        return WEIGHT_FORMATS[formats[label]].label
    return label


def best(tips: Sequence[Suggestion]) -> Suggestion | None:
    """The mildest suggestion that fits (the first in the list), or None."""
    return next((tip for tip in tips if tip.fits), None)
