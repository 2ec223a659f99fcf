"""ZeRO / FSDP sharding of training states across data-parallel GPUs, and optimizer CPU offload.

ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054, Figure 1): stage 1 partitions optimizer states (and the fp32
master weights), stage 2 also gradients, stage 3 also the 16-bit weights. FSDP: NO_SHARD = DDP,
SHARD_GRAD_OP ~ stage 2, FULL_SHARD ~ stage 3. Stage 3 gathers each layer's full weights before use;
DeepSpeed's estimator budgets 4 x largest layer's parameters in bytes for this (current + prefetched layer at 2 B each,
`deepspeed/runtime/zero/stage3.py::estimate_zero3_model_states_mem_needs`).
Offload (ZeRO-Offload): optimizer states and master weights live in CPU memory, and so do the gradient
partitions from stage 2 on; the CPU runs the optimizer step. Parameter offload (ZeRO-3 `offload_param`, FSDP
`CPUOffload(offload_params=True)`) also keeps the 16-bit weight shards and the gradients in CPU memory: the GPU
holds only the layers gathered around the one being computed (on one GPU too: FSDP with a world of one).
"""

from __future__ import annotations

SHARDED_FROM_STAGE = {"optimizer_states": 1, "master_weights": 1, "gradients": 2, "weights": 3}


def shard_training_states(states: dict[str, int], s, gather_bytes: int = 0) -> tuple[dict[str, int], int, list[str]]:
    """Per-GPU bytes of each training state for scenario `s` (num_gpus, zero_stage, offload_optimizer).

    Returns (per-GPU states, CPU bytes per GPU, notes in words). `gather_bytes` is ZeRO-3's buffer for the
    weights gathered around the layer being computed."""
    params_offloaded = getattr(s, "offload_params", False)  # fine-tuning only; it implies ZeRO-3
    world, stage = s.num_gpus, s.zero_stage if s.num_gpus > 1 or params_offloaded else 0
    per_gpu, host, notes = {}, 0, []
    for name, size in states.items():
        share = -(-size // world) if stage >= SHARDED_FROM_STAGE[name] else size
        offloaded = ((s.offload_optimizer or params_offloaded)
                     and (name in ("optimizer_states", "master_weights") or (name == "gradients" and stage >= 2))
                     or (params_offloaded and name == "weights"))
        if offloaded:
            host += share
            share = 0
        per_gpu[name] = share
    if stage == 3:  # gathered layers come on top of the shard, but never more than the whole model
        per_gpu["weights"] = min(states["weights"], per_gpu["weights"] + gather_bytes)
    if world > 1:
        sharded = [name.replace("_", " ") for name, first in SHARDED_FROM_STAGE.items()
                   if stage >= first and name in states]
        notes.append(f"ZeRO stage {stage} over {world} GPUs: " +
                     (f"{', '.join(sharded)} divided by {world}" if sharded else "every GPU holds a full copy"))
        if stage == 3 and gather_bytes:
            notes.append(f"ZeRO-3 gather buffer for the largest layer: {gather_bytes:,} B")
    if params_offloaded:
        notes.append("Parameter offload (ZeRO-3 offload_param / FSDP CPUOffload): weights, gradients and optimizer "
                     "states in CPU memory, which runs the optimizer step; the GPU holds the gathered layers")
    elif s.offload_optimizer:
        notes.append("Optimizer states (and sharded gradients from stage 2) are offloaded to CPU memory")
    return per_gpu, host, notes
