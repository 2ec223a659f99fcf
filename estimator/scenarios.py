"""The inputs of an estimate: frozen dataclasses, validated on construction.

Everything a user can set is a field here, so the page, the URL codec, the CLI and the Compare page all
serialise the same objects and "same inputs -> same numbers" holds by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from .architecture import Architecture
from .formats import WEIGHT_FORMATS
from .kv_cache import KV_DTYPE_BYTES
from .training import OPTIMIZER_IMPLS, OPTIMIZERS, REGIMES, TECHNIQUES, parse_lora_targets
from .checks import require_bool, require_choice, require_int, require_number

BILLION = 10**9
MAX_PARAMS_B = 20_000  # 20 trillion parameters: larger than any model, small enough to catch typos
MAX_SEQ_LEN = 10_000_000  # 10M tokens (the longest advertised contexts)
MAX_BATCH = 65_536
MAX_CONCURRENCY = 65_536
MAX_GPUS = 4_096
MAX_OVERHEAD_GB = 1_000
METHODS = ("auto", "quick", "detailed")
DEFAULT_OVERHEAD_GB = 2.0  # reference document: "1-2 GB" of framework overhead; we take the upper end


@dataclass(frozen=True)
class ParamCount:
    """A model known only by its parameter counts (the quick method's input)."""

    total_params: int  # all parameters
    active_params: int  # parameters used per token (= total for a dense model)
    name: str = ""

    def __post_init__(self) -> None:
        require_int("total_params", self.total_params, 1, MAX_PARAMS_B * BILLION)
        require_int("active_params", self.active_params, 1, MAX_PARAMS_B * BILLION)
        if self.active_params > self.total_params:
            raise ValueError(f"active parameters ({self.active_params / BILLION:g} B) cannot exceed total "
                             f"parameters ({self.total_params / BILLION:g} B)")

    @classmethod
    def from_billions(cls, total_b: float, active_b: float | None = None, name: str = "") -> ParamCount:
        """Build from counts in billions, as the forms take them; active defaults to total (dense)."""
        require_number("total parameters (B)", total_b, 0, MAX_PARAMS_B, allow_low=False)
        if active_b is not None:
            require_number("active parameters (B)", active_b, 0, MAX_PARAMS_B, allow_low=False)
        total = round(total_b * BILLION)
        return cls(total, total if active_b is None else round(active_b * BILLION), name)

    @property
    def is_moe(self) -> bool:
        return self.active_params < self.total_params


Model = Union[Architecture, ParamCount]


def _check_common(s: InferenceScenario | FinetuneScenario) -> None:
    if not isinstance(s.model, (Architecture, ParamCount)):
        raise ValueError("model must be an Architecture or a ParamCount")
    require_int("batch_size", s.batch_size, 1, MAX_BATCH)
    require_int("seq_len", s.seq_len, 1, MAX_SEQ_LEN)
    require_number("overhead_gb", s.overhead_gb, 0, MAX_OVERHEAD_GB)
    require_bool("flash_attention", s.flash_attention)
    require_choice("activation_bits", s.activation_bits, (16, 32))
    require_choice("method", s.method, METHODS)
    if s.method == "detailed" and not isinstance(s.model, Architecture):
        raise ValueError("method 'detailed' needs the architecture: choose a catalog model or a config.json")


@dataclass(frozen=True)
class InferenceScenario:
    """Serving a model: C concurrent requests, each a batch of b sequences of s tokens."""

    model: Model
    weights: str = "bf16"  # weight format id (formats.WEIGHT_FORMATS); the table rows override it
    kv_dtype: str = "bf16"  # KV cache dtype (kv_cache.KV_DTYPE_BYTES)
    batch_size: int = 1  # b, sequences per request
    concurrency: int = 1  # C, requests served at the same time (each keeps its KV cache)
    seq_len: int = 2048  # s, tokens per sequence (prompt + generated)
    flash_attention: bool = True  # False: eager attention materialises the s x s scores
    tensor_parallel: int = 1  # GPUs the model is split over
    overhead_gb: float = DEFAULT_OVERHEAD_GB  # runtime overhead per GPU
    activation_bits: int = 16  # activation precision (quick method scales by it / 16)
    mla_latent_cache: bool = True  # MLA: cache the latent (vLLM, SGLang, llama.cpp, transformers 5) or full K/V
    prefill_chunk: int = 0  # tokens per prefill forward (vLLM max_num_batched_tokens); 0 = the whole sequence
    method: str = "auto"  # "auto" = detailed when the architecture is known

    def __post_init__(self) -> None:
        _check_common(self)
        require_int("prefill_chunk", self.prefill_chunk, 0, MAX_SEQ_LEN)
        require_choice("weights", self.weights, WEIGHT_FORMATS)
        require_choice("kv_dtype", self.kv_dtype, KV_DTYPE_BYTES)
        require_int("concurrency", self.concurrency, 1, MAX_CONCURRENCY)
        require_int("tensor_parallel", self.tensor_parallel, 1, 512)
        require_bool("mla_latent_cache", self.mla_latent_cache)

    @property
    def resolved_method(self) -> str:
        return resolve_method(self)


@dataclass(frozen=True)
class FinetuneScenario:
    """Fine-tuning a model: one training step on a micro-batch of b sequences of s tokens."""

    model: Model
    technique: str = "full"  # full, lora, qlora-8bit, qlora-4bit; the table rows override it
    optimizer: str = "adamw"  # training.OPTIMIZERS
    param_bits: int = 16  # precision of the weights being trained (quick method; 16 = bf16)
    regime: str = "pure-16bit"  # detailed: pure-16bit (12 B/param with Adam), mixed (16 B/param), fp32
    optimizer_state_bits: int = 32  # fp32 states (reference document, DeepSpeed) or 16 (torch AdamW on bf16)
    optimizer_impl: str = "fused"  # torch step: fused (no temporaries), foreach (CUDA default), single-tensor
    batch_size: int = 1
    seq_len: int = 2048
    lora_rank: int = 16  # r of each adapter (detailed)
    lora_targets: str = "q,v"  # q,v | attention | all-linear | comma-separated projection names
    adapter_bits: int = 32  # LoRA weights in fp32 (peft's autocast_adapter_dtype default) or 16-bit
    gradient_checkpointing: bool = False
    flash_attention: bool = True
    num_gpus: int = 1  # data-parallel GPUs (ZeRO shards states over them)
    zero_stage: int = 0  # ZeRO stage 0-3 (FSDP: NO_SHARD = 0, SHARD_GRAD_OP = 2, FULL_SHARD = 3)
    offload_optimizer: bool = False  # optimizer states (and sharded gradients) kept in CPU memory
    overhead_gb: float = DEFAULT_OVERHEAD_GB
    activation_bits: int = 16
    method: str = "auto"

    def __post_init__(self) -> None:
        _check_common(self)
        require_choice("technique", self.technique, TECHNIQUES)
        require_choice("optimizer", self.optimizer, OPTIMIZERS)
        require_choice("param_bits", self.param_bits, (32, 16, 8, 4))
        require_choice("regime", self.regime, REGIMES)
        require_choice("optimizer_state_bits", self.optimizer_state_bits, (32, 16))
        require_choice("optimizer_impl", self.optimizer_impl, OPTIMIZER_IMPLS)
        require_choice("adapter_bits", self.adapter_bits, (32, 16))
        require_int("lora_rank", self.lora_rank, 1, 65_536)
        parse_lora_targets(self.lora_targets)
        require_bool("gradient_checkpointing", self.gradient_checkpointing)
        require_int("num_gpus", self.num_gpus, 1, MAX_GPUS)
        require_int("zero_stage", self.zero_stage, 0, 3)
        require_bool("offload_optimizer", self.offload_optimizer)
        if isinstance(self.model, Architecture):  # whatever the technique: the table always has LoRA rows
            largest = max(self.model.hidden_size, self.model.q_width)
            if self.lora_rank > largest:
                raise ValueError(f"lora_rank must be between 1 and {largest:,} (the model's layer width), "
                                 f"got {self.lora_rank:,}")

    @property
    def resolved_method(self) -> str:
        return resolve_method(self)


def resolve_method(s: InferenceScenario | FinetuneScenario) -> str:
    """'auto' means detailed when the architecture is known, quick for a bare parameter count."""
    if s.method != "auto":
        return s.method
    return "detailed" if isinstance(s.model, Architecture) else "quick"

