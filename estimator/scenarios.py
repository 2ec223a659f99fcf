"""The inputs of an estimate: frozen dataclasses, validated on construction.

Everything a user can set is a field here, declared once with its `Input` (label, help, bounds or choices, link
key, CLI flag; see `inputs.py`): the scenarios check themselves with it, and the CLI, the share links and the
widgets are derived from it, so "same inputs -> same numbers" holds by construction. The model itself comes from
a parameter count (`PARAMS`, `ACTIVE_PARAMS`), a catalog id (`CATALOG_MODEL`) or a config.json.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Union

from . import catalog
from .architecture import Architecture
from .checks import require_int
from .formats import CHECKPOINT, WEIGHT_FORMATS
from .inputs import INPUT, Input, check_inputs, declare
from .kv_cache import KV_DTYPE_BYTES
from .training import LORA_ROLES, OPTIMIZER_IMPLS, OPTIMIZERS, REGIMES, TECHNIQUES, parse_lora_targets

BILLION = 10**9
MAX_PARAMS_B = 20_000  # 20 trillion parameters: larger than any model, small enough to catch typos
MIN_PARAMS_B = 0.001  # a million parameters: smaller than any model worth a GPU estimate
MAX_SEQ_LEN = 10_000_000  # 10M tokens (the longest advertised contexts)
MAX_BATCH = 65_536
MAX_CONCURRENCY = 65_536
MAX_TENSOR_PARALLEL = 512
MAX_GPUS = 4_096
MAX_LORA_RANK = 65_536  # the model's layer width bounds it further (FinetuneScenario)
MAX_OVERHEAD_GB = 1_000
MAX_DATASET_TOKENS = 10**15  # a quadrillion tokens: above any training set (Llama 3: 15.6T, arXiv:2407.21783)
METHODS = ("auto", "quick", "detailed")
DEFAULT_OVERHEAD_GB = 2.0  # reference document: "1-2 GB" of framework overhead; we take the upper end
DEFAULT_MODEL = "meta-llama/Llama-3.1-8B"  # the catalog model offered first
LORA_SHORT_NAMES = tuple(name.split("_")[0] for name in LORA_ROLES)  # q, k, v, o, gate, up, down, experts, router


def canonical_lora_targets(text: str) -> str:
    """Any accepted spelling of the LoRA targets ('all-linear', 'q_proj,v_proj', 'Q, V') as its short list,
    e.g. 'q,v' or 'q,k,v,o,gate,up,down,experts,router'; ValueError naming the valid names otherwise."""
    names = parse_lora_targets(text)
    return ",".join(short for short, name in zip(LORA_SHORT_NAMES, LORA_ROLES) if name in names)


# The model, when it is given as a parameter count or a catalog id (a config.json is a file or pasted text)
PARAMS = Input("Total parameters (B)", 7.0, link="params", flag="--params", unit="B",
               low=MIN_PARAMS_B, high=MAX_PARAMS_B, help="All parameters, in billions (7 for a 7B model).")
ACTIVE_PARAMS = Input("Active parameters (B)", None, link="active", flag="--active-params", unit="B",
                      low=MIN_PARAMS_B, high=MAX_PARAMS_B, optional=True,
                      help="Parameters used per token, in billions (13 for Mixtral 8x7B). Empty = total.")
CATALOG_MODEL = Input("Catalog model", DEFAULT_MODEL, link="model", flag="--model",
                      text=lambda text: catalog.model(text).id,
                      help="A catalog model id (case-insensitive); values are read from its published config.json.")
TARGET_GPU = Input("Target GPU", "rtx-4090", link="gpu", flag="--gpu", text=lambda text: catalog.gpu(text).id,
                   help="The catalog GPU the fit is computed for; memory is what frameworks can allocate.")

# Inputs both kinds of scenario have
SEQ_LEN = Input("Sequence length", 2048, link="seq", flag="--seq-len", unit="tokens", low=1, high=MAX_SEQ_LEN,
                help="Tokens per sequence: prompt plus generated tokens.")
BATCH_SIZE = Input("Batch size", 1, link="batch", flag="--batch", low=1, high=MAX_BATCH,
                   help="Sequences per request (e.g. n > 1 samples).")
FLASH_ATTENTION = Input("FlashAttention", True, link="fa", flag="--flash-attention",
                        help="Off: eager attention materialises the s x s score matrix.")
OVERHEAD_GB = Input("Overhead per GPU (GB)", DEFAULT_OVERHEAD_GB, link="oh", flag="--overhead-gb", unit="GB",
                    low=0, high=MAX_OVERHEAD_GB,
                    help="CUDA context, allocator caching, workspaces: the reference document says 1-2 GB.")
ACTIVATION_BITS = Input("Activation precision (bits)", 16, link="act", flag="--activation-bits", choices=(16, 32),
                        help="Precision of activations (the quick method scales by bits / 16).")
METHOD = Input("Method", "auto", link="method", flag="--method", choices=METHODS,
               help="quick (the reference document's rule of thumb) or detailed (from the architecture); "
                    "auto: detailed when the architecture is known.")


AUTO = "auto"  # gradient checkpointing as the usual tool sets it: on for QLoRA, off otherwise


@dataclass(frozen=True)
class _AutoFlag(Input):
    """A flag that may also be 'auto' (True, False or AUTO); links spell them 1, 0 and auto."""

    def parse(self, text: str) -> object:
        return AUTO if text == AUTO else super().parse(text)


# Its default is what a share link without `gc` means (off: every link made before 'auto' existed omitted it as
# the default); the scenario's own default, for the API, the CLI and a fresh page, is AUTO (`FinetuneScenario`).
GRADIENT_CHECKPOINTING = _AutoFlag(
    "Gradient checkpointing", False, link="gc", flag="--grad-checkpointing", choices=(AUTO, True, False),
    help="Keep only each layer's input and recompute the rest during backward. Default (auto): on for QLoRA, "
         "as peft's prepare_model_for_kbit_training turns it on, off for full fine-tuning and LoRA.")


def gradient_checkpointing(value: bool | str, technique: str) -> bool:
    """Whether a row of `technique` checkpoints: AUTO is on for QLoRA (peft's prepare_model_for_kbit_training
    calls gradient_checkpointing_enable unless told not to), off for full fine-tuning and LoRA."""
    return technique.startswith("qlora") if value == AUTO else bool(value)


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
        PARAMS.check("total parameters (B)", total_b)
        if active_b is not None:
            ACTIVE_PARAMS.check("active parameters (B)", active_b)
        total = round(total_b * BILLION)
        return cls(total, total if active_b is None else round(active_b * BILLION), name)

    @property
    def is_moe(self) -> bool:
        return self.active_params < self.total_params


Model = Union[Architecture, ParamCount]


def _check_model(s: InferenceScenario | FinetuneScenario) -> None:
    if not isinstance(s.model, (Architecture, ParamCount)):
        raise ValueError("model must be an Architecture or a ParamCount")
    check_inputs(s)
    if s.method == "detailed" and not isinstance(s.model, Architecture):
        raise ValueError("method 'detailed' needs the architecture: choose a catalog model or a config.json")


@dataclass(frozen=True)
class InferenceScenario:
    """Serving a model: C concurrent requests, each a batch of b sequences of s tokens."""

    model: Model
    weights: str = declare(Input(  # the table rows override it
        "Extra weight format", "bf16", link="w", flag="--weights", choices=(*WEIGHT_FORMATS, CHECKPOINT),
        optional=True,
        help="A storage format (GGUF, GPTQ, AWQ, bitsandbytes, FP8...) to estimate besides the 16/8/4-bit rows "
             "(the CLI then prints that row only); 'checkpoint': as the config's quantization_config stores them, "
             "the first row of the table when there is one."))
    kv_dtype: str = declare(Input("KV-cache dtype", "bf16", link="kv", flag="--kv-dtype", choices=tuple(KV_DTYPE_BYTES),
                                  help="Precision of the cached keys and values."))
    batch_size: int = declare(BATCH_SIZE)  # b, sequences per request
    concurrency: int = declare(Input(  # C, requests served at the same time (each keeps its KV cache)
        "Inference concurrency", 1, link="conc", flag="--concurrency", low=1, high=MAX_CONCURRENCY,
        help="Requests served at the same time; each keeps its own KV cache."))
    seq_len: int = declare(SEQ_LEN)  # s, tokens per sequence (prompt + generated)
    flash_attention: bool = declare(FLASH_ATTENTION)  # False: eager attention materialises the s x s scores
    tensor_parallel: int = declare(Input("Tensor parallel GPUs", 1, link="tp", flag="--tp", low=1,
                                         high=MAX_TENSOR_PARALLEL,
                                         help="GPUs the model is split over; sizes are per GPU."))
    overhead_gb: float = declare(OVERHEAD_GB)  # runtime overhead per GPU
    activation_bits: int = declare(ACTIVATION_BITS)  # activation precision (quick method scales by it / 16)
    mla_latent_cache: bool = declare(Input(  # MLA: cache the latent or full K/V
        "Cache the MLA latent", True, link="mla", flag="--mla-latent-cache",
        help="DeepSeek MLA models: vLLM, SGLang, llama.cpp and transformers 5 cache the compressed latent; engines "
             "without MLA support cache full K and V."))
    prefill_chunk: int = declare(Input(  # tokens per prefill forward; 0 = the whole sequence
        "Prefill chunk (tokens)", 0, link="chunk", flag="--prefill-chunk", unit="tokens", low=0, high=MAX_SEQ_LEN,
        help="Tokens per prefill forward (vLLM's max_num_batched_tokens, e.g. 8192); 0 = the whole sequence in "
             "one forward, as HF generate() does."))
    method: str = declare(METHOD)  # "auto" = detailed when the architecture is known

    def __post_init__(self) -> None:
        _check_model(self)

    @property
    def resolved_method(self) -> str:
        return resolve_method(self)


@dataclass(frozen=True)
class FinetuneScenario:
    """Fine-tuning a model: one training step on a micro-batch of b sequences of s tokens."""

    model: Model
    technique: str = declare(Input("Technique", "full", link="row", flag="--technique", choices=TECHNIQUES,
                                   help="full, lora, qlora-8bit or qlora-4bit: one row instead of the table."))
    optimizer: str = declare(Input("Optimizer", "adamw", link="opt", flag="--optimizer", choices=tuple(OPTIMIZERS),
                                   help="States per parameter: SGD 0, momentum and RMSProp 1, Adam/AdamW 2."))
    param_bits: int = declare(Input(  # precision of the trained weights (quick method; 16 = bf16)
        "Parameter precision (bits)", 16, link="bits", flag="--param-bits", choices=(32, 16, 8, 4),
        help="Precision of the trained weights (quick method; the detailed method uses the training regime)."))
    regime: str = declare(Input(  # detailed: pure-16bit (12 B/param with Adam), mixed (16 B/param), fp32
        "Training regime", "pure-16bit", link="regime", flag="--regime", choices=tuple(REGIMES),
        help="Detailed method: bytes of weights, gradients and master weights per parameter."))
    optimizer_state_bits: int = declare(Input(  # fp32 states (reference document, DeepSpeed) or 16 (torch AdamW)
        "Optimizer state precision (bits)", 32, link="osb", flag="--optimizer-state-bits", choices=(32, 16),
        help="fp32 states (the reference document, DeepSpeed) or 16-bit (torch AdamW on bf16 weights)."))
    optimizer_impl: str = declare(Input(
        "Optimizer step", "fused", link="impl", flag="--optimizer-impl", choices=OPTIMIZER_IMPLS,
        help="torch's optimizer step: fused adds nothing, foreach (the CUDA default) a copy of every trained "
             "parameter, single-tensor two copies of the largest tensor."))
    batch_size: int = declare(BATCH_SIZE, help="Sequences per micro-batch on each GPU.")
    seq_len: int = declare(SEQ_LEN, help="Tokens per training sequence.")
    lora_rank: int = declare(Input("LoRA rank", 16, link="rank", flag="--lora-rank", low=1, high=MAX_LORA_RANK,
                                   help="r of each LoRA adapter (detailed method)."))
    lora_targets: str = declare(Input(
        "LoRA targets", "q,v", link="targets", flag="--lora-targets", text=canonical_lora_targets,
        help="q,v | attention | all-linear | comma-separated projections (q, k, v, o, gate, up, down, experts, "
             "router)."))
    adapter_bits: int = declare(Input(
        "LoRA adapter precision (bits)", 32, link="abits", flag="--adapter-bits", choices=(32, 16),
        help="LoRA weights in fp32 (peft's default; they also save an fp32 copy of each adapted layer's input) "
             "or 16-bit."))
    gradient_checkpointing: bool | str = dataclasses.field(default=AUTO, metadata={INPUT: GRADIENT_CHECKPOINTING})
    flash_attention: bool = declare(FLASH_ATTENTION, help="Off: eager attention saves the s x s attention "
                                                          "probabilities.")
    num_gpus: int = declare(Input("Number of GPUs", 1, link="gpus", flag="--gpus", low=1, high=MAX_GPUS,
                                  help="Data-parallel GPUs; ZeRO / FSDP shard the states over them."))
    zero_stage: int = declare(Input("ZeRO stage", 0, link="zero", flag="--zero", choices=(0, 1, 2, 3),
                                    help="What each GPU keeps a shard of (ZeRO paper, Figure 1); FSDP: NO_SHARD = "
                                         "0, SHARD_GRAD_OP = 2, FULL_SHARD = 3."))
    offload_optimizer: bool = declare(Input(
        "Optimizer offload", False, link="offload", flag="--offload-optimizer",
        help="ZeRO-Offload: optimizer states (and sharded gradients) in CPU memory."))
    overhead_gb: float = declare(OVERHEAD_GB, help="CUDA context, allocator caching, workspaces.")
    activation_bits: int = declare(ACTIVATION_BITS)
    dataset_tokens: int = declare(Input(  # speed only: the time of one epoch (memory does not depend on it)
        "Dataset tokens", 0, link="dtok", flag="--dataset-tokens", unit="tokens", low=0, high=MAX_DATASET_TOKENS,
        help="Tokens in the training set, for the time per epoch (speed); 0 = not given."))
    method: str = declare(METHOD)

    def __post_init__(self) -> None:
        _check_model(self)
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

