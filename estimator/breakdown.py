"""`Breakdown`: the result of an estimate, named memory components in bytes that sum to the total."""

from __future__ import annotations

from dataclasses import dataclass

# Display order and meaning of every component any estimate may report (pages use one colour per name).
COMPONENTS = {
    "weights": "Model weights, in the chosen precision or format",
    "vision": "Vision (and audio) tower of a multimodal model: encoder and projector, 16-bit",
    "reference_model": "Frozen reference model (DPO, KTO, GRPO with beta > 0): a second 16-bit copy of the weights; "
                       "none with LoRA / QLoRA, whose reference is the base with the adapter disabled",
    "generation_engine": "Colocated vLLM engine of GRPO: its gpu_memory_utilization share of the GPU",
    "master_weights": "fp32 master copy of the trainable weights (mixed precision)",
    "kv_cache": "Key/value cache of every running sequence",
    "state": "Recurrent state of linear-attention layers: a fixed size per running sequence, whatever its length",
    "activations": "Activations: the transient peak of a layer (inference) or tensors saved for backward",
    "logits": "Logits: fp32 buffers of the loss head (training) or of sampling (inference)",
    "rollout_cache": "KV cache of the completions GRPO generates in the trainer (transformers generate)",
    "reference_logits": "Reference model's forward under no_grad: its 16-bit logits and one row's log-softmax",
    "gradients": "Gradients of the trainable parameters",
    "optimizer_states": "Optimizer states (e.g. Adam's two moments)",
    "optimizer_step": "Temporaries of the optimizer step (foreach / single-tensor implementations)",
    "overhead": "Runtime overhead: CUDA context, allocator caching and fragmentation, kernel workspaces",
}


@dataclass(frozen=True)
class Breakdown:
    """Memory of one scenario row on one GPU. `components` is ordered and sums to `total`."""

    row: str  # the table row: "16-bit", "8-bit", "4-bit", "full", "lora", "qlora-8bit", "qlora-4bit", or a format
    method: str  # "quick" or "detailed"
    components: tuple[tuple[str, int], ...]  # (name, bytes on one GPU)
    gpus: int = 1  # GPUs the scenario runs on (tensor-parallel or data-parallel world size)
    peak_phase: str = ""  # training: the phase the components are taken at
    phases: tuple[tuple[str, int], ...] = ()  # training: total bytes per GPU at each phase
    host_bytes: int = 0  # CPU memory per GPU for offloaded optimizer states and gradients
    assumptions: tuple[str, ...] = ()  # the assumptions used, in plain words

    @property
    def total(self) -> int:
        """Bytes needed on each GPU."""
        return sum(size for _, size in self.components)

    @property
    def total_all_gpus(self) -> int:
        return self.total * self.gpus

    def component(self, name: str) -> int:
        """Bytes of one component (0 when the scenario has none of it)."""
        return dict(self.components).get(name, 0)

    def to_dict(self) -> dict:
        """The CLI's JSON row: {"scenario": the row, "total_bytes", "components", ...} (keys kept stable)."""
        row = {"scenario": self.row, "total_bytes": self.total, "components": dict(self.components),
               "gpus": self.gpus}
        if self.peak_phase:
            row["peak_phase"] = self.peak_phase
            row["phases"] = dict(self.phases)
        if self.host_bytes:
            row["host_bytes"] = self.host_bytes
        return row


def make_breakdown(row: str, method: str, components: dict[str, int], **extra) -> Breakdown:
    """Build a Breakdown with components in the canonical order, dropping the ones that do not apply."""
    ordered = tuple((name, int(components[name])) for name in COMPONENTS if name in components)
    unknown = set(components) - set(COMPONENTS)
    if unknown:
        raise ValueError(f"unknown component(s): {', '.join(sorted(unknown))}")
    return Breakdown(row=row, method=method, components=ordered, **extra)
